"""What named owners claim of the host's time per iteration: callbacks' hooks (marked by
TraceCallback or seen by JAX's Python tracer), the user's Python functions (their own time and
the library calls they make), and the profiler's own time (analysis/profiler_cost)."""

from __future__ import annotations

import os

import numpy as np

from tftrace.analysis.breakdown import is_pipeline_op
from tftrace.analysis.hooks import hooks, label
from tftrace.analysis.owners.key import OwnerKey
from tftrace.model.names import CALLBACK_MARK

_HOOK_PREFIX = "on_"  # a callback's hook, seen as a Python function: the callback owns it already


def host_claims(ctx, key, parts: dict) -> dict[str, dict[int, tuple[np.ndarray, float]]]:
    """{part: {owner column: (ps per iteration, calls per step)}} for host_overhead and idle."""
    out: dict[str, dict[int, tuple[np.ndarray, float]]] = {"host_overhead": {}, "idle": {}}
    _pipeline_builds(ctx, key, out)
    _callbacks(ctx, key, out)
    _python(ctx, key, parts, out, hooked=bool(out["host_overhead"] or out["idle"]))
    _profiler(ctx, key, parts, out)
    return out


def _pipeline_builds(ctx, key, out) -> None:
    """The main thread building the input pipeline (`MakeIterator` and the ops that make datasets):
    host time with no op of the model running, which is not the next op's dispatch. A call's
    first step holds it (the iterator of a fit); so does a step that builds a pipeline anew."""
    tl, trace = ctx.tl, ctx.trace
    codes = [c for c, op in trace.ops.items() if is_pipeline_op(op)]
    if not codes:
        return
    rows = np.flatnonzero(trace.named(codes) & ctx.main_thread)
    if not len(rows):
        return
    ev = trace.events
    start = ev["start_ps"][rows]
    it = np.searchsorted(tl.start, start, side="right") - 1
    ok = it >= 0
    inside = ctx.inside(start) >= 0
    n = len(tl.dur)
    own = ev["self_ps"][rows].astype(np.float64)  # nested pipeline ops: each its own time, no double count
    k = key(OwnerKey("input", "building the input pipeline"))
    for part, where in (("host_overhead", inside), ("idle", ~inside)):
        sel = ok & where
        if sel.any():
            out[part][k] = (np.bincount(it[sel], own[sel], minlength=n)[:n], sel.sum() / n)


def _callbacks(ctx, key, out) -> None:
    """Marked hooks by where each event falls (inside a step or in the gap after it); hooks the
    Python tracer saw run between steps (Keras on JAX calls them after the step returns)."""
    tl, ev = ctx.tl, ctx.trace.events
    n = len(tl.dur)
    marked = ctx.trace.has_prefix(CALLBACK_MARK)
    rows = ctx.rows_named(lambda name: name.startswith(CALLBACK_MARK)) if marked else np.zeros(0, np.int64)
    if len(rows):
        start = ev["start_ps"][rows]
        it = np.searchsorted(tl.start, start, side="right") - 1
        inside = ctx.inside(start) >= 0
        ok = it >= 0
        for code in sorted(set(ev["name"][rows].tolist())):
            mine = ok & (ev["name"][rows] == code)
            name = ctx.trace.names[code][len(CALLBACK_MARK):]
            k = key(OwnerKey("callback", name))
            for part, where in (("host_overhead", inside), ("idle", ~inside)):
                sel = mine & where
                if sel.any():
                    per = np.bincount(it[sel], ev["dur_ps"][rows][sel], minlength=n)[:n].astype(np.float64)
                    out[part][k] = (per, sel.sum() / n)
        return
    for h in ctx.once(hooks):
        out["idle"][key(OwnerKey("callback", label(h)))] = (h.per_step.astype(np.float64), 1.0)


def _python(ctx, key, parts: dict, out, hooked: bool) -> None:
    """The user's functions inside steps and between them, by their own time (innermost of the
    user's frames, the library calls they make counted to them), spread over the iterations as
    the part is; a hook's time is its callback's."""
    profile = ctx.python
    if profile is None or not profile.rows:
        return
    for part, where in (("host_overhead", "inside steps"), ("idle", "between steps")):
        budget = parts[part]
        total = budget.sum()
        if total <= 0:
            continue
        for r in profile.rows:
            if r.where != where or r.owner != "user" or r.own_ps <= 0 or r.thread != "main":
                continue
            if hooked and r.function.startswith(_HOOK_PREFIX):
                continue
            k = key(OwnerKey("python", f"{r.function} ({os.path.basename(r.file)}:{r.line})"))
            per = budget * (r.own_ps / total)
            old = out[part].get(k)
            out[part][k] = (per + old[0], 0.0) if old else (per, 0.0)


def _profiler(ctx, key, parts: dict, out) -> None:
    """The profiler's own time, by source (analysis/profiler_cost: JAX's Python tracer, the op and
    call events XLA:CPU, PyTorch and TensorFlow record, the rest of TensorFlow's recording measured
    against untraced steps, tftrace's hooks and sampler), in each step, of its host overhead, and
    in the gap after it, of its idle time: the capture's own work, never the program's."""
    cost = ctx.profiler
    if cost is None:
        return
    host, idle = parts["host_overhead"].copy(), parts["idle"].copy()
    for source in cost.sources:
        k = key(OwnerKey("profiler", source.owner))
        took = np.minimum(source.step_ps, host)
        host -= took
        out["host_overhead"][k] = (took, 0.0)
        rest = np.minimum(np.r_[source.gap_ps[1:], 0], idle)  # an iteration's gap is the one after its step
        idle -= rest
        if rest.any():
            out["idle"][k] = (rest, 0.0)
