"""Memory per allocator from its allocation events: the peak in use, when it happened, what held
it, per-step peaks and a thinned in-use timeline.

The allocator records its own counters with every event (bytes_reserved, bytes_allocated,
bytes_available, peak_bytes_in_use); the peak is the largest reserved + allocated over the
window's events, as XProf's memory_profile computes its in-window peak, and capacity is in use
plus available at that event, as XProf's memoryCapacity. The lifetime peak is the allocator's own
peak counter (peak_bytes_in_use) on its last memory event in the order XProf reads them, line by
line and each line's events in order, as XProf's peakBytesUsageLifetime: the counter some
allocators keep (TPU's) counts the heap alone, so it may lie below the in-window peak.
"""

from __future__ import annotations

import numpy as np

from tftrace.analysis.memory.held import held_at
from tftrace.analysis.sums import distinct
from tftrace.model.events import Columns, Trace
from tftrace.model.memory import AllocatorRow, MemoryPoint, StepPeak

TIMELINE_POINTS = 200  # enough for a chart's width; each point is the largest of its stretch


def allocators(trace: Trace, starts, ends, numbers, layer_of: dict, top: int = 10) -> tuple[AllocatorRow, ...]:
    """Every allocator of the trace, largest peak first; `starts`/`ends`/`numbers` are the steps,
    `layer_of` maps op names to Keras layers (the op table's)."""
    mem = trace.memory
    if mem is None or not len(mem):
        return ()
    steps = (np.asarray(starts, np.int64), np.asarray(ends, np.int64), np.asarray(numbers, np.int64))
    hosts = np.array([ln.host for ln in trace.lines] + [""], object)[mem["line"]]
    keys = [(h, a) for h, a in sorted(set(zip(hosts.tolist(), mem["allocator"].tolist())))]
    rows = [_allocator(mem, np.flatnonzero((hosts == h) & (mem["allocator"] == a)), a, h if len(trace.hosts) > 1 else "",
                       steps, layer_of, top) for h, a in keys]
    return tuple(sorted(rows, key=lambda r: (-r.peak_bytes, r.host, r.name)))


def _allocator(mem: Columns, rows: np.ndarray, name: str, host: str, steps, layer_of: dict, top: int) -> AllocatorRow:
    # The memory table holds a trace's events line by line, in each line's order: the last of
    # `rows` before sorting by time is the last event XProf reads (an absent counter reads 0).
    lifetime = max(int(mem["peak_bytes_in_use"][rows[-1]]), 0)
    rows = rows[np.argsort(mem["time_ps"][rows], kind="stable")]
    ev = mem.take(rows)
    in_use = _in_use(ev)
    k = int(np.argmax(in_use))  # the first event at the peak
    peak = int(in_use[k])
    available = int(ev["bytes_available"][k])
    capacity = peak + available if available >= 0 else 0
    time = ev["time_ps"]
    return AllocatorRow(
        name=name, host=host, peak_bytes=peak, capacity_bytes=capacity,
        peak_share=round(peak / capacity, 6) if capacity else 0.0, peak_at_ps=int(time[k]),
        peak_step=_step_of(int(time[k]), steps), peak_op=str(ev["tf_op"][k]),
        lifetime_peak_bytes=lifetime,
        fragmentation=round(float(ev["fragmentation"][k]), 6), events=len(rows),
        at_peak=held_at(ev, k, peak, layer_of, top), steps=_step_peaks(time, in_use, steps),
        timeline=_timeline(time, in_use, k))


def _in_use(ev: Columns) -> np.ndarray:
    """Bytes in use after each event: reserved (stack) plus allocated (heap); an absent counter is 0."""
    return np.maximum(ev["bytes_reserved"], 0) + np.maximum(ev["bytes_allocated"], 0)


def _step_of(t: int, steps) -> int:
    starts, ends, numbers = steps
    i = int(np.searchsorted(starts, t, side="right")) - 1
    return int(numbers[i]) if 0 <= i < len(starts) and t < ends[i] else -1


def _step_peaks(time: np.ndarray, in_use: np.ndarray, steps) -> tuple[StepPeak, ...]:
    """Per step, the most in use during it: at its start (the last event before) or at any event in it."""
    starts, ends, numbers = steps
    first = np.searchsorted(time, starts, side="left")
    last = np.searchsorted(time, ends, side="left")
    out = []
    for s0, s1, n in zip(first.tolist(), last.tolist(), numbers.tolist()):
        before = int(in_use[s0 - 1]) if s0 > 0 else 0
        inside = int(in_use[s0:s1].max()) if s1 > s0 else 0
        if s0 > 0 or s1 > s0:  # a step before the first event knows nothing of this allocator
            out.append(StepPeak(n, max(before, inside)))
    return tuple(out)


def _timeline(time: np.ndarray, in_use: np.ndarray, peak: int) -> tuple[MemoryPoint, ...]:
    """At most TIMELINE_POINTS points: the largest of each stretch of events (as XProf thins its
    timeline), with the first event and the peak always kept."""
    n = len(time)
    if n <= TIMELINE_POINTS:
        keep = np.arange(n)
    else:
        bounds = np.linspace(0, n, TIMELINE_POINTS - 1, dtype=np.int64)[:-1]
        widths = np.diff(np.append(bounds, n))
        local = np.array([int(np.argmax(in_use[b:b + w])) for b, w in zip(bounds.tolist(), widths.tolist())])
        keep = distinct(np.concatenate([[0, peak], bounds + local]))
    return tuple(MemoryPoint(int(time[i]), int(in_use[i])) for i in keep.tolist())
