"""The small pages the tab shows instead of a report: a run still being written, an error, no runs."""

from __future__ import annotations

from tftrace.render.html_charts import esc
from tftrace.render.html_page import page
from tftrace.render.html_style import CSS

REFRESH_S = 2  # how often a page about a run being written reloads itself (a meta refresh: no script)


def _frame(title: str, body: str, head: str = "") -> str:
    markup = page(title, CSS, f'<header class="top"><div class="wrap"><span class="brand">tftrace</span>'
                              f'</div></header>\n<main class="wrap">{body}</main>')
    return markup.replace("<head>\n", "<head>\n" + head, 1) if head else markup


def writing_page(name: str, why: str) -> str:
    """A run whose capture is still in progress: say so, and look again shortly."""
    return _frame(f"tftrace: {name} is being written",
                  f'<div class="card writing"><h2>Run <span class="name">{esc(name)}</span> is still being '
                  f'written</h2><p>A capture seems to be in progress: {esc(why)}. This page reloads every '
                  f'{REFRESH_S} s and shows the report once the trace is complete.</p></div>',
                  head=f'<meta http-equiv="refresh" content="{REFRESH_S}">\n')


def message_page(title: str, text: str) -> str:
    """A plain message: a bad request, an unknown run, a diff that cannot be made."""
    return _frame(f"tftrace: {title}",
                  f'<div class="error"><strong>{esc(title)}.</strong> {esc(text)}</div>')
