"""Small steps: each step's graph runs briefly, and the fixed cost of getting it started (Keras'
loop, the tf.function call, dispatch) takes most of the step."""

from __future__ import annotations

import math

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.calls import within
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.op_by_op import jit_calls

MAX_GRAPH_MS = 5.0  # a step whose graph runs longer is not "small": its fixed cost matters less
MIN_FIXED = 0.5  # the fixed cost must be at least half the step


def detect(ctx: Context, explained: float) -> list[Finding]:
    b = ctx.breakdown
    # Only Keras' own loop: there the gaps between steps are its fixed cost too; in the user's
    # loops they are the user's Python (step_python, gaps).
    if ctx.loop != "keras" or ctx.eager or ctx.steps.kind not in ("marker", "function") or len(ctx.tl.dur) < 3 \
            or b.host_overhead + b.idle - explained < MIN_FIXED:
        return []
    graph = _jax_call_ps(ctx) if ctx.jax else graph_ps(ctx)
    fixed_ps = ctx.per_step_ps - graph
    share = min(b.host_overhead + b.idle - explained, fixed_ps / ctx.per_step_ps)  # what no cause claimed
    if graph > MAX_GRAPH_MS * 1e9 or share < MIN_FIXED:
        return []
    batch = ctx.trace.sidecar.get("batch_size")
    spe = 2 ** min(max(math.ceil(math.log2(max(fixed_ps / max(graph, 1) * 10, 2))), 3), 10)
    facts = [ms_fact("the jitted call per step (dispatch)" if ctx.jax else "graph time per step (ops and executor)", graph), ms_fact("fixed cost per step", fixed_ps),
             pct_fact("fixed cost of the step", fixed_ps / ctx.per_step_ps), fact("steps measured", ctx.n)]
    if isinstance(batch, int):
        facts.insert(0, fact("batch size", batch))
    title = (f"Small steps: {fixed_ps / 1e9:.2f} ms of fixed cost per step for {graph / 1e9:.2f} ms of graph work"
             + (f" (batch size {batch})" if isinstance(batch, int) else ""))
    more = f" (now {batch})" if isinstance(batch, int) else ""
    # With many steps per call the fixed cost is paid once per call: a step keeps its graph time.
    # On JAX each batch still makes its own jitted call, and the device runs its work: dispatched
    # asynchronously, the two overlap, and the longer sets the pace.
    kept = max(graph, _device_ps(ctx)) if ctx.jax else graph
    p = projection.kept(ctx, kept + ctx.tl.input.sum() / ctx.n, "dispatch",
                        "its graph work and input wait: the per-step fixed cost is paid once per call of many steps"
                        + (", and the device's work, which the jitted calls now overlap" if ctx.jax else ""))
    return [Finding("small_steps", title, share, tuple(facts), fix_for("small_steps", ctx.loop, spe=spe, batch=more),
                    p.step_ps, "host_overhead", subject="step", **p.fields())]


def graph_ps(ctx: Context) -> float:
    """The graph's run per step: the executor's function run where the trace has it (its
    kernel's span also holds per-call set-up that many steps per call amortize), and its ops."""
    start, end = np.asarray(ctx.steps.starts, np.int64), np.asarray(ctx.steps.ends, np.int64)
    run = "FunctionRun" if ctx.trace.codes(["FunctionRun"]) else "KernelAndDeviceFunc::Run"
    return within(ctx, (run,), start, end, exact=True, extra=ctx.tl.busy).sum() / ctx.n


def _jax_call_ps(ctx: Context) -> float:
    """The jitted calls' own time per step (their dispatch; the device runs the work after)."""
    rows = jit_calls(ctx)
    return float(ctx.trace.events["dur_ps"][rows].sum()) / ctx.n


def _device_ps(ctx: Context) -> float:
    busy = ctx.tl.device_busy if ctx.tl.device_busy is not None else ctx.tl.compute
    return float(busy.sum()) / ctx.n
