"""Python time, per function: from stack samples taken beside the trace (every thread), or from
the Python tracer's events in the trace (main thread), placed where it sits in the steps.

Each sample's stack is weighed by the time since the sampler's previous tick. A function's
self time is where it is the innermost frame; its total time, where it is anywhere on the
stack. Samples are placed by thread and time: on a thread running tf.data's Python (a
generator, a `PyDataset`) they are the input pipeline's; on the main thread, inside a step or
between steps, as the trace's clock says.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tftrace.events import Trace
from tftrace.report import FlameNode, PythonProfile, PythonRow

# Frames that mean "this thread runs the input pipeline's Python" (tf.data's py_func bridge,
# Keras' generator and PyDataset adapters).
_INPUT_FILES = ("from_generator_op.py", "script_ops.py", "py_dataset_adapter.py", "generator_data_adapter.py")
_TRACER_EVENT = re.compile(r"^\$(?:(?P<file>\S+?):(?P<line>\d+) )?(?P<name>.+)$")
_FRAMEWORKS = {"keras", "tf_keras", "tensorflow", "tftrace", "jax", "jaxlib", "torch"}
FLAME_MIN = 0.005  # icicle boxes under 0.5% of their thread's time are left out
FLAME_DEPTH = 40


@dataclass(frozen=True)
class _Sample:
    weight: np.ndarray  # ps per sample
    time: np.ndarray  # ps on the trace's clock
    thread: list[str]  # main | input pipeline | other
    stack: list[tuple[int, ...]]
    frames: list[tuple[str, int, str]]


def python_profile(trace: Trace, starts: np.ndarray, ends: np.ndarray, top: int | None = None) -> PythonProfile:
    """Every function's row (or the `top` first), ranked; an empty profile without Python data."""
    samples = _from_sampler(trace) or _from_tracer(trace)
    if samples is None:
        return PythonProfile()
    where = _placement(samples, starts, ends)
    rows = _rows(samples, where)
    total = int(samples.weight.sum())
    # Ranked by the time spent in a function itself, or for your code, in it and the library calls
    # it makes: outer frames (the test runner, fit's loop) are on every stack and say nothing.
    ranked = sorted(rows, key=lambda r: (-max(r.self_ps, r.own_ps), -r.total_ps, r.function, r.file, r.thread,
                                         r.where))
    if isinstance(trace.python_samples, dict):
        source = f"stacks of every thread sampled every {trace.python_samples.get('interval_s', 0) * 1e3:g} ms"
    else:
        source = "the Python tracer's events (main thread only)"
    return PythonProfile(source, total, tuple(ranked[:top] if top else ranked), _flame(samples))


def _from_sampler(trace: Trace) -> _Sample | None:
    data = trace.python_samples
    if not isinstance(data, dict) or not data.get("samples") or not trace.profile_start_ns:
        return None
    start_ns = next(iter(trace.profile_start_ns.values()))
    ticks = np.asarray(data["ticks"], np.int64)
    step = np.diff(ticks, prepend=ticks[0] - int(data["interval_s"] * 1e9))
    cap = int(4 * data["interval_s"] * 1e9)  # a stalled sampler must not inflate one sample
    tick_weight = np.minimum(step, cap) * 1000
    roots = {k: v for k, v in (data.get("roots") or {}).items() if isinstance(v, str) and v}
    frames = [(_owned(f[0], roots), *f[1:]) for f in data["frames"]]
    stacks = [tuple(s) for s in data["stacks"]]
    names = data.get("threads", {})
    tick, thread, stack = [], [], []
    for t, ident, sid, _line in data["samples"]:
        tick.append(t)
        stack.append(stacks[sid])
        thread.append(_role(names.get(str(ident), ""), stacks[sid], frames))
    tick = np.asarray(tick, np.int64)
    return _Sample(tick_weight[tick], (ticks[tick] - start_ns) * 1000, thread, stack, frames)


