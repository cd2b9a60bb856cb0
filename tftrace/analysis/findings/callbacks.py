"""Callbacks that cost time on every step (timed per step by analysis/hooks.py)."""

from __future__ import annotations

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
        p = projection.removed(ctx, h.steady_ps, f"{label(h)}'s time on every step")
        out.append(Finding("callback", f"Callback {label(h)} takes {ms(per)} on every step", share, facts,
                           fix_for("callback", cb=h.callback, hook=h.hook), p.step_ps,
                           "host_overhead", subject=f"{h.callback}.{h.hook}", **p.fields()))
    return out
