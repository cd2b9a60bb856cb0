"""Renderers: turn a Report into text, JSON, Markdown, CSV or HTML; they format, never compute."""

from __future__ import annotations

FORMATS = ("text", "json", "markdown", "csv", "html")
DIFF_FORMATS = ("text", "json", "markdown", "html")


def render(report, fmt: str, **options) -> str:
    """The report in one format, as a string."""
    if fmt == "json":
        from tftrace.render.json import render_json as fn
    elif fmt == "markdown":
        from tftrace.render.markdown import render_markdown as fn
    elif fmt == "csv":
        from tftrace.render.csv import render_csv as fn
    elif fmt == "html":
        from tftrace.render.html import render_html as fn
    else:
        from tftrace.render.text import render_text as fn
    return fn(report, **options)
