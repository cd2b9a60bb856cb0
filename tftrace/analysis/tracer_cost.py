"""What JAX's Python tracer itself adds to each step: every Python call it records costs the
traced program time, so a Python-heavy step looks slower, and more host-bound, than it runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.model.events import Trace

# What one recorded Python call costs the traced program, against the tracer's own shortest
# events: a trivial call's recorded length is the tracer timing it, on this machine and Python,
# so it scales with the whole cost of recording a call. Nine captures with untraced twins (JAX
# 0.10 on CPU, Python 3.11; JAX 0.11 on an H200 host, Python 3.12) cost 0.34-1.61 us a call,
# 5.6-14 times their 5th-percentile event (median 6.9).
CALLS_PER_SHORTEST = 7
PS_PER_CALL_RANGE = (300_000, 3_000_000)  # what the estimate stays within
MIN_SHARE = 0.05  # below this share of step time the tracer's cost is not worth a note
# The most of a step's host overhead (or a gap) an estimate may take: each recorded call runs code
# of its own too. Where the estimate ran high (Keras' loop around tiny steps: 0.6 us a call
# estimated, 0.2-0.5 us timed) it took up to 80% of the gaps; the timed share reached 63%.
MAX_OF_HOST = 0.6


@dataclass(frozen=True, eq=False)
class TracerCost:
    calls_per_step: float
    ps_per_step: float  # inside each step and in the gap before it, on average
    share: float  # of the mean step (with its gap)
    ps_per_call: float  # the estimate's cost of one recorded call
    step_ps: np.ndarray  # per step: the calls recorded inside it, at most its host overhead
    gap_ps: np.ndarray  # per step: the calls recorded in the gap before it, at most that gap


def tracer_cost(trace: Trace, tl: Timeline) -> TracerCost | None:
    """The tracer's estimated cost in each step and each gap, from the Python calls it recorded
    there; None without tracer events or when it is small. A step's cost is at most MAX_OF_HOST
    of its host overhead: Python that ran while the step's ops ran did not lengthen it."""
    if not trace.has_prefix("$"):
        return None
    codes = [c for c, n in enumerate(trace.names) if n.startswith("$")]
    n = len(tl.dur)
    if not codes or not n or tl.wall_ps <= 0:
        return None
    rows = np.flatnonzero(trace.named(codes))
    start, dur = trace.events["start_ps"][rows], trace.events["dur_ps"][rows]
    order = np.argsort(start, kind="stable")
    start, dur = start[order], dur[order]
    lo, hi = int((tl.start - tl.idle)[0]), int((tl.start + tl.dur).max())
    inside = (start >= lo) & (start < hi)
    timed = dur[inside & (dur > 0)]
    if not len(timed):
        return None
    per_call = float(np.clip(CALLS_PER_SHORTEST * np.percentile(timed, 5), *PS_PER_CALL_RANGE))
    step_calls = _count(start, tl.start, tl.start + tl.dur)
    gap_calls = _count(start, tl.start - tl.idle, tl.start)
    step_ps = np.minimum(step_calls * per_call, MAX_OF_HOST * tl.overhead).astype(np.int64)
    gap_ps = np.minimum(gap_calls * per_call, MAX_OF_HOST * tl.idle).astype(np.int64)
    cost = float(step_ps.sum() + gap_ps.sum())
    share = cost / tl.wall_ps
    if share < MIN_SHARE:
        return None
    return TracerCost(float(step_calls.sum() + gap_calls.sum()) / n, cost / n, share, per_call, step_ps, gap_ps)


def _count(sorted_starts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How many of the sorted times fall in each [lo, hi)."""
    return np.searchsorted(sorted_starts, hi, side="left") - np.searchsorted(sorted_starts, lo, side="left")
