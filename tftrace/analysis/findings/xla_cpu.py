"""A TensorFlow step compiled with XLA (`jit_compile=True`) on a CPU: XLA's CPU runtime runs the
step's HLO ops as thunks on the host's threads, and for a small or medium model its own work
around them (the executable's launch, the thunk executor, the buffers) can outweigh the ops.
Keras turns XLA off on machines with no accelerator for this reason; a step compiled with it
there is the user's explicit choice, and the report reads it as XLA, not as Python time."""

from __future__ import annotations

from tftrace.analysis.findings import projection
from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for

MIN_HOST = 0.2  # of the step: XLA's runtime and the host's work around the ops must hold this much
# XLA:CPU's runtime: running an executable, its thunks, waiting for them.
_RUNTIME = ("CpuExecutable::ExecuteAsyncOnStream", "ThunkExecutor::Execute", "BlockUntilReady")


def detect(ctx: Context) -> list[Finding]:
    b = ctx.breakdown
    if not ctx.tf_xla or ctx.tl.device_busy is not None or b.host_overhead < MIN_HOST:
        return []
    runtime = _runtime_ps(ctx)
    ops = ctx.tl.compute.sum() / ctx.n
    host = ctx.tl.overhead.sum() / ctx.n
    facts = (fact("how the step runs", "compiled by XLA (jit_compile=True) and run by XLA's CPU runtime"),
             ms_fact("host time per step around the ops (XLA's runtime and TensorFlow's call into it)", host),
             ms_fact("of it in XLA's runtime events (executable launch, thunk executor, waits)", runtime),
             ms_fact("the step's XLA ops per step", ops), pct_fact("share of the step", b.host_overhead))
    title = (f"XLA's CPU runtime: {ms(host)} per step around {ms(ops)} of the step's ops "
             "(the step is compiled with jit_compile=True)")
    p = projection.unknown(ctx, "the trace shows XLA's runtime, not what TensorFlow's own kernels would take for "
                                "the same step: compile with jit_compile=False and capture again, or time it with "
                                "TraceCallback(confirm=True)")
    return [Finding("xla_cpu", title, b.host_overhead, facts, fix_for("xla_cpu"), p.step_ps, "host_overhead",
                    subject="jit_compile", **p.fields())]


def _runtime_ps(ctx: Context) -> float:
    """Per step, the time the XLA runtime's events on the host span inside the steps."""
    rows = ctx.rows_named(lambda n: n.startswith(_RUNTIME))
    rows = rows[ctx.inside(ctx.trace.events["start_ps"][rows]) >= 0]
    return float(ctx.trace.events["self_ps"][rows].sum() or ctx.trace.events["dur_ps"][rows].sum()) / ctx.n
