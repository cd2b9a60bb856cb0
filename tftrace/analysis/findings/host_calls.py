"""The framework call that holds the host's time inside steps when no Python was recorded: the
main thread's events by their own (exclusive) time, e.g. `MakeIterator`, `PjitFunction(f)`,
`EagerLocalExecute`: evidence where the trace has no Python tracer events or samples."""

from __future__ import annotations

import numpy as np

from tftrace.analysis.findings.base import fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.python import nest_rows
from tftrace.analysis.sums import exact_sums

MIN_OF_PART = 0.2  # the call must hold at least this share of the part it explains
# The runtime's own machinery (running a graph, a thread pool's bookkeeping): the time under them
# is the framework's, but naming them tells the user nothing to change.
_RUNTIME = ("KernelAndDeviceFunc", "FunctionRun", "ThreadpoolListener", "EagerKernelExecute", "ExecutorState",
            "ThunkExecutor", "SlinkyThreadPool", "end: ", "ExecutorDoneCallback", "RunGraph", "SessionRun")
# The step function itself (a tf.function's graph run, a jitted call): the time under it is what
# needs an owner, so it is never named as one.
_STEP_CALLS = ("EagerLocalExecute: __inference_", "EagerLocalExecute: __forward_", "EagerLocalExecute: __backward_",
               "PjitFunction(", "TfrtModeExecute", "Eager::ExecuteAsync")
_FUNCTION_GRAPHS = ("__inference_", "__forward_", "__backward_")  # a tf.function's graph, however it is called


def host_call_fact(ctx: Context, part_ps: float) -> tuple[tuple, str]:
    """(evidence, title suffix) naming the main-thread call with the most exclusive time inside
    steps, when it holds at least MIN_OF_PART of `part_ps`; ((), "") otherwise."""
    ev = ctx.trace.events
    skip = set(ctx.steps.names)
    codes = [c for c, n in enumerate(ctx.trace.names)
             if not n.startswith(("$", *_RUNTIME, *_STEP_CALLS)) and n not in skip and c not in ctx.trace.ops
             and not any(f in n for f in _FUNCTION_GRAPHS)]
    rows = np.flatnonzero(ctx.main_thread & ctx.trace.named(codes)) if codes else np.zeros(0, np.int64)
    rows = rows[ctx.inside(ev["start_ps"][rows]) >= 0]
    if not len(rows) or part_ps <= 0:
        return (), ""
    rows, _, _, own = nest_rows(ev, rows)
    by_name = exact_sums(ev["name"][rows], own, len(ctx.trace.names) + 1)
    best = int(np.argmax(by_name))
    if by_name[best] < MIN_OF_PART * part_ps:
        return (), ""
    label = ctx.trace.names[best]
    per_step = by_name[best] / ctx.n / 1e9
    return ((fact("the host call holding most of it", f"{label} ({per_step:.2f} ms per step, "
                  f"{min(by_name[best] / part_ps, 1):.0%} of that time)"),), f" in {label}")
