"""One representative step up close: the median step's events per thread and stream, clipped
to the step, thinned to what a page can draw, with input waits and idle gaps marked.

Times are integer picoseconds from the step's start. The view runs from the step's start to
the next step's start, so the idle gap after the step is part of it.
"""

from __future__ import annotations

import numpy as np

from tftrace.analysis.classify import classify
from tftrace.analysis.intervals import merge
from tftrace.model.events import Trace
from tftrace.model.step_view import Lane, Span, StepView, ViewEvent

MAX_LANES = 16  # the busiest threads and streams; the rest are counted, not drawn
MAX_DEPTH = 4  # nesting levels drawn per lane; deeper events sit inside the ones drawn
MAX_EVENTS = 120  # boxes per lane, longest first
MAX_BOXES = 240  # boxes in all lanes: quiet lanes keep theirs, busy ones share the rest
MAX_NAME = 120  # characters of a name kept (templated GPU kernel names run to hundreds)
RESOLUTION = 400  # events shorter than 1/RESOLUTION of the view (about 2 px) are merged with their neighbours
MAX_MARKS = 60  # input waits and idle gaps each, longest first
IDLE_MIN = 200  # an idle gap is at least 1/IDLE_MIN of the view
_ROLE_ORDER = {"python": 0, "compute": 1, "data": 2, "other": 3, "device_ops": 4}


