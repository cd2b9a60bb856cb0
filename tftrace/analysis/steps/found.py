"""Find steps in any trace: root markers, Keras 3 batch events, step functions, device step
lines, or, with no marker at all, the whole window; and say which source was used."""

from __future__ import annotations

import re
from collections import Counter
import dataclasses
from dataclasses import dataclass

import numpy as np

from tftrace.analysis.steps.iterations import grow_calls
from tftrace.analysis.sums import exact_sums
from tftrace.model.events import Trace
from tftrace.model.names import JIT_CALL, is_input_event, jit_function

# tf.function names Keras runs once per step (or per `steps_per_execution` steps).
STEP_FUNCTIONS = ("multi_step_on_iterator", "one_step_on_iterator", "one_step_on_data_distributed",
                  "one_step_on_data", "train_function", "test_function", "predict_function",
                  "distributed_train_function", "run_step")
MIN_CALLS = 3  # a custom loop's step function must run at least this often to give steps
# Runtime events TensorFlow marks as roots itself; they are function calls, not user steps.
_IMPLICIT_ROOTS = ("FunctionRun", "SessionRun", "RunGraph", "ExecutorState::Process")


@dataclass(frozen=True)
class Steps:
    """Step windows in time order (picoseconds), with how they were found."""

    source: str  # e.g. "marker 'train'", "function 'one_step_on_data'", "window", "none"
    kind: str  # marker | function | device | window | none
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    numbers: tuple[int, ...]
    names: tuple[str, ...]
    note: str = ""

    @property
    def count(self) -> int:
        return len(self.starts)


def find_steps(trace: Trace) -> Steps:
    """The best step source this trace offers, in order of trust."""
    for finder in (_root_markers, _keras3_batches, _step_functions, _user_functions, _keras_jax_steps,
                   _device_steps, _device_modules, _jit_calls, _window):
        steps = finder(trace)
        if steps is not None:
            return steps
    return Steps("none", "none", (), (), (), (), "the trace holds no timed events")


def _from_rows(trace: Trace, mask: np.ndarray, source: str, kind: str, note: str = "") -> Steps:
    ev = trace.events.take(mask)
    order = np.argsort(ev["start_ps"], kind="stable")
    start = ev["start_ps"][order]
    end = start + ev["dur_ps"][order]
    numbers = _stat_at(trace, "step_num", np.flatnonzero(mask))[order]
    if (numbers < 0).all():
        numbers = np.arange(len(start))
    names = tuple(_NUMBERED.sub("", trace.names[c]) for c in ev["name"][order])
    start, end, numbers, names = _drop_nested(start, end, numbers, names)
    return Steps(source, kind, tuple(start.tolist()), tuple(end.tolist()), tuple(numbers.tolist()), names, note)


def _stat_at(trace: Trace, column: str, rows: np.ndarray) -> np.ndarray:
    """A stat's values at the given event rows (-1 where absent), from the sparse stat table
    (its rows are in event order)."""
    events = trace.stats["event"]
    where = np.searchsorted(events, rows)
    out = np.full(len(rows), -1, np.int64)
    ok = where < len(events)
    ok[ok] = events[where[ok]] == rows[ok]
    out[ok] = trace.stats[column][where[ok]]
    return out


def _drop_nested(start, end, numbers, names):
    """A step inside another step (a nested root) is part of it, not a step of its own."""
    if len(start) < 2:
        return start, end, numbers, names
    reach = np.maximum.accumulate(end)
    keep = np.ones(len(start), bool)
    keep[1:] = start[1:] >= reach[:-1]
    return start[keep], end[keep], numbers[keep], tuple(n for n, k in zip(names, keep) if k)


def _label(names) -> str:
    counts = Counter(names)
    return ", ".join(f"'{n}'" for n, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3])


