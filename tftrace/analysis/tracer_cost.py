"""What JAX's Python tracer itself adds to each step: every Python call it records costs the
traced program time, so a Python-heavy step looks slower, and more host-bound, than it runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.model.events import Trace
from tftrace.model.report import Breakdown

# What one recorded Python call costs the traced program: measured here (JAX 0.10, CPython 3.11,
# the CPU zoo's untraced twins against their traces) at 0.45-0.93 us; the H200 samples (Python
# 3.12) imply more. A floor, so the estimate understates rather than invents.
PS_PER_CALL = 600_000
MIN_SHARE = 0.05  # below this share of step time the tracer's cost is not worth a note


@dataclass(frozen=True)
class TracerCost:
    calls_per_step: float
    ps_per_step: float
    share: float  # of the mean step (with its gap)
    verdict_without: str  # the bound the breakdown gives with the tracer's time taken from host overhead


def tracer_cost(trace: Trace, tl: Timeline, b: Breakdown) -> TracerCost | None:
    """The tracer's estimated cost per step, from the Python calls it recorded inside steps and
    the gaps between them; None without tracer events or when it is small."""
    if not trace.has_prefix("$"):
        return None
    codes = [c for c, n in enumerate(trace.names) if n.startswith("$")]
    n = len(tl.dur)
    if not codes or not n or tl.wall_ps <= 0:
        return None
    start = trace.events["start_ps"][trace.named(codes)]
    lo, hi = int(tl.start[0]), int((tl.start + tl.dur).max())
    calls = int(((start >= lo) & (start < hi)).sum())
    cost = calls * PS_PER_CALL
    share = min(cost / tl.wall_ps, b.host_overhead + b.idle)
    if share < MIN_SHARE:
        return None
    parts = {"input": b.input, "compute": b.compute, "host_overhead": b.host_overhead, "idle": b.idle}
    taken = min(share, parts["host_overhead"])
    parts["host_overhead"] -= taken
    parts["idle"] -= share - taken
    without = max(parts, key=lambda k: (parts[k], k))
    return TracerCost(calls / n, cost / n, share, without)


def tracer_notes(cost: TracerCost, bound: str) -> tuple[str, ...]:
    """What the tracer adds, and, when it matters, the verdict without it (notes are short)."""
    notes = [f"the Python tracer recorded {cost.calls_per_step:,.0f} calls a step: at ~{PS_PER_CALL / 1e6:g} us each, "
             f"~{cost.ps_per_step / 1e9:.2f} ms ({cost.share:.0%}) of each step is the profiler's own"]
    if cost.verdict_without != bound:
        notes.append(f"without the tracer's time the run reads {cost.verdict_without.replace('_', ' ')}-bound: capture "
                     "with it off (TraceCallback(python_tracer=False)) to check")
    return tuple(notes)
