"""Inline SVG icicle charts of the Python profile: one per thread kind, each box a function on
the stack, as wide as its share of that thread kind's time; your own code stands out."""

from __future__ import annotations

from tftrace.render.html_charts import esc
from tftrace.render.fmt import ms, pct

_W, _ROW = 1080, 20
_CHAR_W = 6.4
_USER, _LIBRARY, _PYTHON = "#e15759", "#a0cbe8", "#d7d7d7"


def flame_chart(nodes, thread: str) -> str:
    """The icicle of one thread kind (nodes precomputed by the analysis: depth, start, width)."""
    mine = [n for n in nodes if n.thread == thread]
    if not mine:
        return ""
    height = (max(n.depth for n in mine) + 1) * _ROW
    boxes = [_box(n) for n in mine]
    return (f'<svg class="chart flame" data-chart="python-{esc(thread.replace(" ", "-"))}" viewBox="0 0 {_W} '
            f'{height}" width="{_W}" height="{height}" role="img" aria-label="Python time on {esc(thread)} threads">'
            + "".join(boxes) + "</svg>")


def _box(n) -> str:
    x, w, y = n.start * _W, max(n.width * _W, 1.0), n.depth * _ROW
    color = _USER if n.owner == "user" else _PYTHON if n.owner == "python" else _LIBRARY
    label = n.function if len(n.function) * _CHAR_W < w - 6 else n.function[: max(int((w - 6) / _CHAR_W) - 1, 0)]
    label = (label + "…") if label and label != n.function else label
    where = f"{n.file}:{n.line}" if n.file else ""
    title = f"{n.function} ({where}, {n.owner}): {ms(n.ps)} ms, {pct(n.width)} of {n.thread} time"
    text = (f'<text x="{x + 3:.1f}" y="{y + 14}" font-size="11">{esc(label)}</text>' if label else "")
    return (f'<g class="frame"><title>{esc(title)}</title><rect x="{x:.1f}" y="{y}" width="{w:.1f}" '
            f'height="{_ROW - 2}" fill="{color}" rx="2"></rect>{text}</g>')
