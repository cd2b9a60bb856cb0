"""Inline SVG charts for the HTML diff: step times side by side, the breakdown per step, and
diverging bars of what got slower or faster."""

from __future__ import annotations

from tftrace.render.fmt import PART_LABELS, ms
from tftrace.render.html_charts import PART_COLORS, _nice_ticks, _shorten, esc

SIDE_COLORS = {"baseline": "#8c9db5", "candidate": "#e8710a"}
SLOWER, FASTER = "#e15759", "#59a14f"
_W = 1080
_LABEL_W = 150
_CHAR_W = 6.9


def _x_axis(ticks, axis_ms: float, left: float, width: float, top: float, bottom: float) -> list[str]:
    out = []
    for t in ticks:
        x = left + t / axis_ms * width
        out.append(f'<line class="{"axis" if t == 0 else "grid"}" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" '
                   f'y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{t:g}</text>')
    return out


def distribution_chart(diff) -> str:
    """Every step of each side as a dot on one shared ms axis, with each side's median."""
    sides = (("baseline", diff.baseline_step_times, diff.step_time.baseline_ps),
             ("candidate", diff.candidate_step_times, diff.step_time.candidate_ps))
    top_ps = max([s.dur_ps for _n, times, _m in sides for s in times] + [m for *_x, m in sides] + [1])
    ticks = _nice_ticks(top_ps / 1e9)
    axis_ms = ticks[-1] or 1
    left, right, row_h, top = _LABEL_W, 24, 56, 12
    width = _W - left - right
    height = top + 2 * row_h + 40
    out = [f'<svg class="chart" data-chart="distribution" viewBox="0 0 {_W} {height}" width="{_W}" '
           f'height="{height}" role="img" aria-label="Step times of baseline and candidate">']
    out += _x_axis(ticks, axis_ms, left, width, top, top + 2 * row_h)
    for row, (side, times, median_ps) in enumerate(sides):
        mid = top + row * row_h + row_h / 2
        color = SIDE_COLORS[side]
        out.append(f'<g class="side" data-side="{side}"><text class="label" x="{left - 10}" y="{mid - 2:.1f}" '
                   f'text-anchor="end">{side}</text><text class="tick" x="{left - 10}" y="{mid + 13:.1f}" '
                   f'text-anchor="end">{len(times)} steps</text>')
        for i, s in enumerate(times):
            x = left + s.dur_ps / 1e9 / axis_ms * width
            y = mid + ((i % 3) - 1) * 7  # a little vertical spread so equal step times stay countable
            out.append(f'<rect class="dot" x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" rx="5" '
                       f'fill="{color}" fill-opacity=".75"><title>{side} step {int(s.number)}: '
                       f'{ms(s.dur_ps)} ms</title></rect>')
        if median_ps:
            x = left + median_ps / 1e9 / axis_ms * width
            out.append(f'<line class="median" x1="{x:.1f}" x2="{x:.1f}" y1="{mid - 20:.1f}" y2="{mid + 20:.1f}" '
                       f'stroke="{color}" stroke-width="3"><title>{side} median: {ms(median_ps)} ms</title></line>'
                       f'<text class="value" x="{x + 6:.1f}" y="{mid - 12:.1f}">median {ms(median_ps)} ms</text>')
        out.append("</g>")
    out.append(f'<text class="axis-label" x="{left + width / 2:.1f}" y="{height - 4}" text-anchor="middle">'
               "step time (ms)</text>")
    return "\n".join(out + ["</svg>"])


def breakdown_chart(diff) -> str:
    """Each side's step as one bar of its parts, in ms per step, on a shared scale."""
    left, right, bar_h, gap, top = _LABEL_W, 150, 26, 18, 8
    width = _W - left - right
    totals = {side: sum(getattr(d, side + "_ps") for d in diff.breakdown.values()) for side in SIDE_COLORS}
    scale = width / max(max(totals.values()), 1)
    height = top + 2 * (bar_h + gap)
    out = [f'<svg class="chart" data-chart="breakdown" viewBox="0 0 {_W} {height}" width="{_W}" height="{height}" '
           'role="img" aria-label="Step time breakdown per step, baseline and candidate">']
    for row, side in enumerate(SIDE_COLORS):
        y = top + row * (bar_h + gap)
        out.append(f'<text class="label" x="{left - 10}" y="{y + bar_h / 2 + 4:.1f}" text-anchor="end">{side}</text>')
        x = float(left)
        for part, d in diff.breakdown.items():
            w = getattr(d, side + "_ps") * scale
            if w <= 0:
                continue
            share = getattr(d, side)
            out.append(f'<rect class="seg seg-{part}" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{PART_COLORS[part]}"><title>{side}, {PART_LABELS[part]}: '
                       f'{ms(getattr(d, side + "_ps"))} ms per step ({share * 100:.1f}%)</title></rect>')
            x += w
        out.append(f'<text class="value" x="{x + 8:.1f}" y="{y + bar_h / 2 + 4:.1f}">{ms(totals[side])} ms per step'
                   "</text>")
    return "\n".join(out + ["</svg>"])


def delta_chart(kind: str, rows) -> str:
    """Diverging bars, one per row (ranked by the analysis): slower to the right in red, faster
    to the left in green, scaled to the largest change shown."""
    label_w, value_w, row_h, bar_h = 300, 96, 24, 14
    mid = label_w + (_W - label_w) / 2
    half = (_W - label_w) / 2 - value_w
    top_ps = max((abs(r.delta_ps) for r in rows), default=0) or 1
    height = len(rows) * row_h + 8
    max_chars = int((label_w - 12) / _CHAR_W)
    out = [f'<svg class="chart hbar delta" data-chart="{esc(kind)}" viewBox="0 0 {_W} {height}" width="{_W}" '
           f'height="{height}" role="img" aria-label="{esc(kind)}: change per step">',
           f'<line class="axis" x1="{mid:.1f}" x2="{mid:.1f}" y1="0" y2="{height}"/>']
    for i, r in enumerate(rows):
        y = 4 + i * row_h
        w = max(abs(r.delta_ps) / top_ps * half, 1)
        slower = r.delta_ps > 0
        x = mid if slower else mid - w
        text_x, anchor = (mid + w + 6, "start") if slower else (mid - w - 6, "end")
        sign = "+" if slower else "−" if r.delta_ps < 0 else "±"
        text_y = y + row_h / 2 + 4
        out.append(f'<g class="bar" data-status="{esc(r.status)}"><title>{esc(r.name)}: {ms(r.baseline_ps)} ms -> '
                   f'{ms(r.candidate_ps)} ms per step ({esc(r.status)})</title>'
                   f'<text class="label" x="{label_w - 12}" y="{text_y:.1f}" text-anchor="end">'
                   f'{esc(_shorten(r.name, max_chars))}</text>'
                   f'<rect x="{x:.1f}" y="{y + (row_h - bar_h) / 2:.1f}" width="{w:.1f}" height="{bar_h}" rx="2" '
                   f'fill="{SLOWER if slower else FASTER}"/>'
                   f'<text class="value" x="{text_x:.1f}" y="{text_y:.1f}" text-anchor="{anchor}">'
                   f'{sign}{ms(abs(r.delta_ps))} ms</text></g>')
    return "\n".join(out + ["</svg>"])
