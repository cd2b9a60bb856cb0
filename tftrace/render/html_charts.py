"""Inline SVG charts for the HTML report: stacked step-time bars and horizontal self-time bars."""

from __future__ import annotations

import html
import math

from tftrace.render.fmt import PART_LABELS, ms, pct

# One color per step-time part, used by the charts, legends and verdict alike (Tableau 10).
PART_COLORS = {"input": "#f28e2b", "compute": "#4e79a7", "host_overhead": "#b07aa1", "idle": "#c9c4c1"}

# Op categories get stable colors so an op bar and its category bar match; input keeps the
# input part's orange so the input pipeline reads the same everywhere.
CATEGORY_COLORS = {
    "matmul": "#4e79a7", "convolution": "#76b7b2", "reduction": "#edc948", "reshape": "#9c755f",
    "elementwise": "#59a14f", "activation": "#8cd17d", "normalization": "#499894", "pooling": "#a0cbe8",
    "dropout": "#e15759", "optimizer": "#ff9da7", "loss": "#d37295", "input": PART_COLORS["input"],
    "transfer": "#b6992d", "collective": "#79706e", "other": "#a5a5a5",
}
LAYER_COLOR = "#4e79a7"
_OTHER_COLOR = "#a5a5a5"

_STEP_W, _STEP_H = 1080, 300
_STEP_PAD = {"left": 64, "right": 16, "top": 14, "bottom": 48}
_ROW_H, _BAR_H = 26, 16
_CHAR_W = 6.9  # width of one monospace character at the label font size, for truncation


def esc(value) -> str:
    """Trace text is user-controlled: escape it for element content and quoted attributes."""
    return html.escape(str(value), quote=True)


def category_color(category: str) -> str:
    return CATEGORY_COLORS.get(category, _OTHER_COLOR)


def step_chart(steps) -> str:
    """One stacked bar per step: input, compute, host overhead and idle, in ms."""
    pad = _STEP_PAD
    plot_w = _STEP_W - pad["left"] - pad["right"]
    plot_h = _STEP_H - pad["top"] - pad["bottom"]
    top_ps = max(max(_step_total(s) for s in steps), 1)
    ticks = _nice_ticks(top_ps / 1e9)
    axis_ps = ticks[-1] * 1e9
    slot = plot_w / len(steps)
    bar_w = min(slot * 0.72, 64)
    label_every = max(1, math.ceil(len(steps) / 24))  # keep step numbers from overlapping
    base = pad["top"] + plot_h
    out = [f'<svg class="chart" data-chart="steps" viewBox="0 0 {_STEP_W} {_STEP_H}" width="{_STEP_W}" '
           f'height="{_STEP_H}" role="img" aria-label="Step time breakdown per step">']
    out += _y_axis(ticks, axis_ps, pad["left"], plot_w, pad["top"], plot_h)
    for i, s in enumerate(steps):
        x = pad["left"] + slot * i + (slot - bar_w) / 2
        out.append(f'<g class="step" data-step="{int(s.number)}"><title>step {int(s.number)}: '
                   f'{ms(s.dur_ps)} ms</title>')
        y = base
        for part in PART_LABELS:
            h = getattr(s, part + "_ps") / axis_ps * plot_h
            if h <= 0:
                continue
            y -= h
            out.append(f'<rect class="seg seg-{part}" x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" '
                       f'height="{h:.1f}" fill="{PART_COLORS[part]}"><title>step {int(s.number)}, '
                       f'{PART_LABELS[part]}: {ms(getattr(s, part + "_ps"))} ms</title></rect>')
        if label_every == 1:  # totals only while every bar has room for one
            out.append(f'<text class="total" x="{x + bar_w / 2:.1f}" y="{y - 5:.1f}" '
                       f'text-anchor="middle">{ms(s.dur_ps)}</text>')
        out.append("</g>")
        if i % label_every == 0:
            out.append(f'<text class="tick" x="{x + bar_w / 2:.1f}" y="{base + 16}" '
                       f'text-anchor="middle">{int(s.number)}</text>')
    out.append(f'<text class="axis-label" x="{pad["left"] + plot_w / 2:.1f}" y="{_STEP_H - 6}" '
               f'text-anchor="middle">step</text>')
    out.append(f'<text class="axis-label" transform="translate(16 {pad["top"] + plot_h / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">step time (ms)</text>')
    return "\n".join(out + ["</svg>"])


def _step_total(step) -> int:
    return sum(getattr(step, part + "_ps") for part in PART_LABELS)


def _y_axis(ticks, axis_ps, left, plot_w, top, plot_h) -> list[str]:
    out = []
    for t in ticks:
        y = top + plot_h - t * 1e9 / axis_ps * plot_h
        cls = "axis" if t == 0 else "grid"
        out.append(f'<line class="{cls}" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{_tick(t)}</text>')
    return out


def _nice_ticks(top_ms: float, target: int = 5) -> list[float]:
    """Round axis values from 0 to at least top_ms (axis layout, not analysis)."""
    raw = top_ms / target
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    count = max(1, math.ceil(top_ms / step - 1e-9))
    return [round(i * step, 10) for i in range(count + 1)]


def _tick(value: float) -> str:
    return f"{value:g}"


def hbar_chart(kind: str, rows, width: int, label_w: int, numbered: bool = False) -> str:
    """Horizontal bars, one per row (label, self_ps, share, color, full name), scaled to the
    longest bar shown; rows arrive ranked from the analysis. Numbers match the table's # column,
    which tells apart ops that share a name."""
    value_w = 128
    bar_x = label_w + 8
    bar_max = width - bar_x - value_w
    top_ps = max((r[1] for r in rows), default=0) or 1
    height = len(rows) * _ROW_H + 8
    number_w = 28 if numbered else 0
    max_chars = int((label_w - number_w - 8) / _CHAR_W)
    out = [f'<svg class="chart hbar" data-chart="{esc(kind)}" viewBox="0 0 {width} {height}" width="{width}" '
           f'height="{height}" role="img" aria-label="{esc(kind)} by self time">']
    for i, (label, self_ps, share, color, full) in enumerate(rows):
        y = 4 + i * _ROW_H
        w = max(self_ps / top_ps * bar_max, 1)
        mid = y + _ROW_H / 2 + 4
        number = f'<text class="tick" x="2" y="{mid:.1f}">{i + 1}</text>' if numbered else ""
        out.append(f'<g class="bar"><title>{esc(full)}: {ms(self_ps)} ms ({pct(share)})</title>{number}'
                   f'<text class="label" x="{label_w}" y="{mid:.1f}" text-anchor="end">'
                   f'{esc(_shorten(label, max_chars))}</text>'
                   f'<rect x="{bar_x}" y="{y + (_ROW_H - _BAR_H) / 2:.1f}" width="{w:.1f}" height="{_BAR_H}" '
                   f'rx="2" fill="{esc(color)}"/>'
                   f'<text class="value" x="{bar_x + w + 6:.1f}" y="{mid:.1f}">{ms(self_ps)} ms · '
                   f'{pct(share)}</text></g>')
    return "\n".join(out + ["</svg>"])


def _shorten(text: str, max_chars: int) -> str:
    """Keep the end of long names: the last scopes say which op or layer it is."""
    text = str(text)
    return text if len(text) <= max_chars else "…" + text[-(max_chars - 1):]
