"""tf.function calls on the main thread, each with what it cost beyond running its graph:
tracing, XLA compilation, instantiating a new concrete function."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.findings.context import Context
from tftrace.analysis.intervals import covered, merge
from tftrace.analysis.overhead import TRACING

# Where a function's graph really runs: the TF runtime running its kernel (the instantiation of a
# new concrete function comes before it), or an XLA executable.
_EXECUTION = ("KernelAndDeviceFunc::Run",)
_EXECUTABLE = ("Executable::Execute", "ThunkExecutor::Execute", "ExecuteHelper")
_COMPILING = ("Compiler::", "JitCompiler", "XlaCompile", "CompileCpuExecutable", "RunHloPasses", "HLO passes",
              "BuildExecutable", "Codegen", "FusionCompiler")


@dataclass(frozen=True)
class Calls:
    """Per call: function name, start, end, step index (-1 outside steps), whether it traced and
    whether XLA compiled it, and its cost in ps beyond running the graph."""

    name: np.ndarray  # name codes
    start: np.ndarray
    end: np.ndarray
    step: np.ndarray
    traced: np.ndarray
    xla: np.ndarray
    tracing_ps: np.ndarray
    compile_ps: np.ndarray
    cost_ps: np.ndarray  # the call's duration minus its graph's execution and ops


def function_calls(ctx: Context) -> Calls:
    trace = ctx.trace
    rows = trace.stats["event"]
    fn_call = trace.stats["fn_call"]
    keep = np.flatnonzero(fn_call >= 0)
    keep = keep[ctx.main_thread[rows[keep]]]
    ev = trace.events
    r = rows[keep]
    start = ev["start_ps"][r]
    end = start + ev["dur_ps"][r]
    kinds = [trace.names[c] for c in fn_call[keep].tolist()]
    traced = np.array([k.startswith("traced") for k in kinds], bool)
    xla = np.array([k.endswith("-xla") or "Xla" in k and "non" not in k for k in kinds], bool)
    names = ev["name"][r]
    if not traced.any():  # the usual case: nothing traced, nothing to cost
        zeros = np.zeros(len(r), np.int64)
        return Calls(names, start, end, ctx.inside(start), traced, xla, zeros, zeros, zeros)
    tracing = within(ctx, TRACING, start, end, exact=True)
    compiling = within(ctx, _COMPILING, start, end)
    running = within(ctx, _EXECUTION, start, end, exact=True, extra=ctx.tl.busy)
    # A new XLA executable's first runs carry one-off set-up; the fastest run of the function in
    # the window is the nearest to what a steady run costs.
    executable = within(ctx, _EXECUTABLE, start, end)
    for code in set(names[executable > 0].tolist()):
        mine = (names == code) & (executable > 0)
        executable[mine] = executable[mine].min()
    running = running + executable
    compiling = np.minimum(compiling, np.maximum(end - start - tracing, 0))
    cost = np.maximum(end - start - running, 0)
    return Calls(names, start, end, ctx.inside(start), traced, xla | (compiling > 0), tracing, compiling, cost)


def within(ctx: Context, names: tuple[str, ...], start: np.ndarray, end: np.ndarray, exact: bool = False,
            extra=None) -> np.ndarray:
    """Per call [start, end): the time events with these names (any thread) cover in it."""
    match = (lambda n: n in names) if exact else (lambda n: any(k in n for k in names))
    rows = ctx.rows_named(match)
    s = ctx.trace.events["start_ps"][rows]
    e = s + ctx.trace.events["dur_ps"][rows]
    if extra is not None:
        s, e = np.concatenate([s, extra[0]]), np.concatenate([e, extra[1]])
    return covered(*merge(s, e), start, end)
