"""The memory part of a diff in every format: peak bytes per allocator, before and after."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from tftrace.model.memory import size
from tftrace.render.fmt import pct
from tftrace.render.html_charts import esc

_HEADER = ("allocator", "baseline peak", "candidate peak", "delta", "candidate share of capacity", "status")


def memory_cells(deltas) -> tuple[list[str], list[tuple]]:
    """Header and rows, as plain text cells."""
    rows = [(d.allocator, size(d.baseline_bytes) if d.baseline_bytes else "", size(d.candidate_bytes) if
             d.candidate_bytes else "", _delta(d), pct(d.candidate_share) if d.candidate_share else "", d.status)
            for d in deltas]
    return list(_HEADER), rows


def memory_table(deltas) -> Table:
    table = Table(title="Memory (peak bytes in use per allocator)", title_justify="left", show_edge=False)
    header, rows = memory_cells(deltas)
    for col in header:
        table.add_column(col, justify="left" if col in ("allocator", "status") else "right")
    for row in rows:
        table.add_row(*(escape(str(c)) for c in row))
    return table


def memory_delta_html(deltas) -> str:
    if not deltas:
        return ""
    header, rows = memory_cells(deltas)
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return ('<div class="card"><h3>Memory (peak bytes in use per allocator)</h3><div class="table-box">'
            f'<table data-table="memory-delta"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></div>')


def _delta(d) -> str:
    sign = "+" if d.delta_bytes >= 0 else "-"
    text = f"{sign}{size(abs(d.delta_bytes))}"
    return text + (f" ({d.delta_pct:+.1f}%)" if d.delta_pct else "")
