"""The gaps between steps no other cause explains: Keras' loop and callbacks in fit and
evaluate; your own Python between calls in a predict loop."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.where import hottest_fact


def detect(ctx: Context, explained: float) -> list[Finding]:
    share = ctx.breakdown.idle - explained
    if ctx.loop == "custom" or share <= 0:
        return []
    gaps = max(len(ctx.tl.dur) - 1, 1)
    per_gap = ctx.tl.idle.sum() / gaps * (share / ctx.breakdown.idle)
    where, title = hottest_fact(ctx)
    if ctx.loop == "keras":
        facts = (pct_fact("share of wall time between steps", share), ms_fact("per gap", per_gap),
                 fact("in Keras' loop and callbacks"), *where)
        p = projection.removed(ctx, share * ctx.wall_ps, "the time between steps in Keras' loop and callbacks")
        return [Finding("idle", "Gaps between steps" + title, share, facts, fix_for("gaps", "keras"),
                        p.step_ps, "idle", subject="between steps", **p.fields())]
    framework = {"torch_xla": "PyTorch/XLA's runtime", "torch": "PyTorch's profiled ops", "jax": "JAX"}.get(
        ctx.idiom(), "TensorFlow")
    facts = (ms_fact(f"per iteration outside {framework}", per_gap), pct_fact("share of wall time", share),
             fact("your Python between calls, such as loading data"), *where)
    side = share * ctx.per_step_ps
    p = projection.overlap(ctx, side, ctx.per_step_ps - side, "your Python between iterations", "the step")
    return [Finding("idle", "Your Python between iterations" + title, share, facts,
                    fix_for("between_calls", ctx.idiom("predict")),
                    p.step_ps, "idle", subject="between steps", **p.fields())]