def _owned(file: str, roots: dict[str, str]) -> str:
    """A file under a library's own folder (tftrace installed editable), written so that
    code_owner sees a package: `<site-packages>/tftrace/...`."""
    for name, root in roots.items():
        if file.startswith(root.rstrip("/") + "/"):
            return "<site-packages>/" + name + "/" + file[len(root.rstrip("/")) + 1:]
    return file


def _role(thread_name: str, stack: tuple[int, ...], frames) -> str:
    if any(frames[f][0].endswith(_INPUT_FILES) for f in stack):
        return "input pipeline"
    return "main" if thread_name == "MainThread" else "other"


def _from_tracer(trace: Trace) -> _Sample | None:
    """Python tracer events (`$file.py:12 name`) on the main thread: each event's self time is a
    'sample' whose stack is the chain of events around it."""
    codes = [c for c, n in enumerate(trace.names) if n.startswith("$")]
    if not codes:
        return None
    ev = trace.events
    rows = np.flatnonzero(trace.named(codes) & trace.on_lines(lambda ln: ln.role == "python"))
    if len(rows) == 0:
        return None
    order = np.lexsort((-ev["dur_ps"][rows], ev["start_ps"][rows], ev["line"][rows]))
    rows = rows[order]
    frames: list[tuple[str, int, str]] = []
    frame_of: dict[int, int] = {}
    weight, time, stack = [], [], []
    open_: list[tuple[int, int, int]] = []  # (end, frame id, index into weight)
    columns = [ev[c][rows].tolist() for c in ("line", "start_ps", "dur_ps", "name")]
    current_line = -1
    for ln, s, d, code in zip(*columns):
        if ln != current_line:
            open_, current_line = [], ln
        while open_ and open_[-1][0] <= s:
            open_.pop()
        if code not in frame_of:
            frame_of[code] = len(frames)
            frames.append(_tracer_frame(trace.names[code]))
        if open_:
            weight[open_[-1][2]] -= min(d, open_[-1][0] - s)  # the child's time leaves its parent's self
        stack.append(tuple(f for _e, f, _i in open_) + (frame_of[code],))
        weight.append(d)
        time.append(s)
        open_.append((s + d, frame_of[code], len(weight) - 1))
    return _Sample(np.maximum(np.asarray(weight, np.int64), 0), np.asarray(time, np.int64),
                   ["main"] * len(weight), stack, frames)


def _tracer_frame(name: str) -> tuple[str, int, str]:
    m = _TRACER_EVENT.match(name)
    if not m:
        return ("", 0, name)
    return (m.group("file") or "<builtins>", int(m.group("line") or 0), m.group("name"))


def _placement(samples: _Sample, starts: np.ndarray, ends: np.ndarray) -> list[str]:
    """Where each sample sits: the input pipeline, other threads, or on the main thread inside
    a step, between steps, or outside the measured steps."""
    i = np.searchsorted(starts, samples.time, side="right") - 1 if len(starts) else np.full(len(samples.time), -1)
    inside = (i >= 0) & (samples.time < np.where(i >= 0, ends[np.maximum(i, 0)], 0))
    between = (i >= 0) & (i < len(starts) - 1) & ~inside
    out = []
    for thread, a, b in zip(samples.thread, inside.tolist(), between.tolist()):
        if thread != "main":
            out.append(thread)
        else:
            out.append("inside steps" if a else "between steps" if b else "outside steps")
    return out


