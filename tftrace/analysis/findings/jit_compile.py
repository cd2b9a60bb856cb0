"""JAX compiling a jitted function again inside steps: a new input shape or static argument on
each call (`backend_compile_and_load` inside the call, on XLA's compiler threads after it)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.op_by_op import jit_calls
from tftrace.analysis.sums import distinct
from tftrace.model.names import jit_function

_COMPILES = ("backend_compile_and_load", "backend_compile")  # JAX's own TraceMe around XLA's compile
MIN_COMPILING = 2  # steps that compile: one is a warm-up, two a pattern


def detect(ctx: Context) -> list[Finding]:
    if not ctx.jax:
        return []
    ev = ctx.trace.events
    compiles = ctx.rows_named(lambda n: n in _COMPILES)
    compiles = compiles[ctx.main_thread[compiles]]
    if len(compiles) < MIN_COMPILING:
        return []
    calls = jit_calls(ctx)
    c_start, c_end = ev["start_ps"][calls], ev["start_ps"][calls] + ev["dur_ps"][calls]
    at = ev["start_ps"][compiles]
    # The jitted call each compile ran inside (-1: none, e.g. a compile outside steps).
    k = np.searchsorted(c_start, at, side="right") - 1
    ok = (k >= 0) & (at < c_end[np.maximum(k, 0)])
    compiling = distinct(k[ok])
    steps = distinct(ctx.inside(c_start[compiling]))
    steps = steps[steps >= 0]
    if len(steps) < MIN_COMPILING:
        return []
    names = Counter(jit_function(ctx.trace.names[c]) for c in ev["name"][calls[compiling]].tolist())
    fn = names.most_common(1)[0][0]
    plain = np.setdiff1d(np.arange(len(calls)), compiling)
    # A call that compiles costs what a call costs plus its tracing, lowering and compiling.
    usual = float(np.median(c_end[plain] - c_start[plain])) if len(plain) else 0.0
    lost = float(np.maximum((c_end - c_start)[compiling] - usual, 0).sum())
    share = min(lost / ctx.wall_ps, 1.0)
    facts = (fact("jitted function compiled again", fn), fact("steps that compiled", f"{len(steps)} of {ctx.n}"),
             ms_fact("tracing, lowering and compiling per compiling call", lost / len(compiling)),
             pct_fact("share of wall time", share))
    title = f"Recompilation: jax.jit compiles {fn} again in {len(steps)} of {ctx.n} steps"
    p = projection.removed(ctx, lost, f"{fn}'s tracing, lowering and compiling beyond a plain call")
    return [Finding("recompilation", title, share, facts, fix_for("recompilation_jax", fn=fn),
                    p.step_ps, "host_overhead", subject=fn, **p.fields())]