def _root_markers(trace: Trace) -> Steps | None:
    ev = trace.events
    st = trace.stats
    rows, root = st["event"], st["root"]
    names_at = ev["name"][rows]
    host_root = trace.on_lines(lambda ln: not ln.on_device) & ~trace.named(trace.codes(_IMPLICIT_ROOTS))
    keep = (root > 0) & host_root[rows]
    if not keep.any():
        return None
    # Only the outermost root level are steps (tf.data roots, batching sub-roots are not).
    keep &= root == root[keep].min()
    mask = np.zeros(len(ev), bool)
    mask[rows[keep]] = True
    # PyTorch numbers its step ranges in their names (`ProfilerStep#12`): one marker, numbered.
    names = [_NUMBERED.sub("", trace.names[c]) for c in names_at[keep]]
    return _from_rows(trace, mask, f"marker {_label(names)}", "marker")


_NUMBERED = re.compile(r"#\d+\Z")


def _keras3_batches(trace: Trace) -> Steps | None:
    mask = trace.named(trace.codes(["Profiled batch"])) & trace.on_lines(lambda ln: not ln.on_device)
    return _from_rows(trace, mask, "marker 'Profiled batch' (Keras 3 TensorBoard callback)", "marker") if mask.any() else None


def _step_functions(trace: Trace) -> Steps | None:
    """Keras runs each step as one tf.function call on the Python thread; take the most
    frequent step function there, and grow each call into the iteration it serves."""
    ev = trace.events
    mask = trace.on_lines(lambda ln: ln.role == "python") & trace.named(trace.codes(STEP_FUNCTIONS))
    if not mask.any():
        return None
    counts = Counter(ev["name"][mask].tolist())
    best = max(counts, key=lambda c: (counts[c], -c))
    mask &= ev["name"] == best
    calls = _from_rows(trace, mask, "", "function")
    start, end = grow_calls(trace, np.asarray(calls.starts, np.int64), np.asarray(calls.ends, np.int64))
    note = ("no step markers in this trace: each call of the step function, with the framework work it "
            "needs around it (input pipeline, tracing, per-call setup), is one step; the time between calls "
            "in which TensorFlow records nothing is idle"
            + ("" if trace.names[best] != "multi_step_on_iterator" else
               " (with steps_per_execution > 1, one call runs several steps)"))
    return Steps(f"function '{trace.names[best]}'", "function", tuple(start.tolist()),
                 tuple(end.tolist()), calls.numbers, calls.names, note)


def _user_functions(trace: Trace) -> Steps | None:
    """A custom loop calls its own tf.function (say `train_step`) once per iteration: the
    function called most often on the Python thread (then the one taking the most time) gives
    the steps, one per call; the user's Python between calls is the gap between steps."""
    ev = trace.events
    rows = trace.stats["event"][trace.stats["fn_call"] >= 0]
    rows = rows[trace.on_lines(lambda ln: ln.role == "python")[rows]]
    if len(rows) < MIN_CALLS:
        return None
    codes = ev["name"][rows]
    counts = Counter(codes.tolist())
    time = Counter()
    for code, dur in zip(codes.tolist(), ev["dur_ps"][rows].tolist()):
        time[code] += dur
    best = max(counts, key=lambda c: (counts[c], time[c], -c))
    if counts[best] < MIN_CALLS:
        return None
    mask = np.zeros(len(ev), bool)
    mask[rows[codes == best]] = True
    name = trace.names[best]
    note = (f"no step markers: each call of your tf.function '{name}' is one step, from the wait for its batch "
            "(the loop's `next()` on its iterator) to the call's end; the rest of the time between calls (your "
            "loop's Python) is the gap between steps")
    steps = _from_rows(trace, mask, f"function '{name}' (your tf.function, one call per step)", "function", note)
    return _with_batch_waits(trace, steps)


