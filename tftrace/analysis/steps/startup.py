"""A call's start-up inside the window: the first step of a fit, evaluate or predict call builds
its input iterator and sets itself up, once. Among many steps it says nothing of the steady
state, so the verdict leaves it out (the stall finding names it where it stands out)."""

from __future__ import annotations

import dataclasses

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.overhead import ITERATOR_BUILDS
from tftrace.analysis.sums import distinct
from tftrace.model.events import Trace


def startup_steps(trace: Trace, tl: Timeline) -> np.ndarray:
    """Indices of the steps that hold a call's start-up: an iterator built on the main thread, in
    fewer than half of the steps (one per call, calls of several steps; built in most steps, it is
    a call per batch, which per_call names)."""
    n = len(tl.start)
    if n < 4:
        return np.zeros(0, np.int64)
    codes = [c for c, op in trace.ops.items() if op.type in ITERATOR_BUILDS]
    if not codes:
        return np.zeros(0, np.int64)
    main = trace.on_lines_table(lambda ln: ln.role == "python")
    ev = trace.events
    rows = np.flatnonzero(trace.named(codes))
    starts = ev["start_ps"][rows[main[ev["line"][rows]]]]
    i = np.searchsorted(tl.start, starts, side="right") - 1
    inside = (i >= 0) & (starts < (tl.start + tl.dur)[np.maximum(i, 0)])
    built = distinct(i[inside])
    if len(built) * 2 >= n:
        return np.zeros(0, np.int64)
    return built


def steady(tl: Timeline, startup: np.ndarray) -> Timeline:
    """The timeline without the start-up steps."""
    keep = np.ones(len(tl.start), bool)
    keep[startup] = False
    per_step = ("start", "dur", "input", "compute", "overhead", "idle", "device_busy", "copies", "input_wait")
    return dataclasses.replace(tl, **{f: getattr(tl, f)[keep] for f in per_step if getattr(tl, f) is not None})
