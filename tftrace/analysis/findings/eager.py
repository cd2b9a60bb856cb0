"""Eager execution: the model's ops dispatched from Python one at a time (`run_eagerly=True`,
an undecorated training step, or Keras 3's `model(x)`)."""

from __future__ import annotations

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact, run_floor
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for

MIN_OPS = 10  # eager ops per step: fewer are the odd tensor made outside a compiled step, not eager execution
_WHY = {"keras": "Keras runs the step eagerly (run_eagerly=True): every op is dispatched from Python",
        "custom": "your training step is not a tf.function: every op is dispatched from Python",
        "predict": "model(x) in Keras 3 runs eagerly outside tf.function: every op is dispatched from Python"}


def detect(ctx: Context) -> list[Finding]:
    ov = ctx.overhead
    if not ctx.eager or not ov.eager_ps or ov.eager_count < MIN_OPS * ctx.n:
        return []
    b = ctx.breakdown
    # Everything in the step but the ops and the input wait is the price of dispatching op by op;
    # run as a graph, the step keeps its ops' own work and its input wait.
    share = b.host_overhead
    facts = (fact(_WHY[ctx.loop]), fact("eager ops per step", round(ov.eager_count / ctx.n)),
             ms_fact("op time per step", ctx.tl.compute.sum() / ctx.n),
             ms_fact("step time per step", ctx.tl.dur.sum() / ctx.n),
             pct_fact("share of step time in dispatch and Python", share))
    title = {"keras": "run_eagerly=True: the training step runs op by op",
             "custom": "Eager training step: ops dispatched one by one",
             "predict": "Eager execution: ops dispatched one by one"}[ctx.loop]
    floor = eager_floor(ctx)
    kept = graph_work(ctx, floor) + ctx.tl.input.sum() + ctx.tl.idle.sum()
    p = projection.kept(ctx, kept / ctx.n, "dispatch",
                        f"each op's typical run (its median) less what any run costs for running eagerly "
                        f"({floor / 1e6:.0f} us, the cheapest quarter of its eager runs), its input wait and the gaps "
                        "between steps: run as one graph, no op is dispatched from Python")
    return [Finding("eager", title, share, facts, fix_for("eager", ctx.loop), p.step_ps, "host_overhead",
                    subject="step", **p.fields())]


def eager_floor(ctx: Context) -> float:
    """What an eager op run costs for running eagerly, whatever it computes: the cheapest quarter
    of the step's eager runs (reads, shapes, scalars). In a graph those runs cost a few
    microseconds, or nothing where the graph fuses or prunes them."""
    return run_floor([e for e in ctx.table if e.eager])


def graph_work(ctx: Context, floor: float) -> float:
    """The eager ops' own work over the window, as a graph would run it: each op's typical run
    (the median of its runs inside the steps) less the floor any eager run costs, times its runs.
    The median, not the mean: a run the machine stretched (a preemption, the allocator, the
    collector) holds no work of the op's, and in an eager step a handful of them outweigh
    hundreds of small ops' work."""
    ev = ctx.trace.events
    codes = [c for c, op in ctx.trace.ops.items() if op.kind == "eager"]
    rows = np.flatnonzero(ctx.trace.named(codes)) if codes else np.zeros(0, np.int64)
    rows = rows[ctx.inside(ev["start_ps"][rows]) >= 0]
    if not len(rows):
        return 0.0
    names, own = ev["name"][rows], ev["self_ps"][rows].astype(np.float64)
    order = np.lexsort((own, names))
    names, own = names[order], own[order]
    first = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    counts = np.diff(np.r_[first, len(names)])
    lo, hi = own[first + (counts - 1) // 2], own[first + counts // 2]
    return float((counts * np.maximum((lo + hi) / 2 - floor, 0.0)).sum())
