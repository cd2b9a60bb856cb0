"""Keras on JAX called once per batch: each `predict` (or `fit`, `evaluate`) call builds its data
adapter, epoch iterator and callback list around a step of microseconds, as JAX's Python tracer
shows (`$trainer.py:652 predict` holding one `iterator_step`)."""

from __future__ import annotations

import re

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for

_CALL = re.compile(r"\$trainer\.py:\d+ (?P<call>predict|evaluate|fit)\Z")
MAX_STEPS_PER_CALL = 2  # more steps per call amortise its set-up: not a per-call cost


def detect(ctx: Context) -> list[Finding]:
    if not ctx.keras_jax or ctx.steps.kind not in ("marker", "function") or ctx.n < 2:
        return []
    ev = ctx.trace.events
    rows = ctx.rows_named(lambda n: _CALL.match(n) is not None)
    rows = rows[ctx.main_thread[rows]]
    if len(rows) < 2:
        return []
    start = ev["start_ps"][rows]
    end = start + ev["dur_ps"][rows]
    steps_s, steps_e = np.asarray(ctx.steps.starts, np.int64), np.asarray(ctx.steps.ends, np.int64)
    # Steps inside each call, and the call's own time around them.
    first = np.searchsorted(steps_s, start, side="left")
    last = np.searchsorted(steps_s, end, side="left")
    per_call = last - first
    holding = per_call > 0
    if not holding.any() or np.median(per_call[holding]) > MAX_STEPS_PER_CALL:
        return []
    stepped = np.concatenate([[0], np.cumsum(steps_e - steps_s)])
    inner = stepped[last] - stepped[first]
    # Only the time inside the measured window counts (the first call began before the first step).
    clipped = np.minimum(end, steps_e[-1]) - np.maximum(start, steps_s[0])
    own = np.maximum(clipped - inner, 0)[holding]
    share = min(float(own.sum()) / ctx.wall_ps, ctx.breakdown.idle + ctx.breakdown.host_overhead)
    call = _CALL.match(ctx.trace.names[int(ev["name"][rows[0]])])["call"]
    per = float(own.mean())
    facts = (fact("calls", int(holding.sum())), fact("steps per call", float(np.median(per_call[holding]))),
             ms_fact(f"Keras' work per {call}() call around its steps", per),
             ms_fact("the steps themselves, per call", float(inner[holding].mean())),
             pct_fact("share of wall time", share))
    title = f"model.{call}() per batch: {per / 1e9:.2f} ms of Keras' per-call work around each call's steps"
    p = projection.removed(ctx, float(own.sum()), f"Keras' per-call work around each {call}() call's steps")
    return [Finding("per_call_overhead", title, share, facts, fix_for("per_call_jax", call, call=call),
                    p.step_ps, "idle", subject=f"model.{call}", **p.fields())]
