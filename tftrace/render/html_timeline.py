"""Inline SVG timeline of one step (a StepView): a lane per thread and stream, a row per
nesting level, events coloured by category, input waits and idle gaps as bands."""

from __future__ import annotations

from tftrace.render.fmt import ms, tail
from tftrace.render.html_charts import PART_COLORS, _nice_ticks, category_color, esc

# Events that are not ops: the runtime, tf.function calls and markers, and Python functions.
EXTRA_COLORS = {"framework": "#d4c4dc", "python": "#f1ce63"}
WAIT_COLOR, IDLE_COLOR = PART_COLORS["input"], "#3c4043"  # idle darker than the grey of "other" ops
_W, _LABEL_W, _RIGHT = 1080, 210, 16
_ROW, _LANE_GAP, _TOP, _MARKS = 14, 8, 26, 14
_CHAR_W = 6.6


def event_color(category: str) -> str:
    return EXTRA_COLORS.get(category) or category_color(category)


def timeline_chart(view) -> str:
    """The step's lanes on one ms axis from the step's start; the dashed line is the step's end."""
    plot_w = _W - _LABEL_W - _RIGHT
    scale = plot_w / max(view.view_ps, 1)
    heights = [(max((e.depth for e in lane.events), default=0) + 1) * _ROW for lane in view.lanes]
    lanes_top = _TOP + _MARKS + _LANE_GAP
    bottom = lanes_top + sum(h + _LANE_GAP for h in heights)
    height = bottom + 24
    x0 = _LABEL_W
    out = [f'<svg class="chart timeline" data-chart="timeline" viewBox="0 0 {_W} {height}" width="{_W}" '
           f'height="{height}" role="img" aria-label="Timeline of step {int(view.number)}">']
    tops = [lanes_top + sum(h + _LANE_GAP for h in heights[:i]) for i in range(len(heights))]
    out += [f'<rect class="lane-bg" x="{x0}" y="{y - 2}" width="{plot_w}" height="{h + 4}" '
            f'fill="{"#f8f9fa" if i % 2 == 0 else "#ffffff"}"/>' for i, (y, h) in enumerate(zip(tops, heights))]
    out += _axis(view, x0, plot_w, scale, bottom)
    out += _bands(view, x0, scale, lanes_top - 2, bottom)
    labels = _labels(view.lanes)
    for i, (lane, y) in enumerate(zip(view.lanes, tops)):
        out.append(_lane(view, lane, labels[i], i, x0, y, scale))
    end_x = x0 + view.dur_ps * scale
    if view.view_ps > view.dur_ps:
        out.append(f'<line class="step-end" x1="{end_x:.1f}" x2="{end_x:.1f}" y1="{_TOP - 4}" y2="{bottom}" '
                   f'stroke="#202124" stroke-dasharray="4 3"><title>step end: {ms(view.dur_ps)} ms</title></line>'
                   f'<text class="tick" x="{end_x - 4:.1f}" y="{bottom + 16}" text-anchor="end">step end</text>')
    return "\n".join(out + ["</svg>"])


def _axis(view, x0: float, plot_w: float, scale: float, bottom: float) -> list[str]:
    view_ms = view.view_ps / 1e9
    out = []
    for t in _nice_ticks(view_ms, 8):
        if t > view_ms + 1e-9:
            break
        x = x0 + t * 1e9 * scale
        out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP - 4}" y2="{bottom}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{_TOP - 8}" text-anchor="middle">{t:g}</text>')
    out.append(f'<text class="axis-label" x="{x0 - 8}" y="{_TOP - 8}" text-anchor="end">ms from step start</text>')
    return out


def _bands(view, x0: float, scale: float, top: float, bottom: float) -> list[str]:
    """Input waits and idle gaps: a mark in their own row, and a faint band across every lane."""
    out = [f'<text class="lane-label" x="{x0 - 8}" y="{_TOP + _MARKS - 3}" text-anchor="end">input wait · idle</text>']
    for kind, spans, color, what in (("input-wait", view.input_waits, WAIT_COLOR, "waiting for input data"),
                                     ("idle", view.idle, IDLE_COLOR, "idle: no thread or stream recorded anything")):
        for s in spans:
            x, w = x0 + s.start_ps * scale, max(s.dur_ps * scale, 1.0)
            title = f"<title>{what}: {ms(s.dur_ps)} ms at {ms(s.start_ps)} ms</title>"
            out.append(f'<g class="{kind}">{title}<rect x="{x:.1f}" y="{_TOP}" width="{w:.1f}" height="{_MARKS - 2}" '
                       f'fill="{color}"/><rect x="{x:.1f}" y="{top:.1f}" width="{w:.1f}" height="{bottom - top:.1f}" '
                       f'fill="{color}" fill-opacity="{".16" if kind == "input-wait" else ".08"}"/></g>')
    return out


def _labels(lanes) -> list[str]:
    """Thread names without their numeric ids (`tf_Compute/-8876...` -> `tf_Compute`), numbered
    where several threads share one; the full name stays in the hover text."""
    bases = []
    for lane in lanes:
        head, sep, rest = lane.name.rpartition("/")
        bases.append(head if sep and rest.lstrip("-").isdigit() else lane.name)
    seen: dict[str, int] = {}
    out = []
    for base in bases:
        seen[base] = seen.get(base, 0) + 1
        label = f"{base} #{seen[base]}" if bases.count(base) > 1 else base
        out.append(tail(label, int((_LABEL_W - 12) / _CHAR_W)))
    return out


def _lane(view, lane, label: str, index: int, x0: float, y: float, scale: float) -> str:
    where = lane.plane if lane.plane.startswith("/device:") else lane.role
    hidden = f", {lane.hidden} events not drawn" if lane.hidden else ""
    out = [f'<g class="lane" data-lane="{index}"><title>{esc(lane.name)} ({esc(where)}): busy {ms(lane.busy_ps)} ms'
           f'{hidden}</title>',
           f'<text class="lane-label" x="{x0 - 8}" y="{y + 11:.1f}" text-anchor="end">{esc(label)}</text>']
    for e in lane.events:
        x, w = x0 + e.start_ps * scale, max(e.dur_ps * scale, 0.8)
        name, category = view.names[e.name_id], view.categories[e.name_id]
        what = (f"{e.count} short events, longest {name}" if e.count > 1 else name)
        out.append(f'<rect class="ev" x="{x:.1f}" y="{y + e.depth * _ROW:.1f}" width="{w:.1f}" height="{_ROW - 2}" '
                   f'fill="{event_color(category)}"><title>{esc(what)}: {ms(e.dur_ps)} ms ({esc(category)})'
                   "</title></rect>")
    return "".join(out) + "</g>"