def _with_batch_waits(trace: Trace, steps: Steps) -> Steps:
    """Each call's step begins where the loop began waiting for its batch: an `IteratorGetNext`
    on the Python thread that ends between the previous call and this one. That wait is the
    step's input, not the user's Python between steps."""
    ev = trace.events
    codes = [c for c, n in enumerate(trace.names) if is_input_event(n, trace.ops.get(c))]
    waits = np.flatnonzero(np.isin(ev["name"], codes) & trace.on_lines(lambda ln: ln.role == "python"))
    if not len(waits) or steps.count < 2:
        return steps
    w_start = ev["start_ps"][waits]
    w_end = w_start + ev["dur_ps"][waits]
    order = np.argsort(w_end, kind="stable")
    w_start, w_end = w_start[order], w_end[order]
    starts = np.asarray(steps.starts, np.int64)
    prev_end = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(np.asarray(steps.ends, np.int64))[:-1]])
    # The last wait that ends at or before each call's start; used only if it began after the previous call ended.
    last = np.searchsorted(w_end, starts, side="right") - 1
    ok = last >= 0
    begin = np.where(ok, w_start[np.maximum(last, 0)], starts)
    moved = ok & (begin >= prev_end) & (begin < starts)
    return dataclasses.replace(steps, starts=tuple(np.where(moved, begin, starts).tolist()))


# Keras 3's JAX trainer runs each step (or `steps_per_execution` steps) as one call of these, which
# JAX's Python tracer records as `$trainer.py:256 iterator_step`.
KERAS_JAX_STEPS = ("iterator_step",)
MIN_JIT_SHARE = 0.5  # the step's jitted function holds at least this share of the main thread's jitted calls


def _keras_jax_steps(trace: Trace) -> Steps | None:
    """Keras 3 on JAX: each call of the trainer's `iterator_step` (the next batch and the
    jitted step) is one step; Keras' loop and callbacks between calls are the gaps."""
    codes = [c for c, n in enumerate(trace.names)
             if n.startswith("$trainer.py:") and n.rsplit(" ", 1)[-1] in KERAS_JAX_STEPS]
    if not codes:
        return None
    mask = trace.named(codes) & trace.on_lines(lambda ln: ln.role == "python")
    if not mask.any():
        return None
    note = ("no step markers: each call of Keras' JAX trainer step (`iterator_step`: the next batch and the jitted "
            "train_step) is one step; Keras' loop and callbacks between calls are the gaps between steps")
    return _from_rows(trace, mask, "function 'iterator_step' (Keras 3 on JAX)", "function", note)


_JAX_STAGING = (f"{JIT_CALL}stage)",)


def _jit_calls(trace: Trace) -> Steps | None:
    """A JAX loop calls its jitted step (`PjitFunction(train_step)` on the main thread) once per
    iteration: the jitted function called at least MIN_CALLS times that holds most of the main
    thread's jitted-call time gives the steps, one per call (its device work joins it later). An
    op-by-op loop, many small jitted calls none of which dominates, gives none."""
    codes = [c for c, n in enumerate(trace.names) if n.startswith(JIT_CALL)]
    if not codes:
        return None
    ev = trace.events
    rows = np.flatnonzero(trace.named(codes) & trace.on_lines(lambda ln: ln.role == "python"))
    if len(rows) < MIN_CALLS:
        return None
    rows = rows[outermost(ev["start_ps"][rows], ev["dur_ps"][rows])]
    names = ev["name"][rows]
    time = np.bincount(names, ev["dur_ps"][rows].astype(np.float64), len(trace.names))
    count = np.bincount(names, minlength=len(trace.names))
    # JAX's own staging of host data (`jnp.asarray(batch)` runs `PjitFunction(stage)`) is called as
    # often as the step, and copying a big batch takes longer: it is the step only if alone.
    staged = [c for c in np.flatnonzero(count).tolist() if trace.names[c] in _JAX_STAGING]
    if staged and (count >= MIN_CALLS).sum() > len(staged):
        time[staged] = 0
    best = int(np.argmax(np.where(count >= MIN_CALLS, time, -1)))
    if count[best] < MIN_CALLS or time[best] < MIN_JIT_SHARE * time.sum():
        return None
    mask = np.zeros(len(ev), bool)
    mask[rows[names == best]] = True
    fn = jit_function(trace.names[best])
    note = (f"no step markers: each call of the jitted function '{fn}' is one step, from the call to the end of the "
            "device work it launched; the loop's Python between calls is the gap between steps")
    return _from_rows(trace, mask, f"function '{fn}' (jitted, one call per step)", "function", note)


