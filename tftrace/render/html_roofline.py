"""The roofline in HTML: an inline SVG on log-log axes (arithmetic intensity, FLOP/s) with the
device's compute and memory roofs and a mark per op, owner and layer, and its table."""

from __future__ import annotations

import math

from tftrace.render.fmt import ms, pct, si
from tftrace.render.html_charts import esc

_W, _H = 1080, 420
_PAD = {"left": 84, "right": 24, "top": 16, "bottom": 48}
BOUND_COLORS = {"compute": "#4e79a7", "memory": "#f28e2b", "launch": "#b07aa1", "": "#a5a5a5"}
_MARKS = {"op": "circle", "owner": "square", "layer": "diamond", "module": "triangle"}


def work_facts(run) -> list[tuple]:
    """The header's facts of the work: FLOPs a step, the achieved rate, MFU where a peak is known."""
    roof = run.roofline
    if run.flops_per_step is None:
        return []
    out = [("work", si(run.flops_per_step, "FLOP"), f"a step, from {roof.counted_by}")]
    if roof.flops_per_s is not None:
        out.append(("achieved", si(roof.flops_per_s, "FLOP/s")))
    if run.mfu is not None and roof.peak_flops_per_s:
        sub = f"of the {roof.device} peak, {si(roof.peak_flops_per_s, 'FLOP/s')}"
        if roof.precision_mfu is not None and roof.precision_peak_flops_per_s != roof.peak_flops_per_s:
            sub += f"; {pct(roof.precision_mfu)} at {roof.precision}"
        out.append(("MFU", pct(run.mfu), sub))
    return out


def roofline_card(run, table) -> str:
    """The roofline chart (where peaks and intensities are known) and its rows as a table;
    `table(kind, title, header, rows)` draws the table as the report's other tables are drawn."""
    roof = run.roofline
    if not roof.rows:
        return ""
    chart = roofline_chart(roof)
    head = (f"{esc(roof.rule)}. Peaks: {esc(roof.source)}." if roof.peak_flops_per_s
            else f"{esc(roof.source)}.")
    keys = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(b or "unknown")}</span>'
                   for b, c in BOUND_COLORS.items() if any(r.bound == b for r in roof.rows))
    shapes = " · ".join(f"{mark}: {scope}" for scope, mark in _MARKS.items() if any(r.scope == scope for r in roof.rows))
    card = (f'<div class="card"><h3>Roofline ({esc(roof.device)}; work counted from {esc(roof.counted_by)})</h3>'
            f'<p class="muted">{head}</p><div class="legend small">{keys}<span class="key">{esc(shapes)}</span></div>'
            + (f'<div class="chart-box">{chart}</div>' if chart else "")
            + (f'<p class="muted">{esc(roof.note)}</p>' if roof.note else "") + "</div>")
    rows = [(esc(r.scope), f"<code>{esc(r.name)}</code>", esc(r.phase), ms(r.time_ps), si(r.flops, "FLOP"),
             si(r.bytes_accessed, "B") if r.bytes_accessed else "", _num(r.intensity),
             si(r.flops_per_s, "FLOP/s") if r.flops_per_s else "", si(r.bytes_per_s, "B/s") if r.bytes_per_s else "",
             esc(r.precision), pct(r.roofline) if r.roofline is not None else "", esc(r.bound))
            for r in roof.rows]
    return card + table("roofline", "Roofline rows: work, rates and what bounds each op, owner and layer",
                        ["scope", "name", "phase", "ms", "FLOPs", "bytes", "FLOP/byte", "FLOP/s", "bytes/s",
                         "precision", "of roofline", "bound"], rows)


def _num(x) -> str:
    return "" if x is None else f"{x:.3g}"


