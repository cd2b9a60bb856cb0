"""Steps paced by XLA:CPU when the host ran ahead of it: JAX dispatches a jitted call and returns,
so a loop that never waits marks steps as long as their dispatch while the module's runs queue up
on XLA's threads. There each run of the step's module is a step, as a device's step line is."""

from __future__ import annotations

import dataclasses

import numpy as np

from tftrace.analysis.steps.found import Steps
from tftrace.model.events import Trace

AHEAD = 0.5  # host steps under this share of the module's run: the host ran ahead of it
MIN_RUNS = 3


def paced_by_module_runs(trace: Trace, steps: Steps) -> Steps | None:
    """`steps` re-timed by the runs of the module that holds most of XLA:CPU's time, one run a
    step, when the host begins steps much faster than those runs take; None where they keep pace (or
    the trace has no such runs). Step i runs from the start of run i to the start of run i+1 (the
    last to its last thunk's end)."""
    if steps.kind not in ("marker", "function") or steps.count < MIN_RUNS or trace.devices:
        return None
    runs = _module_runs(trace, steps.starts[0])
    if runs is None or len(runs[0]) < MIN_RUNS:
        return None
    starts, ends = runs
    host = np.diff(np.asarray(steps.starts, np.int64))  # the host's pace: one step's start to the next
    if float(np.median(host)) >= AHEAD * float(np.median(ends - starts)):
        return None
    k = min(len(starts), steps.count)
    bounds = np.append(starts[1:k], ends[k - 1])
    left = steps.count - k
    note = (f"the host ran ahead of XLA:CPU (it began a step every {np.median(host) / 1e9:.3f} ms, its dispatch): "
            f"each step here is one run of the step's module on XLA's threads, start to start, as the device "
            f"ran them; the breakdown is the device's view"
            + (f"; {left} steps whose runs the capture ended before are left out" if left else ""))
    return dataclasses.replace(steps, source=steps.source + ", paced by XLA:CPU's module runs",
                               starts=tuple(starts[:k].tolist()), ends=tuple(bounds.tolist()),
                               numbers=steps.numbers[:k], names=steps.names[:k], note=note)


def _module_runs(trace: Trace, after: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(start, end) of each run of the main XLA:CPU module that begins at or after `after`: a run
    begins with the module's first instruction (the one its first event runs) and takes the events
    up to the next such start."""
    codes = [c for c, op in trace.ops.items() if op.kind == "xla"]
    if not codes:
        return None
    ev = trace.events
    rows = np.flatnonzero(trace.named(codes))
    if not len(rows):
        return None
    module = {c: trace.ops[c].name.rpartition("/")[0] for c in codes}
    modules = sorted(set(module.values()))
    index = {m: i for i, m in enumerate(modules)}
    module_of = np.full(len(trace.names) + 1, -1, np.int64)  # name code -> its module's index
    for c, m in module.items():
        module_of[c] = index[m]
    mods = module_of[ev["name"][rows]]
    totals = np.bincount(mods, ev["dur_ps"][rows].astype(np.float64), minlength=len(modules))
    main = max(range(len(modules)), key=lambda m: (totals[m], modules[m]))
    rows = rows[mods == main]
    rows = rows[np.argsort(ev["start_ps"][rows], kind="stable")]
    start, end = ev["start_ps"][rows], ev["start_ps"][rows] + ev["dur_ps"][rows]
    names = ev["name"][rows]
    first = np.flatnonzero(names == names[0])
    counts = np.bincount(names)
    if counts[names[0]] < MIN_RUNS or (counts[counts > 0] < counts[names[0]]).mean() > 0.5:
        return None  # the first instruction does not run once a run (most run more often): no run boundary
    run_starts = start[first]
    which = np.searchsorted(run_starts, start, side="right") - 1
    run_ends = np.full(len(run_starts), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(run_ends, which, end)
    keep = run_starts >= after
    return run_starts[keep], run_ends[keep]
