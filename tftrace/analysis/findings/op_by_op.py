"""JAX ops dispatched one by one: an un-jitted training step, or Keras 3 on JAX with
`run_eagerly=True`, shows as many small jitted calls (`PjitFunction(matmul)`, `PjitFunction(add)`)
per step where a compiled step makes one."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.steps.found import outermost
from tftrace.model.names import JIT_CALL, jit_function

MIN_CALLS = 10  # jitted calls per step: fewer are a step's own call and a few helpers, not op-by-op dispatch


def detect(ctx: Context) -> list[Finding]:
    if not ctx.jax or ctx.steps.kind not in ("marker", "function") or ctx.steps.source.endswith("(jitted, one call per step)"):
        return []
    calls = _calls_per_step(ctx)
    if not calls or sum(calls.values()) < MIN_CALLS * ctx.n:
        return []
    b = ctx.breakdown
    per_step = sum(calls.values()) / ctx.n
    top = ", ".join(f"{fn} x{round(c / ctx.n)}" for fn, c in calls.most_common(4))
    keras = ctx.keras_jax
    facts = (fact("Keras runs the train step eagerly (run_eagerly=True)" if keras else
                  "the step is not jitted: each operation is its own small jitted call"),
             fact("jitted calls per step", round(per_step)), fact("most called", top),
             ms_fact("op time per step", ctx.tl.compute.sum() / ctx.n),
             pct_fact("share of step time in dispatch and Python", b.host_overhead))
    title = (f"run_eagerly=True: the train step runs op by op ({round(per_step)} jitted calls per step)" if keras else
             f"Un-jitted step: {round(per_step)} operations dispatched one by one per step")
    # Compiled, the step keeps its ops' and input's time (and the loop's gaps).
    p = projection.kept(ctx, (ctx.tl.compute.sum() + ctx.tl.input.sum() + ctx.tl.idle.sum()) / ctx.n, "dispatch",
                        "its ops, its input wait and the gaps between steps: jitted whole, no operation is "
                        "dispatched on its own")
    return [Finding("eager", title, b.host_overhead, facts, fix_for("eager_jax", "keras" if keras else "custom"),
                    p.step_ps, "host_overhead", subject="step", **p.fields())]


def _calls_per_step(ctx: Context) -> Counter:
    """Outermost jitted calls on the main thread inside steps, by function."""
    rows = jit_calls(ctx)
    return Counter(jit_function(ctx.trace.names[c]) for c in ctx.trace.events["name"][rows].tolist())


def jit_calls(ctx: Context) -> np.ndarray:
    """Rows of the outermost jitted calls on the main thread inside steps, in time order (JAX
    records a call twice, one event inside the other)."""
    codes = [c for c, n in enumerate(ctx.trace.names) if n.startswith(JIT_CALL)]
    if not codes:
        return np.zeros(0, np.int64)
    ev = ctx.trace.events
    rows = np.flatnonzero(ctx.trace.named(codes) & ctx.main_thread)
    rows = rows[np.argsort(ev["start_ps"][rows], kind="stable")]
    rows = rows[outermost(ev["start_ps"][rows], ev["dur_ps"][rows])]
    return rows[ctx.inside(ev["start_ps"][rows]) >= 0]