def roofline_chart(roof) -> str:
    """Log-log: FLOP/s against FLOPs per byte; the roofs (the precision's dashed) and a mark per
    row placed at its intensity and achieved rate, colored by what bounds it."""
    points = [r for r in roof.rows if r.intensity and r.flops_per_s]
    if not points or not roof.peak_flops_per_s or not roof.peak_bytes_per_s:
        return ""
    peak, bw = roof.peak_flops_per_s, roof.peak_bytes_per_s
    x_lo = _decade(min(min(r.intensity for r in points), peak / bw) / 4, floor=True)
    x_hi = _decade(max(max(r.intensity for r in points), peak / bw) * 4)
    y_lo = _decade(min(min(r.flops_per_s for r in points), x_lo * bw) / 2, floor=True)
    y_hi = _decade(peak * 2)
    left, top = _PAD["left"], _PAD["top"]
    pw, ph = _W - left - _PAD["right"], _H - top - _PAD["bottom"]

    def x(v):
        return left + (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * pw

    def y(v):
        return top + ph - (math.log10(max(v, y_lo)) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)) * ph

    out = [f'<svg class="chart roofline" data-chart="roofline" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" '
           f'role="img" aria-label="roofline">']
    for e in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1):
        out.append(f'<line class="grid" x1="{x(10 ** e):.1f}" x2="{x(10 ** e):.1f}" y1="{top}" y2="{top + ph}"/>'
                   f'<text class="tick" x="{x(10 ** e):.1f}" y="{top + ph + 16}" text-anchor="middle">1e{e}</text>')
    for e in range(round(math.log10(y_lo)), round(math.log10(y_hi)) + 1):
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y(10 ** e):.1f}" y2="{y(10 ** e):.1f}"/>'
                   f'<text class="tick" x="{left - 6}" y="{y(10 ** e) + 4:.1f}" text-anchor="end">'
                   f'{esc(si(10 ** e, "FLOP/s"))}</text>')
    out.append(f'<text class="axis-label" x="{left + pw / 2:.1f}" y="{_H - 8}" text-anchor="middle">'
               f'arithmetic intensity (FLOPs per byte)</text>')
    out.append(_roof(x, y, x_lo, x_hi, peak, bw, "roof", f"peak {si(peak, 'FLOP/s')}, {si(bw, 'B/s')}"))
    matched = roof.precision_peak_flops_per_s
    if matched and matched != peak:
        out.append(_roof(x, y, x_lo, x_hi, matched, bw, "roof precision", f"{roof.precision} peak "
                         f"{si(matched, 'FLOP/s')}"))
    for r in sorted(points, key=lambda r: -r.time_ps):
        color = BOUND_COLORS.get(r.bound, BOUND_COLORS[""])
        cx, cy = x(r.intensity), y(r.flops_per_s)
        title = (f"{r.scope} {r.name}{' (' + r.phase + ')' if r.phase else ''}: {si(r.flops_per_s, 'FLOP/s')} at "
                 f"{r.intensity:.3g} FLOP/byte, {pct(r.roofline) if r.roofline is not None else '?'} of its roofline, "
                 f"{r.bound or 'bound unknown'}; {ms(r.time_ps)} ms")
        out.append(f'<g class="mark {esc(r.scope)}"><title>{esc(title)}</title>{_mark(r.scope, cx, cy, color)}</g>')
    return "\n".join(out + ["</svg>"])


def _roof(x, y, x_lo, x_hi, peak, bw, cls, label) -> str:
    ridge = peak / bw
    knee = min(max(ridge, x_lo), x_hi)
    return (f'<polyline class="{cls}" fill="none" points="{x(x_lo):.1f},{y(min(x_lo * bw, peak)):.1f} '
            f'{x(knee):.1f},{y(min(knee * bw, peak)):.1f} {x(x_hi):.1f},{y(peak):.1f}"/>'
            f'<text class="roof-label" x="{x(x_hi) - 4:.1f}" y="{y(peak) - 6:.1f}" text-anchor="end">{esc(label)}</text>')


def _mark(scope: str, cx: float, cy: float, color: str) -> str:
    if scope == "owner":
        return f'<rect x="{cx - 5:.1f}" y="{cy - 5:.1f}" width="10" height="10" fill="{color}" fill-opacity="0.8"/>'
    if scope == "module":
        return (f'<polygon points="{cx:.1f},{cy - 7:.1f} {cx + 7:.1f},{cy + 6:.1f} {cx - 7:.1f},{cy + 6:.1f}" '
                f'fill="{color}" fill-opacity="0.8"/>')
    if scope == "layer":
        return (f'<polygon points="{cx:.1f},{cy - 7:.1f} {cx + 7:.1f},{cy:.1f} {cx:.1f},{cy + 7:.1f} '
                f'{cx - 7:.1f},{cy:.1f}" fill="{color}" fill-opacity="0.8"/>')
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{color}" fill-opacity="0.8"/>'


def _decade(v: float, floor: bool = False) -> float:
    e = math.log10(max(v, 1e-30))
    return 10 ** (math.floor(e) if floor else math.ceil(e))
