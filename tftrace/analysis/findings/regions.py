"""Your named Python work (`tftrace.region(name)`): step time it takes beyond ops and input."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, ms, ms_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for


def detect(ctx: Context) -> list[Finding]:
    out = []
    for name, ps in ctx.overhead.regions:
        facts = (ms_fact(f"inside tftrace.region('{name}') per step, running no TensorFlow op", ps / ctx.n),)
        side = ps / ctx.n
        p = projection.overlap(ctx, side, ctx.per_step_ps - side, f"region '{name}'", "the rest of the step")
        out.append(Finding("user_region", f"Your code in tftrace.region('{name}'): {ms(ps / ctx.n)} per step",
                           ps / ctx.wall_ps, facts, fix_for("user_region"), p.step_ps, "host_overhead", subject=name,
                           **p.fields()))
    return out
