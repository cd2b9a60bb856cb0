"""The Memory section of the HTML report: a memory-in-use timeline per allocator (inline SVG,
step boundaries, the peak marked), the allocator table, what holds the peak, and findings."""

from __future__ import annotations

from tftrace.model.memory import size
from tftrace.render.fmt import ms, pct
from tftrace.render.html_charts import esc

_W, _H = 1080, 220
_PAD = {"left": 72, "right": 16, "top": 14, "bottom": 34}
_LINE, _CAPACITY, _STEP, _PEAK = "#4e79a7", "#e15759", "#c9c4c1", "#e15759"


def memory_html(memory, steps, table, rich) -> str:
    """`steps`: the run's StepRows (their boundaries go on the charts); `table(kind, title,
    header, rows)`: the HTML renderer's table, cells already safe; `rich(text)`: escaped text
    with `code` spans."""
    if not memory.allocators:
        return ""
    shown = [a for a in memory.allocators if a.timeline]
    # One time axis for every allocator, so their curves line up.
    span = (min(a.timeline[0].at_ps for a in shown), max(a.timeline[-1].at_ps for a in shown)) if shown else (0, 1)
    charts = "".join(f'<h4>{esc(_name(a))}</h4><div class="chart-box">{timeline_svg(a, steps, span)}</div>'
                     for a in shown)
    out = [f'<div class="card" data-section="memory"><h3>Memory in use</h3><p class="muted">Bytes in use per '
           f'allocator over the window (each point the most of its stretch); grey lines: step starts; red dot: '
           f'the peak; dashed: the capacity the allocator states, where it fits the scale.</p>{charts}</div>',
           table("memory", "Memory per allocator (peak bytes in use over the window)",
                 ["allocator", "peak", "capacity", "share of capacity", "at step", "at ms", "op at the peak",
                  "fragmentation", "lifetime peak"],
                 [(esc(_name(a)), size(a.peak_bytes), size(a.capacity_bytes) if a.capacity_bytes else "",
                   pct(a.peak_share) if a.capacity_bytes else "", a.peak_step if a.peak_step >= 0 else "",
                   ms(a.peak_at_ps), _mono(a.peak_op), pct(a.fragmentation), size(a.lifetime_peak_bytes))
                  for a in memory.allocators])]
    top = memory.allocators[0]
    out.append(table("at-peak", f"What holds {_name(top)} at its peak ({size(top.peak_bytes)})",
                     ["holder", "kind", "layer", "shape", "dtype", "count", "bytes", "share"],
                     [(_mono(h.op), esc(h.kind), _mono(h.layer), esc(h.shape), esc(h.dtype), h.count or "",
                       size(h.bytes), pct(h.share)) for h in top.at_peak]))
    out.append(_findings(memory.findings, rich))
    return "\n".join(x for x in out if x)


def timeline_svg(a, steps, span) -> str:
    """Bytes in use over time as a step line, on the time axis `span` (first, last ps)."""
    pts = a.timeline
    t0, t1 = span[0], max(span[1], span[0] + 1)
    top = max(a.peak_bytes, 1)
    if a.capacity_bytes and a.capacity_bytes <= 1.25 * top:  # a far-off capacity would flatten the line
        top = a.capacity_bytes
    left, width = _PAD["left"], _W - _PAD["left"] - _PAD["right"]
    base, height = _H - _PAD["bottom"], _H - _PAD["top"] - _PAD["bottom"]
    x = lambda t: left + (t - t0) / (t1 - t0) * width  # noqa: E731
    y = lambda b: base - b / top * height  # noqa: E731
    # A step line: in-use changes at each event and holds until the next.
    path = f"M{x(pts[0].at_ps):.1f} {y(pts[0].bytes):.1f}" + "".join(
        f" H{x(p.at_ps):.1f} V{y(p.bytes):.1f}" for p in pts[1:])
    out = [f'<svg class="chart" data-chart="memory" data-allocator="{esc(a.name)}" viewBox="0 0 {_W} {_H}" '
           f'width="{_W}" height="{_H}" role="img" aria-label="Memory in use over time, {esc(a.name)}">']
    out += [f'<line class="step-start" x1="{x(s.start_ps):.1f}" x2="{x(s.start_ps):.1f}" y1="{_PAD["top"]}" '
            f'y2="{base}" stroke="{_STEP}" stroke-width="1"><title>step {int(s.number)}</title></line>'
            for s in steps if t0 <= s.start_ps <= t1]
    for frac in (0, 0.5, 1):
        out.append(f'<text x="{left - 6}" y="{y(top * frac) + 4:.1f}" text-anchor="end" font-size="11" '
                   f'fill="#6b7280">{size(int(top * frac))}</text>')
    out.append(f'<line x1="{left}" x2="{left + width}" y1="{base}" y2="{base}" stroke="#9ca3af"/>')
    if a.capacity_bytes and a.capacity_bytes == top:
        out.append(f'<line class="capacity" x1="{left}" x2="{left + width}" y1="{y(top):.1f}" y2="{y(top):.1f}" '
                   f'stroke="{_CAPACITY}" stroke-dasharray="5 4"><title>capacity {size(top)}</title></line>')
    out.append(f'<path d="{path}" fill="none" stroke="{_LINE}" stroke-width="1.6"/>')
    out.append(f'<circle class="peak" cx="{x(a.peak_at_ps):.1f}" cy="{y(a.peak_bytes):.1f}" r="4" fill="{_PEAK}">'
               f'<title>peak {size(a.peak_bytes)} at {ms(a.peak_at_ps)} ms'
               + (f', step {int(a.peak_step)}' if a.peak_step >= 0 else "") + f' ({esc(a.peak_op)})</title></circle>')
    out.append(f'<text x="{left}" y="{_H - 10}" font-size="11" fill="#6b7280">{ms(t0)} ms</text>'
               f'<text x="{left + width}" y="{_H - 10}" font-size="11" text-anchor="end" fill="#6b7280">'
               f'{ms(t1)} ms</text>')
    return "\n".join(out + ["</svg>"])


def _findings(findings, rich) -> str:
    if not findings:
        return ""
    items = "".join(f'<li class="bottleneck"><div class="body"><div class="title-row"><h4>{esc(f.title)}</h4></div>'
                    f'<p><span class="tag">evidence</span><span>{rich(f.evidence)}</span></p>'
                    f'<p><span class="tag fix">fix</span><span>{rich(f.recommendation)}</span></p></div></li>'
                    for f in findings)
    return f'<h3>Memory findings</h3><ol class="bottlenecks" data-findings="memory">{items}</ol>'


def _name(a) -> str:
    return f"{a.host} {a.name}" if a.host else a.name


def _mono(text) -> str:
    return f'<span class="mono">{esc(text)}</span>' if text else '<span class="muted">–</span>'