def _rows(samples: _Sample, where: list[str]) -> list[PythonRow]:
    self_ps: dict = defaultdict(int)
    total_ps: dict = defaultdict(int)
    own_ps: dict = defaultdict(int)
    owners = [code_owner(f[0]) for f in samples.frames]
    user = [o == "user" for o in owners]
    framework = [o in _FRAMEWORKS for o in owners]
    for w, stack, thread, place in zip(samples.weight.tolist(), samples.stack, samples.thread, where):
        if not stack:
            continue
        self_ps[(stack[-1], thread, place)] += w
        for f in set(stack):
            total_ps[(f, thread, place)] += w
        inner = _own(stack, user, framework)
        if inner is not None:
            own_ps[(inner, thread, place)] += w
    grand = max(int(samples.weight.sum()), 1)
    rows = []
    for (f, thread, place), total in total_ps.items():
        file, line, name = samples.frames[f]
        own = self_ps.get((f, thread, place), 0)
        rows.append(PythonRow(name, file, line, thread, place, code_owner(file), own, total, round(own / grand, 6),
                              own_ps.get((f, thread, place), 0)))
    return rows


def _own(stack: tuple[int, ...], user: list[bool], framework: list[bool]) -> int | None:
    """The user's function this sample's time is spent in: the innermost of theirs, unless it
    called into the framework (then the time is Keras' or TensorFlow's, called from their code)."""
    for i in range(len(stack) - 1, -1, -1):
        if framework[stack[i]]:
            return None
        if user[stack[i]]:
            return stack[i]
    return None


def code_owner(file: str) -> str:
    """`user` for the user's own code, else the package (keras, tensorflow, numpy...), `python`
    for the standard library, or `unknown` where the file has no folder to tell by (the Python
    tracer writes base names only)."""
    path = file.replace("\\", "/")
    if (path.startswith("<") and not path.startswith("<site-packages>/")) or path == "builtins":
        return "python"
    if "/" not in path:
        return "unknown"
    for marker in ("/site-packages/", "/dist-packages/", "<site-packages>/"):
        if marker in path:
            return path.split(marker, 1)[1].split("/", 1)[0].removesuffix(".py")
    if path.startswith("<") or re.search(r"/lib/python3[.\d]*/", path):
        return "python"
    return "user"


def hottest(profile: PythonProfile, places: tuple[str, ...]) -> tuple[PythonRow, float] | None:
    """The user's function that the most time in these places is spent in (innermost of the
    user's functions on the stack; else the hottest function by self time there), with its share
    of those places' time."""
    rows = [r for r in profile.rows if r.where in places]
    if not rows:
        return None
    place_total = sum(r.self_ps for r in rows) or 1
    user = [r for r in rows if r.owner == "user" and r.own_ps]
    if user:
        best = max(user, key=lambda r: (r.own_ps, r.function))
        return best, min(best.own_ps / place_total, 1.0)
    best = max(rows, key=lambda r: (r.self_ps, r.function))
    return best, min(best.self_ps / place_total, 1.0)


def _flame(samples: _Sample) -> tuple[FlameNode, ...]:
    """An icicle per thread kind: each box a function on the stack, as wide as its time."""
    out: list[FlameNode] = []
    for thread in ("main", "input pipeline", "other"):
        keep = [i for i, t in enumerate(samples.thread) if t == thread]
        total = int(samples.weight[keep].sum()) if keep else 0
        if not total:
            continue
        tree: dict = {}
        for i in keep:
            node = tree
            for f in samples.stack[i][:FLAME_DEPTH]:
                entry = node.setdefault(f, [0, {}])
                entry[0] += int(samples.weight[i])
                node = entry[1]
        _layout(tree, samples.frames, thread, total, 0, 0, out)
    return tuple(out)


def _layout(tree: dict, frames, thread: str, total: int, depth: int, offset: int, out: list) -> None:
    for f, (ps, children) in sorted(tree.items(), key=lambda kv: (-kv[1][0], kv[0])):
        if ps < FLAME_MIN * total:
            offset += ps
            continue
        file, line, name = frames[f]
        out.append(FlameNode(thread, depth, round(offset / total, 6), round(ps / total, 6), name, file, line,
                             code_owner(file), ps))
        _layout(children, frames, thread, total, depth + 1, offset, out)
        offset += ps
