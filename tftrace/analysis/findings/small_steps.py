"""Small steps: each step's graph runs briefly, and the fixed cost of getting it started (Keras'
loop, the tf.function call, dispatch) takes most of the step."""

from __future__ import annotations

import math

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.calls import within
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for

MAX_GRAPH_MS = 5.0  # a step whose graph runs longer is not "small": its fixed cost matters less
MIN_FIXED = 0.5  # the fixed cost must be at least half the step


def detect(ctx: Context, explained: float) -> list[Finding]:
    b = ctx.breakdown
    # Only Keras' own loop: there the gaps between steps are its fixed cost too; in the user's
    # loops they are the user's Python (step_python, gaps).
    if ctx.loop != "keras" or ctx.eager or ctx.steps.kind not in ("marker", "function") or len(ctx.tl.dur) < 3 \
            or b.host_overhead + b.idle - explained < MIN_FIXED:
        return []
    start, end = np.asarray(ctx.steps.starts, np.int64), np.asarray(ctx.steps.ends, np.int64)
    # The graph's run: the executor's function run where the trace has it (its kernel's span also
    # holds per-call set-up that many steps per call amortize), and the ops it ran.
    run = "FunctionRun" if ctx.trace.codes(["FunctionRun"]) else "KernelAndDeviceFunc::Run"
    graph = within(ctx, (run,), start, end, exact=True, extra=ctx.tl.busy)
    graph_ps = graph.sum() / ctx.n
    fixed_ps = ctx.per_step_ps - graph_ps
    share = min(b.host_overhead + b.idle - explained, fixed_ps / ctx.per_step_ps)  # what no cause claimed
    if graph_ps > MAX_GRAPH_MS * 1e9 or share < MIN_FIXED:
        return []
    batch = ctx.trace.sidecar.get("batch_size")
    spe = 2 ** min(max(math.ceil(math.log2(max(fixed_ps / max(graph_ps, 1) * 10, 2))), 3), 10)
    facts = [ms_fact("graph time per step (ops and executor)", graph_ps), ms_fact("fixed cost per step", fixed_ps),
             pct_fact("fixed cost of the step", fixed_ps / ctx.per_step_ps), fact("steps measured", ctx.n)]
    if isinstance(batch, int):
        facts.insert(0, fact("batch size", batch))
    title = (f"Small steps: {fixed_ps / 1e9:.2f} ms of fixed cost per step for {graph_ps / 1e9:.2f} ms of graph work"
             + (f" (batch size {batch})" if isinstance(batch, int) else ""))
    more = f" (now {batch})" if isinstance(batch, int) else ""
    # With many steps per call the fixed cost is paid once per call: a step keeps its graph time.
    projected = round(graph_ps + ctx.tl.input.sum() / ctx.n)
    return [Finding("small_steps", title, share, tuple(facts), fix_for("small_steps", ctx.loop, spe=spe, batch=more),
                    projected, "host_overhead")]
