"""Per-step Python in a custom loop: the time between calls of the step function, where your
loop converts, computes in numpy, logs or prints, and TensorFlow runs nothing of the step."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.where import hottest_fact


def detect(ctx: Context) -> list[Finding]:
    if ctx.loop != "custom" or ctx.steps.kind not in ("function", "marker") or ctx.breakdown.idle <= 0:
        return []
    fn = ctx.steps.names[0] if ctx.steps.kind == "function" else f"the '{ctx.steps.names[0]}' step"
    gaps = ctx.tl.idle.sum()
    per = gaps / max(len(ctx.tl.dur) - 1, 1)
    facts = [ms_fact(f"Python between calls of {fn}, per step", per), ms_fact("the call itself, per step",
                                                                            ctx.tl.dur.mean()),
             pct_fact("share of the loop's time", ctx.breakdown.idle)]
    eager = _eager_between(ctx)
    if eager:
        facts.append(fact("eager ops between calls (.numpy() of variables, tensor math outside the step)",
                          ", ".join(f"{t} x{c}" for t, c in eager[:4])))
    where, in_fn = hottest_fact(ctx)
    facts += where
    title = f"Your Python between {fn} calls: {ms(per)} per step{in_fn}"
    p = projection.removed(ctx, gaps, f"your Python between calls of {fn}")
    return [Finding("step_python", title, ctx.breakdown.idle, tuple(facts),
                    fix_for("step_python", ctx.idiom(), fn=fn), p.step_ps,
                    "idle", subject=fn, **p.fields())]


def _eager_between(ctx: Context) -> list[tuple[str, int]]:
    """Eager ops run between the step calls, by type, most frequent first."""
    codes = [c for c, op in ctx.trace.ops.items() if op.kind == "eager"]
    if not codes or not ctx.steps.starts:
        return []
    ev = ctx.trace.events
    rows = np.flatnonzero(ctx.trace.named(codes))
    start = ev["start_ps"][rows]
    between = (ctx.inside(start) < 0) & (start > ctx.steps.starts[0]) & (start < ctx.steps.ends[-1])
    counts = Counter(ctx.trace.ops[c].type for c in ev["name"][rows[between]].tolist())
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

