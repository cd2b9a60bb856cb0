"""Callbacks: time each Keras callback's hooks take per step, from the marks TraceCallback puts
around every other callback's hooks while it captures (`tftrace callback <Class>.<hook>`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for
from tftrace.names import CALLBACK_MARK as PREFIX


@dataclass(frozen=True)
class Hook:
    callback: str
    hook: str
    per_step: np.ndarray  # ps in each step's iteration (the step and the gap after it)

    @property
    def steady_ps(self) -> int:
        """The time it takes on a typical step (median), every step: what a steady cost is."""
        return int(np.median(self.per_step)) * len(self.per_step)

    @property
    def spikes_ps(self) -> int:
        return int(self.per_step.sum()) - self.steady_ps


def hooks(ctx: Context) -> list[Hook]:
    """Every marked callback hook, its time per iteration (step plus the gap after it)."""
    rows = ctx.rows_named(lambda n: n.startswith(PREFIX))
    if not len(rows) or not len(ctx.tl.dur):
        return []
    ev = ctx.trace.events
    start = ev["start_ps"][rows]
    step = np.searchsorted(np.asarray(ctx.steps.starts, np.int64), start, side="right") - 1
    ok = step >= 0
    out = []
    names = ev["name"][rows]
    for code in sorted(set(names.tolist())):
        mine = ok & (names == code)
        per_step = np.bincount(step[mine], ev["dur_ps"][rows][mine], minlength=len(ctx.tl.dur)).astype(np.int64)
        cls, _, hook = ctx.trace.names[code][len(PREFIX):].partition(".")
        out.append(Hook(cls, hook, per_step[:len(ctx.tl.dur)]))
    return out


def detect(ctx: Context) -> list[Finding]:
    """Callbacks that cost time on every step (spikes on a few steps are stalls, see stalls.py)."""
    out = []
    for h in ctx.hooks:
        share = h.steady_ps / ctx.wall_ps
        if share <= 0:
            continue
        per = h.steady_ps / ctx.n
        facts = (fact("callback", h.callback), fact("hook", h.hook), ms_fact("per step", per),
                 pct_fact("share of the step", per / ctx.per_step_ps), fact("steps measured", ctx.n))
        out.append(Finding("callback", f"Callback {h.callback}.{h.hook} takes {ms(per)} on every step", share, facts,
                           fix_for("callback", cb=h.callback, hook=h.hook), ctx.projected(h.steady_ps),
                           "host_overhead"))
    return out
