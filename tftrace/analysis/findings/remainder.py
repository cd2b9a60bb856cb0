"""Host time inside steps that no named cause explains (on device runs: the device idling for
the host), by owner: the ops the host dispatches one by one and whose they are (op runs per
step, what each costs, the owners with the most runs), the user's Python that holds it, or the
framework call that does; never the step function itself."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.host_calls import host_call_fact
from tftrace.analysis.findings.per_call import predict_python
from tftrace.analysis.findings.where import hottest_fact

_OP_OWNERS = ("layer", "optimizer", "metric", "regularizer", "loss", "code", "step", "copy", "collective", "debug")
DISPATCH_SHARE = 0.5  # of the unexplained host time: op dispatch must hold this much to be named as its owner
MIN_RUNS = 20  # op runs per step: fewer, and host time between them is not the cost of dispatching them
MAX_RUN_US = 200.0  # a longer gap per op run is something else than scheduling it
_TOP_RUNS = 3


def detect(ctx: Context, explained: float) -> list[Finding]:
    rest = ctx.breakdown.host_overhead - explained
    if rest <= 0:
        return []
    device = ctx.tl.device_busy is not None
    if not device and ctx.overhead.pipeline_ps and ctx.loop == "predict":
        return predict_python(ctx, rest)
    where, in_fn = hottest_fact(ctx, ("inside steps",))
    dispatch = _dispatch(ctx, rest)
    lead = ("share of step time the device runs no op and no copy while the host works" if device else
            "share of step time with no op, no input wait and no named cause")
    if dispatch is not None and not where:
        title, facts = dispatch
        kind = "device_idle" if device else "host_overhead"
        fix = fix_for("dispatch", ctx.idiom(ctx.loop))
        return [Finding(kind, title, rest, (pct_fact(lead, rest), *facts), fix, ctx.projected(rest * ctx.wall_ps),
                        "host_overhead")]
    if not where:
        where, in_fn = host_call_fact(ctx, rest * ctx.wall_ps)
    facts = (pct_fact(lead, rest), *where, *_owners_fact(ctx))
    if device:
        return [Finding("device_idle", "Device idle, waiting for the host" + in_fn, rest, facts,
                        fix_for("device_idle", ctx.idiom()),
                        ctx.projected(rest * ctx.wall_ps), "host_overhead")]
    title = ("Python time inside steps" + in_fn) if in_fn and where else "Framework time inside steps, outside any op"
    return [Finding("host_overhead", title, rest, facts, fix_for("host_overhead", ctx.idiom()), ctx.projected(rest * ctx.wall_ps),
                    "host_overhead")]


def _dispatch(ctx: Context, rest: float):
    """(title, facts) when the ops the host dispatches one by one hold most of this time: how
    many per step, what each costs, and whose they are; None otherwise."""
    rows = [r for r in ctx.owners.rows if r.kind in _OP_OWNERS]
    host = [(r, r.per_step_ps - r.compute_ps) for r in rows if r.per_step_ps > r.compute_ps]
    dispatch_ps = sum(ps for _r, ps in host)
    if dispatch_ps < DISPATCH_SHARE * rest * ctx.per_step_ps or not host:
        return None
    runs = sum(r.runs for r in rows)
    if runs < MIN_RUNS:
        return None
    per_run_us = dispatch_ps / runs / 1e6
    if per_run_us > MAX_RUN_US:
        return None
    by_owner: dict[str, float] = {}
    for r in rows:
        label = r.owner
        by_owner[label] = by_owner.get(label, 0.0) + r.runs
    top = sorted(by_owner.items(), key=lambda kv: (-kv[1], kv[0]))[:_TOP_RUNS]
    lead, lead_runs = top[0]
    title = (f"Host time dispatching {runs:.0f} op runs per step ({per_run_us:.1f} us each), "
             f"{lead_runs / runs:.0%} of them run by {lead}")
    facts = (fact("op runs per step", round(runs, 1)), fact("host time per op run", round(per_run_us, 2), "us"),
             fact("owners with the most op runs", ", ".join(f"{k}: {v:.0f}" for k, v in top)))
    return title, facts


def _owners_fact(ctx: Context) -> tuple:
    """The framework's own time, as the owners table holds it."""
    fw = ctx.owners.row("framework")
    if fw is None or fw.per_step_ps <= 0:
        return ()
    return (fact("framework time per step outside any op", round(fw.per_step_ps / 1e9, 3), "ms"),)
