"""Retracing: a tf.function traced again inside the measured steps (a new Python value or
shape in its arguments is a new signature), paying graph building and a new concrete
function's set-up on the step's path."""

from __future__ import annotations

import re

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact
from tftrace.analysis.findings.calls import Calls, function_calls
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for

_CONCRETE = re.compile(r"EagerLocalExecute: __inference_(.+)_\d+\Z")


def detect(ctx: Context) -> list[Finding]:
    return traced_findings(ctx, ctx.once(function_calls), xla=False)


def traced_findings(ctx: Context, calls: Calls, xla: bool) -> list[Finding]:
    """One finding per function whose calls traced inside steps (with `xla`: those XLA compiled)."""
    sel = calls.traced & (calls.step >= 0) & (calls.xla == xla)
    out = []
    for code in sorted(set(calls.name[sel].tolist())):
        mine = sel & (calls.name == code)
        name = ctx.trace.names[code]
        count, total = int(mine.sum()), int((calls.name == code).sum())
        cost = int(calls.cost_ps[mine].sum())
        if cost <= 0:
            continue
        facts = [fact(f"calls of {name} that traced", f"{count} of {total}"),
                 ms_fact("graph building per trace", calls.tracing_ps[mine].mean())]
        if xla:
            facts.append(ms_fact("XLA compilation per call", calls.compile_ps[mine].mean()))
        versions = _concrete_functions(ctx, name)
        if versions > 1:
            facts.append(fact("new concrete functions in the window", versions))
        facts += [ms_fact("cost per traced call beyond running its graph", cost / count),
                  fact("tracing_count at the last call", _tracing_count(ctx, code))]
        kind = "recompilation" if xla else "retracing"
        what = "recompiled by XLA" if xla else "retraced"
        title = (f"{name} {what} on {count} of {total} calls ({ms(cost / count)} each): "
                 + ("a new input shape is a new XLA program" if xla else "a new Python value or shape is a new graph"))
        p = projection.removed(ctx, cost, f"{name}'s {'compiling' if xla else 'tracing'} beyond running its graph")
        out.append(Finding(kind, title, cost / ctx.wall_ps, tuple(f for f in facts if f.value not in (None, -1)),
                           fix_for(kind, fn=name), p.step_ps, "host_overhead", subject=name, **p.fields()))
    return out


def _concrete_functions(ctx: Context, name: str) -> int:
    """Distinct `__inference_<name>_N` functions run in the window: one per trace."""
    found = {n for n in ctx.trace.names if (m := _CONCRETE.match(n)) and m.group(1) == name}
    return len(found)


def _tracing_count(ctx: Context, code: int) -> int:
    st = ctx.trace.stats
    rows = np.flatnonzero((ctx.trace.events["name"][st["event"]] == code) & (st["tracing_count"] >= 0))
    return int(st["tracing_count"][rows].max()) if len(rows) else -1
