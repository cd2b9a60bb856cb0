"""Host-to-device copies the device waits on (its input part on GPU and TPU runs): how many a step
makes, and on JAX which arrays, from the runtime's `BufferFromHostBuffer(f32[512,1024])` events."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for

_PUT = "BufferFromHostBuffer("  # PJRT making a device buffer from host memory; the name holds its shape
_H2D = "MemcpyH2D"


def host_to_device(ctx: Context) -> Finding:
    b, tl = ctx.breakdown, ctx.tl
    facts = [pct_fact("share of step time the device only copies input in", b.input),
             ms_fact("per step", tl.input.sum() / ctx.n)]
    copies = _per_step(ctx, lambda name: name.endswith(_H2D) and name.startswith(("kernel:", _H2D)), device=True)
    if copies:
        facts.append(fact("host-to-device copies per step", round(copies, 1)))
    arrays = _arrays(ctx)
    if arrays:
        facts.append(fact("arrays put on the device per step", arrays))
    loop = "keras_jax" if ctx.keras_jax else "jax" if ctx.jax else "any"
    title = "Host-to-device copies" + (f": {round(copies)} per step" if copies >= 1 else "")
    return Finding("input", title, b.input, tuple(facts), fix_for("h2d", loop), ctx.projected(tl.input.sum()), "input")


def _per_step(ctx: Context, predicate, device: bool) -> float:
    """Events whose name satisfies `predicate`, inside steps, per step (on device lines, or the
    host's)."""
    rows = ctx.rows_named(predicate)
    if not len(rows):
        return 0.0
    on = ctx.trace.on_lines(lambda ln: ln.on_device == device)[rows]
    rows = rows[on]
    return float((ctx.inside(ctx.trace.events["start_ps"][rows]) >= 0).sum()) / ctx.n


def _arrays(ctx: Context) -> str:
    """The shapes PJRT copied from the host inside steps, the most per step first."""
    rows = ctx.rows_named(lambda name: _PUT in name)
    if not len(rows):
        return ""
    rows = rows[ctx.inside(ctx.trace.events["start_ps"][rows]) >= 0]
    names = Counter(ctx.trace.names[c].split(_PUT, 1)[1].rstrip(")") for c in ctx.trace.events["name"][rows].tolist())
    return ", ".join(f"{shape} x{count / ctx.n:g}" for shape, count in names.most_common(4))
