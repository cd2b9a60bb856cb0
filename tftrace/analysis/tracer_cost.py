"""What JAX's Python tracer itself adds to each step: every Python call it records costs the
traced program time, so a Python-heavy step looks slower, and more host-bound, than it runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.model.events import Trace
from tftrace.model.report import Breakdown

# What one recorded Python call costs the traced program, against the tracer's own shortest
# events: a trivial call's recorded length is the tracer timing it, on this machine and Python,
# so it scales with the whole cost of recording a call. Nine captures with untraced twins (JAX
# 0.10 on CPU, Python 3.11; JAX 0.11 on an H200 host, Python 3.12) cost 0.34-1.61 us a call,
# 5.6-14 times their 5th-percentile event (median 6.9).
CALLS_PER_SHORTEST = 7
PS_PER_CALL_RANGE = (300_000, 3_000_000)  # what the estimate stays within
MIN_SHARE = 0.05  # below this share of step time the tracer's cost is not worth a note


@dataclass(frozen=True)
class TracerCost:
    calls_per_step: float
    ps_per_step: float
    share: float  # of the mean step (with its gap)
    verdict_without: str  # the bound the breakdown gives with the tracer's time taken from host overhead
    ps_per_call: float  # the estimate's cost of one recorded call


def tracer_cost(trace: Trace, tl: Timeline, b: Breakdown) -> TracerCost | None:
    """The tracer's estimated cost per step, from the Python calls it recorded inside steps and
    the gaps between them; None without tracer events or when it is small."""
    if not trace.has_prefix("$"):
        return None
    codes = [c for c, n in enumerate(trace.names) if n.startswith("$")]
    n = len(tl.dur)
    if not codes or not n or tl.wall_ps <= 0:
        return None
    rows = np.flatnonzero(trace.named(codes))
    start, dur = trace.events["start_ps"][rows], trace.events["dur_ps"][rows]
    lo, hi = int(tl.start[0]), int((tl.start + tl.dur).max())
    inside = (start >= lo) & (start < hi)
    calls = int(inside.sum())
    timed = dur[inside & (dur > 0)]
    if not len(timed):
        return None
    per_call = float(np.clip(CALLS_PER_SHORTEST * np.percentile(timed, 5), *PS_PER_CALL_RANGE))
    cost = calls * per_call
    share = min(cost / tl.wall_ps, b.host_overhead + b.idle)
    if share < MIN_SHARE:
        return None
    parts = {"input": b.input, "compute": b.compute, "host_overhead": b.host_overhead, "idle": b.idle}
    taken = min(share, parts["host_overhead"])
    parts["host_overhead"] -= taken
    parts["idle"] -= share - taken
    without = max(parts, key=lambda k: (parts[k], k))
    return TracerCost(calls / n, cost / n, share, without, per_call)


def tracer_notes(cost: TracerCost, bound: str) -> tuple[str, ...]:
    """What the tracer adds, and, when it matters, the verdict without it (notes are short)."""
    notes = [f"the Python tracer recorded {cost.calls_per_step:,.0f} calls a step: at ~{cost.ps_per_call / 1e6:.1f} us each, "
             f"~{cost.ps_per_step / 1e9:.2f} ms ({cost.share:.0%}) of each step is the profiler's own"]
    if cost.verdict_without != bound:
        notes.append(f"without the tracer's time the run reads {cost.verdict_without.replace('_', ' ')}-bound: capture "
                     "with it off (TraceCallback(python_tracer=False)) to check")
    return tuple(notes)
