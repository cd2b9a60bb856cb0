"""Callbacks' hooks, timed per iteration (a step and the gap after it): from the marks
TraceCallback puts around every other callback's hooks while it captures (`tftrace callback
<Class>.<hook>`), or from the hooks JAX's Python tracer saw Keras' callback list call."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tftrace.model.names import CALLBACK_MARK as PREFIX


@dataclass(frozen=True)
class Hook:
    callback: str
    hook: str
    per_step: np.ndarray  # ps in each step's iteration (the step and the gap after it)
    iterations: int = -1  # iterations the window holds whole (-1: all); the last has no gap after it

    @property
    def steady_ps(self) -> int:
        """The time it takes on a typical step (median), every step: what a steady cost is."""
        n = len(self.per_step) if self.iterations < 0 else self.iterations
        return int(np.median(self.per_step[:n])) * n if n else 0

    @property
    def spikes_ps(self) -> int:
        return int(self.per_step.sum()) - self.steady_ps


def hooks(ctx) -> list[Hook]:
    """Every marked callback hook, its time per iteration (step plus the gap after it); with no
    marks, the hooks JAX's Python tracer saw Keras' callback list call."""
    rows = ctx.rows_named(lambda n: n.startswith(PREFIX))
    if not len(ctx.tl.dur):
        return []
    if not len(rows):
        return _traced_hooks(ctx)
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


# Keras' CallbackList calls each callback's hook from here (`$callback_list.py:194 on_train_batch_end`).
_CALLBACK_LIST = "callback_list.py:"
_HOOK = re.compile(r"\$(?P<file>\S+?):(?P<line>\d+) (?P<hook>on_(?:train|test|predict)_batch_(?:begin|end))\Z")


def _traced_hooks(ctx) -> list[Hook]:
    """Python tracer events of callbacks' batch hooks (not the callback list's own), inside the
    callback list's calls: each callback by where its hook is defined."""
    if not ctx.trace.has_prefix("$" + _CALLBACK_LIST):
        return []
    ev = ctx.trace.events
    outer = ctx.rows_named(lambda n: n.startswith("$" + _CALLBACK_LIST) and _HOOK.match(n) is not None)
    outer = outer[ctx.main_thread[outer]]
    if not len(outer):
        return []
    inner = ctx.rows_named(lambda n: _HOOK.match(n) is not None and not n.startswith("$" + _CALLBACK_LIST))
    inner = inner[ctx.main_thread[inner]]
    o_start = np.sort(ev["start_ps"][outer])
    o_end = (ev["start_ps"][outer] + ev["dur_ps"][outer])[np.argsort(ev["start_ps"][outer], kind="stable")]
    start = ev["start_ps"][inner]
    k = np.searchsorted(o_start, start, side="right") - 1
    inside = (k >= 0) & (start < o_end[np.maximum(k, 0)])
    inner, start = inner[inside], start[inside]
    step = np.searchsorted(np.asarray(ctx.steps.starts, np.int64), start, side="right") - 1
    # Hooks run between steps: the one after the last step lies outside the measured window.
    ok = (step >= 0) & (start < max(ctx.steps.ends))
    out = []
    names = ev["name"][inner]
    for code in sorted(set(names[ok].tolist())):
        mine = ok & (names == code)
        per_step = np.bincount(step[mine], ev["dur_ps"][inner][mine], minlength=len(ctx.tl.dur)).astype(np.int64)
        m = _HOOK.match(ctx.trace.names[code])
        whole = len(ctx.tl.dur) - 1 if m["hook"].endswith("_end") else len(ctx.tl.dur)
        out.append(Hook(f"{m['file']}:{m['line']}", m["hook"], per_step[:len(ctx.tl.dur)], max(whole, 1)))
    return out


def label(h: Hook) -> str:
    """`Class.hook` for a marked hook; `hook (file.py:12)` for one seen by the Python tracer."""
    return f"{h.hook} ({h.callback})" if ":" in h.callback else f"{h.callback}.{h.hook}"
