"""Host overhead no named cause explains (and, on device runs, the device idling for the host):
the only generic finding, for what is left once every detector has spoken."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.host_calls import host_call_fact
from tftrace.analysis.findings.per_call import predict_python
from tftrace.analysis.findings.where import hottest_fact


def detect(ctx: Context, explained: float) -> list[Finding]:
    rest = ctx.breakdown.host_overhead - explained
    if rest <= 0:
        return []
    if ctx.tl.device_busy is not None:
        where, in_fn = hottest_fact(ctx, ("inside steps",))
        if not where:
            where, in_fn = host_call_fact(ctx, rest * ctx.wall_ps)
        facts = (pct_fact("share of step time the device runs no op and no copy while the host works", rest),
                 fact("launches, Python, framework"), *where)
        return [Finding("device_idle", "Device idle, waiting for the host" + in_fn, rest, facts, fix_for("device_idle"),
                        ctx.projected(rest * ctx.wall_ps), "host_overhead")]
    if ctx.overhead.pipeline_ps and ctx.loop == "predict":
        return predict_python(ctx, rest)
    where, in_fn = hottest_fact(ctx, ("inside steps",))
    if not where:
        where, in_fn = host_call_fact(ctx, rest * ctx.wall_ps)
    facts = (pct_fact("share of step time with no op, no input wait and no named cause", rest),
             fact("Python, dispatch, launches"), *where)
    return [Finding("host_overhead", "Python and framework time inside steps" + in_fn, rest, facts,
                    fix_for("host_overhead"), ctx.projected(rest * ctx.wall_ps), "host_overhead")]
