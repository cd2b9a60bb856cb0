"""Callbacks that cost time on every step (timed per step by analysis/hooks.py)."""

from __future__ import annotations

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.hooks import hooks, label


def detect(ctx: Context) -> list[Finding]:
    """Callbacks that cost time on every step (spikes on a few steps are stalls, see stalls.py)."""
    out = []
    for h in ctx.once(hooks):
        share = h.steady_ps / ctx.wall_ps
        if share <= 0:
            continue
        per = h.steady_ps / ctx.n
        facts = (fact("callback", h.callback), fact("hook", h.hook), ms_fact("per step", per),
                 pct_fact("share of the step", per / ctx.per_step_ps), fact("steps measured", ctx.n))
        p = _projection(ctx, h)
        out.append(Finding("callback", f"Callback {label(h)} takes {ms(per)} on every step", share, facts,
                           fix_for("callback", cb=h.callback, hook=h.hook), p.step_ps,
                           "host_overhead", subject=f"{h.callback}.{h.hook}", **p.fields()))
    return out


HEAVY = 0.2  # of the hook's longest: a step it takes at least this much in is one it runs heavily in


def _projection(ctx: Context, h) -> projection.Projection:
    """The step without the callback: where its hook runs heavily in some steps only (a save every
    other batch), what those steps take over the steps it leaves alone, which holds what its work
    leaves behind in the step too (files written, memory freed); else its time on every step."""
    per, iters = h.per_step, ctx.tl.iterations
    n = min(len(per), len(iters))
    heavy = per[:n] >= HEAVY * per[:n].max() if n and per[:n].max() > 0 else per[:n] > 0
    light = ~heavy
    if heavy.sum() and light.sum() >= 2:
        excess = float((iters[:n][heavy] - float(np.median(iters[:n][light]))).clip(min=0).sum())
        if excess > h.steady_ps:
            return projection.removed(ctx, excess, f"what the {int(heavy.sum())} steps {label(h)} runs heavily in take "
                                                   "over the steps it leaves alone")
    return projection.removed(ctx, h.steady_ps, f"{label(h)}'s time on every step")