def step_view(trace: Trace, starts, durs, idle_before, numbers, is_input: np.ndarray) -> StepView:
    """The median step (by duration; the lower one of an even count) of the given steps.
    `idle_before[i]` is the gap before step i; `is_input` marks input events."""
    n = len(durs)
    if n == 0 or len(trace.events) == 0:
        return StepView()
    i = int(np.argsort(np.asarray(durs), kind="stable")[(n - 1) // 2])
    lo, dur = int(starts[i]), int(durs[i])
    after = int(idle_before[i + 1]) if i + 1 < n else 0
    hi = lo + dur + after
    if dur <= 0:
        return StepView()
    ev = trace.events
    s_all = ev["start_ps"]
    e_all = s_all + ev["dur_ps"]
    line_all = ev["line"]
    drawn = np.array([ln.role != "derived" for ln in trace.lines] + [False], bool)
    rows = np.flatnonzero((s_all < hi) & (e_all > lo) & (e_all > s_all) & drawn[line_all])
    s, e, line, code = s_all[rows], e_all[rows], line_all[rows], ev["name"][rows]
    order = np.lexsort((-(e - s), s, line))
    s, e, line, code, rows = s[order], e[order], line[order], code[order], rows[order]
    depth = _depths(s, e, line)
    cs, ce = np.maximum(s, lo) - lo, np.minimum(e, hi) - lo
    lanes, hidden_lanes, deep, over, codes = _lanes(trace, line, depth, cs, ce, code, hi - lo)
    category = _categories(trace, np.asarray(codes, np.int64))
    idle = _gaps(*merge(s, e), lo, hi, (hi - lo) // IDLE_MIN)
    waits = _clip(*merge(s_all[is_input], e_all[is_input]), lo, hi)
    note = (f"step {int(numbers[i])}, the median of {n} steps by duration" if n > 1 else "the only step")
    if after:
        note += f", with the {after / 1e9:.2f} ms idle gap before the next step"
    left_out = []
    if deep:
        left_out.append(f"{deep} events nested deeper than {MAX_DEPTH} levels")
    if over:
        left_out.append(f"{over} short boxes over the budget of {MAX_BOXES}")
    if hidden_lanes:
        left_out.append(f"{hidden_lanes} less busy threads or streams")
    if left_out:
        note += "; not drawn: " + ", ".join(left_out)
    return StepView(int(numbers[i]), dur, hi - lo, lanes, waits, idle, hidden_lanes, note,
                    tuple(_short(trace.names[c]) for c in codes), tuple(category[c] for c in codes))


def _short(name: str) -> str:
    """A long name as its start and end, which say what it is; the middle goes."""
    if len(name) <= MAX_NAME:
        return name
    keep = MAX_NAME - 1
    return name[:keep * 2 // 3] + "…" + name[-(keep - keep * 2 // 3):]


def _depths(s: np.ndarray, e: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Nesting level of each event on its line (events sorted by line, start, longest first).
    Events on a line nest: an event's level is how many earlier events are still open at its start."""
    depth = np.zeros(len(s), np.int64)
    bounds = np.flatnonzero(np.diff(line)) + 1
    for a, b in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [len(s)]))):
        ends = np.sort(e[a:b])
        closed = np.searchsorted(ends, s[a:b], side="right")
        depth[a:b] = np.maximum(np.arange(b - a) - closed, 0)
    return depth


def _categories(trace: Trace, codes: np.ndarray) -> dict[int, str]:
    out = {}
    for code in np.flatnonzero(np.bincount(codes)).tolist():  # the codes present (np.unique imports np.ma)
        op = trace.ops.get(code)
        name = trace.names[code]
        if op is not None:
            out[code] = classify(op).category
        elif name.lower().startswith(("iteratorgetnext", "iterator::")):
            out[code] = "input"
        elif name.startswith("$"):  # the Python tracer's function events
            out[code] = "python"
        else:
            out[code] = "framework"
    return out


def _lanes(trace: Trace, line, depth, cs, ce, code, view_ps: int):
    """The busiest lanes, their events thinned to what can be drawn."""
    ids, first = np.unique(line, return_index=True)  # events arrive sorted by line
    where = {ln: (a, b) for ln, a, b in zip(ids.tolist(), first.tolist(), [*first[1:].tolist(), len(line)])}
    top = np.where(depth == 0, ce - cs, 0)
    busy = {ln: int(top[a:b].sum()) for ln, (a, b) in where.items()}
    ranked = sorted(busy, key=lambda ln: (-busy[ln], ln))
    kept = sorted(ranked[:MAX_LANES], key=lambda ln: (trace.lines[ln].on_device, trace.lines[ln].plane,
                                                      _ROLE_ORDER.get(trace.lines[ln].role, 3),
                                                      trace.lines[ln].name, ln))
    pixel = max(view_ps // RESOLUTION, 1)
    thinned = {}
    for ln in kept:
        a, b = where[ln]
        sel = a + np.flatnonzero(depth[a:b] < MAX_DEPTH)
        boxes = _thin(cs[sel], ce[sel], depth[sel], code[sel], pixel)
        thinned[ln] = sorted(boxes, key=lambda b: (-(b[1] - b[0]), b[0], b[2]))
    quota = _quotas({ln: len(boxes) for ln, boxes in thinned.items()})
    lanes, deep_total, over_total = [], 0, 0
    ids: dict[int, int] = {}  # name code -> name_id, in order of first use
    for ln in kept:
        a, b = where[ln]
        boxes = thinned[ln]
        deep, over = int((depth[a:b] >= MAX_DEPTH).sum()), max(len(boxes) - quota[ln], 0)
        boxes = sorted(boxes[:quota[ln]], key=lambda b: (b[2], b[0]))
        info = trace.lines[ln]
        events = tuple(ViewEvent(int(a), int(b - a), int(d), ids.setdefault(c, len(ids)), int(k))
                       for a, b, d, c, k in boxes)
        lanes.append(Lane(info.name, info.plane, info.role, busy[ln], events, deep + over))
        deep_total, over_total = deep_total + deep, over_total + over
    return tuple(lanes), len(ranked) - len(kept), deep_total, over_total, list(ids)


def _quotas(sizes: dict) -> dict:
    """Boxes each lane may keep: at most MAX_EVENTS, MAX_BOXES in all; lanes needing less than
    an equal share keep all theirs and leave the rest to the busier ones."""
    quota, budget = {}, MAX_BOXES
    for i, ln in enumerate(sorted(sizes, key=lambda k: (sizes[k], k))):
        quota[ln] = min(sizes[ln], MAX_EVENTS, budget // (len(sizes) - i))
        budget -= quota[ln]
    return quota


def _thin(s, e, depth, code, pixel: int) -> list[tuple]:
    """Boxes (start, end, depth, name code, count): events at least a pixel long as they are;
    shorter ones merged per pixel and level, named after the longest of them."""
    tiny = (e - s) < pixel
    out = [(a, b, d, c, 1) for a, b, d, c in zip(s[~tiny].tolist(), e[~tiny].tolist(),
                                                   depth[~tiny].tolist(), code[~tiny].tolist())]
    if not tiny.any():
        return out
    ts, te, td, tc = s[tiny], e[tiny], depth[tiny], code[tiny]
    key = td * (RESOLUTION + 2) + ts // pixel
    order = np.lexsort((ts, -(te - ts), key))  # per group: the longest (then earliest) first
    key, ts, te, tc = key[order], ts[order], te[order], tc[order]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    counts = np.diff(np.concatenate((first, [len(key)])))
    starts, ends = np.minimum.reduceat(ts, first), np.maximum.reduceat(te, first)
    levels = key[first] // (RESOLUTION + 2)
    out += list(zip(starts.tolist(), ends.tolist(), levels.tolist(), tc[first].tolist(), counts.tolist()))
    return out


def _clip(m_starts: np.ndarray, m_ends: np.ndarray, lo: int, hi: int) -> tuple[Span, ...]:
    """Merged intervals inside [lo, hi), relative to lo, longest MAX_MARKS kept, in time order."""
    keep = (m_starts < hi) & (m_ends > lo)
    a, b = np.maximum(m_starts[keep], lo) - lo, np.minimum(m_ends[keep], hi) - lo
    spans = sorted(zip(a.tolist(), b.tolist()), key=lambda x: (x[0] - x[1], x[0]))[:MAX_MARKS]
    return tuple(Span(int(x), int(y - x)) for x, y in sorted(spans))


def _gaps(m_starts: np.ndarray, m_ends: np.ndarray, lo: int, hi: int, min_ps: int) -> tuple[Span, ...]:
    """Stretches of [lo, hi) no interval covers, at least min_ps long."""
    keep = (m_starts < hi) & (m_ends > lo)
    edges_s = np.concatenate(([lo], np.minimum(m_ends[keep], hi)))
    edges_e = np.concatenate((np.maximum(m_starts[keep], lo), [hi]))
    long_enough = (edges_e - edges_s) >= max(min_ps, 1)
    return _clip(edges_s[long_enough], edges_e[long_enough], lo, hi)