def outermost(start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Per event (in time order on one thread): not nested inside an earlier one (JAX records a
    jitted call twice, one event inside the other)."""
    order = np.argsort(start, kind="stable")
    end = (start + dur)[order]
    keep = np.ones(len(start), bool)
    if len(start) > 1:
        keep[order[1:]] = start[order][1:] >= np.maximum.accumulate(end)[:-1]
    return keep


def _device_steps(trace: Trace) -> Steps | None:
    """A device's step line (TF 2.x GPU traces). With several devices, a step lasts as long as
    its longest span on any of them: the slowest replica sets the step time, as in XProf."""
    ev = trace.events
    lines = [i for i, ln in enumerate(trace.lines) if ln.on_device and ln.name == "Steps"]
    if not lines:
        return None
    sel = ev.take(np.isin(ev["line"], lines))
    if len(sel) == 0:
        return None
    names = [trace.names[c] for c in sel["name"]]
    start = sel["start_ps"]
    end = start + sel["dur_ps"]
    longest: dict[str, tuple[int, int]] = {}
    for name, s, e in zip(names, start.tolist(), end.tolist()):
        if name not in longest or e - s > longest[name][1] - longest[name][0]:
            longest[name] = (s, e)
    order = sorted(longest, key=lambda n: longest[n])
    numbers = tuple(int(n) if n.isdigit() else i for i, n in enumerate(order))
    planes = sorted({trace.lines[i].plane for i in lines})
    note = (f"each step is its longest span on the {len(planes)} devices' step lines (the slowest replica sets "
            "the step time, as in XProf)") if len(planes) > 1 else ""
    return Steps(f"device step line ({', '.join(planes)})", "device", tuple(longest[n][0] for n in order),
                 tuple(longest[n][1] for n in order), numbers, tuple(order), note)


def _device_modules(trace: Trace) -> Steps | None:
    """JAX and XLA runs mark no steps, but the device runs one compiled module per step: take
    the module that repeats and takes the most device time, on the first device that runs it."""
    ev = trace.events
    lines = [i for i, ln in enumerate(trace.lines) if ln.on_device and ln.name == "XLA Modules"]
    if not lines:
        return None
    first = lines[0]
    on_line = ev["line"] == first
    codes, index, counts = np.unique(ev["name"][on_line], return_inverse=True, return_counts=True)
    sums = exact_sums(index, ev["dur_ps"][on_line], len(codes))
    repeated = np.flatnonzero(counts >= 2)
    if len(repeated) == 0:
        return None
    # The most device time, then the most runs; ties to the lowest name code, as a stable sort would.
    best = int(codes[max(repeated.tolist(), key=lambda i: (sums[i], counts[i], -codes[i]))])
    label = trace.names[best].split("(")[0]
    mask = (ev["line"] == first) & (ev["name"] == best)
    note = (f"no step markers: each run of the XLA module '{label}' on {trace.lines[first].plane} is one step; "
            "gaps between runs are device idle time")
    return _from_rows(trace, mask, f"device module '{label}' ({trace.lines[first].plane})", "device", note)


def _window(trace: Trace) -> Steps | None:
    """No marker at all: measure the whole captured window as one step."""
    ev = trace.events
    if len(ev) == 0:
        return None
    host = trace.on_lines(lambda ln: not ln.on_device)
    sel = ev.take(host) if host.any() else ev
    start = int(sel["start_ps"].min())
    end = int((sel["start_ps"] + sel["dur_ps"]).max())
    note = ("no step markers or step functions found: the whole captured window is measured as one step; "
            "mark steps with tftrace.step() or capture with TraceCallback for per-step numbers")
    return Steps("window (no step markers)", "window", (start,), (end,), (0,), ("window",), note)
