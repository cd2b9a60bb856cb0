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
from dataclasses import dataclass

import numpy as np

from tftrace.analysis.stack_tree import (StackTree, by_depth, from_paths, innermost_marked, outermost_of_frame,
                                         subtree_sums)
from tftrace.analysis.sums import exact_sums
from tftrace.model.events import Trace
from tftrace.model.report import FlameNode, PythonProfile, PythonRow

# Frames that mean "this thread runs the input pipeline's Python" (tf.data's py_func bridge,
# Keras' generator and PyDataset adapters).
_INPUT_FILES = ("from_generator_op.py", "script_ops.py", "py_dataset_adapter.py", "generator_data_adapter.py")
_TRACER_EVENT = re.compile(r"^\$(?:(?P<file><[^>]*>|\S+?):(?P<line>\d+) )?(?P<name>.+)$")  # <frozen abc>:117 f
_FRAMEWORKS = {"keras", "tf_keras", "tensorflow", "tftrace", "jax", "jaxlib", "torch"}
FLAME_MIN = 0.005  # icicle boxes under 0.5% of their thread's time are left out
FLAME_DEPTH = 40


WHERE = ("inside steps", "between steps", "outside steps", "input pipeline", "other")
_INPUT, _OTHER = 3, 4  # thread kinds other than main are their own place


@dataclass(frozen=True)
class _Sample:
    """Samples as columns, their stacks interned: millions of Python tracer events cost numpy
    passes and one Python step per distinct stack, not per event."""

    weight: np.ndarray  # ps per sample
    time: np.ndarray  # ps on the trace's clock
    kind: np.ndarray  # per sample: 0 main thread, else _INPUT or _OTHER
    stack: np.ndarray  # per sample: its stack, a node of `tree` (-1: an empty stack)
    tree: StackTree
    frames: list[tuple[str, int, str]]


def python_profile(trace: Trace, starts: np.ndarray, ends: np.ndarray, top: int | None = None) -> PythonProfile:
    """Every function's row (or the `top` first), ranked; an empty profile without Python data."""
    samples = _from_sampler(trace) or _from_tracer(trace)
    if samples is None:
        return PythonProfile()
    groups = _groups(samples, _placement(samples, starts, ends))
    rows = _rows(samples, groups)
    total = int(samples.weight.sum())
    # Ranked by the time spent in a function itself, or for your code, in it and the library calls
    # it makes: outer frames (the test runner, fit's loop) are on every stack and say nothing.
    ranked = sorted(rows, key=lambda r: (-max(r.self_ps, r.own_ps), -r.total_ps, r.function, r.file, r.line, r.thread,
                                         r.where))
    if isinstance(trace.python_samples, dict):
        source = f"stacks of every thread sampled every {trace.python_samples.get('interval_s', 0) * 1e3:g} ms"
    else:
        source = "the Python tracer's events (main thread only)"
    return PythonProfile(source, total, tuple(ranked[:top] if top else ranked), _flame(samples, groups))


def _from_sampler(trace: Trace) -> _Sample | None:
    data = trace.python_samples
    if not isinstance(data, dict) or not len(data.get("samples", ())) or not trace.profile_start_ns:
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
    tick, ident, stack = np.asarray(data["samples"], np.int64).reshape(-1, 4)[:, :3].T
    pairs, inverse = np.unique(np.stack([ident, stack], 1), axis=0, return_inverse=True)
    # A thread's kind is judged once per (thread, stack), not per sample.
    kinds = np.array([_kind(names.get(str(i), ""), stacks[s], frames) for i, s in pairs.tolist()], np.int8)
    kind = kinds[inverse.reshape(-1)]
    tree, nodes = from_paths(stacks)
    return _Sample(tick_weight[tick], (ticks[tick] - start_ns) * 1000, kind, nodes[stack], tree, frames)


def _owned(file: str, roots: dict[str, str]) -> str:
    """A file under a library's own folder (tftrace installed editable), written so that
    code_owner sees a package: `<site-packages>/tftrace/...`."""
    for name, root in roots.items():
        if file.startswith(root.rstrip("/") + "/"):
            return "<site-packages>/" + name + "/" + file[len(root.rstrip("/")) + 1:]
    return file


def _kind(thread_name: str, stack: tuple[int, ...], frames) -> int:
    if any(frames[f][0].endswith(_INPUT_FILES) for f in stack):
        return _INPUT
    return 0 if thread_name == "MainThread" else _OTHER


def _from_tracer(trace: Trace) -> _Sample | None:
    """Python tracer events (`$file.py:12 name`) on the main thread: each event's self time is a
    'sample' whose stack is the chain of events around it. Events of no duration hold no time
    and are left out."""
    if not trace.has_prefix("$"):
        return None
    codes = [c for c, n in enumerate(trace.names) if n.startswith("$")]
    if not codes:
        return None
    ev = trace.events
    rows = np.flatnonzero(trace.named(codes) & trace.on_lines(lambda ln: ln.role == "python") & (ev["dur_ps"] > 0))
    if len(rows) == 0:
        return None
    rows, levels, parent, weight = nest_rows(ev, rows)
    frame_codes, frame = _dense(ev["name"][rows])
    sid, tree = _nest(levels, parent, frame)
    frames = [_tracer_frame(trace.names[c]) for c in frame_codes.tolist()]
    return _Sample(weight, ev["start_ps"][rows], np.zeros(len(rows), np.int8), sid, tree, frames)


def _dense(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct name codes, sorted, and each entry's index among them (np.unique's answer;
    codes are small, so a table beats its sort)."""
    present = np.bincount(codes) > 0
    index = np.cumsum(present) - 1
    return np.flatnonzero(present), index[codes].astype(np.int64)


def nest_rows(ev, rows: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
    """Events (`rows` of the event table) as they nest on their lines: the rows sorted by line,
    start and longest first, those sorted rows by nesting depth, each one's parent (the last
    earlier row one level up, -1 at the top) and its own time (a child's time leaves its
    parent's)."""
    if len(rows) == 0:
        return rows, [], np.zeros(0, np.int64), np.zeros(0, np.int64)
    line, start, dur = ev["line"][rows], ev["start_ps"][rows], ev["dur_ps"][rows]
    if not _nested_order(line, start, dur):  # the reader usually has them so already
        order = np.lexsort((-dur, start, line))
        rows, line, start, dur = rows[order], line[order], start[order], dur[order]
    levels = _levels(line, start, start + dur)
    parent = np.full(len(rows), -1, np.int64)
    up_rows = np.empty(0, np.int64)
    for level in levels:
        if len(up_rows):
            parent[level] = up_rows[np.searchsorted(up_rows, level) - 1]
        up_rows = level
    has = np.flatnonzero(parent >= 0)
    up = parent[has]
    own = dur - exact_sums(up, np.minimum(dur[has], start[up] + dur[up] - start[has]), len(rows))
    return rows, levels, parent, np.maximum(own, 0)


def _nested_order(line: np.ndarray, start: np.ndarray, dur: np.ndarray) -> bool:
    """Whether rows are sorted by line, start and longest first."""
    dl, ds = np.diff(line), np.diff(start)
    return bool(((dl > 0) | ((dl == 0) & ((ds > 0) | ((ds == 0) & (np.diff(dur) <= 0))))).all())


def _levels(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[np.ndarray]:
    """Rows by nesting depth (rows sorted by line, start, longest first): a row's depth is how
    many earlier rows of its line are still open at its start."""
    n = len(start)
    depth = np.empty(n, np.int64)
    bounds = np.r_[0, np.flatnonzero(np.diff(line)) + 1, n]
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        # Stable sort: ends come in long ascending runs (a call's children end before it), which
        # timsort merges in a pass or two.
        closed = np.searchsorted(np.sort(end[a:b], kind="stable"), start[a:b], side="right")
        depth[a:b] = np.arange(b - a) - closed
    return by_depth(depth)  # each level keeps its rows in time order


def _nest(levels: list[np.ndarray], parent: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, StackTree]:
    """Per row (nested as `nest_rows` gives them) its stack, a node of the returned tree; a stack
    is its parent's plus one frame, so the tree grows a level at a time, a node per distinct stack."""
    node = np.full(len(frame), -1, np.int64)
    tree_parent, tree_frame, tree_depth = [], [], []
    width = int(frame.max()) + 1
    made = 0
    for depth, rows in enumerate(levels):
        up_node = node[parent[rows]] if depth else np.full(len(rows), -1, np.int64)
        keys, inverse = np.unique((up_node + 1) * width + frame[rows], return_inverse=True)
        tree_parent.append(keys // width - 1)
        tree_frame.append(keys % width)
        tree_depth.append(np.full(len(keys), depth, np.int64))
        node[rows] = made + inverse.reshape(-1)
        made += len(keys)
    tree = StackTree(*(np.concatenate(x) if x else np.zeros(0, np.int64) for x in (tree_parent, tree_frame, tree_depth)))
    return node, tree


def _tracer_frame(name: str) -> tuple[str, int, str]:
    m = _TRACER_EVENT.match(name)
    if not m:
        return ("", 0, name)
    return (m.group("file") or "<builtins>", int(m.group("line") or 0), m.group("name"))


def _placement(samples: _Sample, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Where each sample sits (an index into WHERE): the input pipeline, other threads, or on the
    main thread inside a step, between steps, or outside the measured steps."""
    i = np.searchsorted(starts, samples.time, side="right") - 1 if len(starts) else np.full(len(samples.time), -1)
    inside = (i >= 0) & (samples.time < np.where(i >= 0, ends[np.maximum(i, 0)], 0))
    between = (i >= 0) & (i < len(starts) - 1) & ~inside
    main = np.where(inside, 0, np.where(between, 1, 2))
    return np.where(samples.kind == 0, main, samples.kind).astype(np.int64)


def _groups(samples: _Sample, where: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stacks, places, ps): the samples' time summed per distinct stack and place."""
    keys, index = _dense((samples.stack + 1) * len(WHERE) + where)
    ps = exact_sums(index, samples.weight, len(keys))  # integer sums: exact to the picosecond
    return keys // len(WHERE) - 1, keys % len(WHERE), ps


def _rows(samples: _Sample, groups) -> list[PythonRow]:
    """Per function and place: its self time (innermost frame), its total time (anywhere on the
    stack, once however deep it recurses) and, for the user's code, its own time (innermost of
    the user's frames, unless a framework frame is inside it)."""
    stack, place, ps = groups
    tree, places = samples.tree, len(WHERE)
    ok = stack >= 0
    stack, place, ps = stack[ok], place[ok], ps[ok]
    n = len(samples.frames)
    owners = [code_owner(f[0]) for f in samples.frames]
    user = np.array([o == "user" for o in owners], bool)
    framework = np.array([o in _FRAMEWORKS for o in owners], bool)
    self_ps = _per_frame(tree.frame[stack], place, ps, n)
    below = subtree_sums(tree, stack, place, ps, places)
    first = np.flatnonzero(outermost_of_frame(tree))
    total_ps = _per_frame(np.repeat(tree.frame[first], places), np.tile(np.arange(places), len(first)),
                          below[first].reshape(-1), n)
    inner = innermost_marked(tree, user | framework, np.where(user, np.arange(n), -1))[stack]
    mine = inner >= 0
    own_ps = _per_frame(inner[mine], place[mine], ps[mine], n)
    grand = max(int(samples.weight.sum()), 1)
    rows = []
    for f, where in zip(*np.nonzero(total_ps)):
        file, line, name = samples.frames[f]
        own = int(self_ps[f, where])
        rows.append(PythonRow(name, file, line, _thread(int(where)), WHERE[where], owners[f], own,
                              int(total_ps[f, where]), round(own / grand, 6), int(own_ps[f, where])))
    return rows


def _per_frame(frame: np.ndarray, place: np.ndarray, ps: np.ndarray, frames: int) -> np.ndarray:
    """ps summed per (frame, place), as a frames x places table."""
    return exact_sums(frame * len(WHERE) + place, ps, frames * len(WHERE)).reshape(frames, len(WHERE))


def _thread(place: int) -> str:
    return "main" if place < _INPUT else WHERE[place]


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



def _profiler_own(row: PythonRow) -> bool:
    """The profiler starting or stopping itself (JAX's `stop_trace` writes the trace), or
    tftrace's capture at work (its hooks, its wait that paces JAX's steps): not the program's time."""
    return row.owner == "tftrace" or row.file.endswith("profiler.py") and row.function in ("start_trace", "stop_trace")


def hottest(profile: PythonProfile, places: tuple[str, ...]) -> tuple[PythonRow, float] | None:
    """The user's function that the most time in these places is spent in (innermost of the
    user's functions on the stack; else the hottest function by self time there), with its share
    of those places' time."""
    rows = [r for r in profile.rows if r.where in places and not _profiler_own(r)]
    if not rows:
        return None
    place_total = sum(r.self_ps for r in rows) or 1
    user = [r for r in rows if r.owner == "user" and r.own_ps]
    if user:
        best = max(user, key=lambda r: (r.own_ps, r.function))
        return best, min(best.own_ps / place_total, 1.0)
    best = max(rows, key=lambda r: (r.self_ps, r.function))
    return best, min(best.self_ps / place_total, 1.0)


def _flame(samples: _Sample, groups) -> tuple[FlameNode, ...]:
    """An icicle per thread kind: each box a function on the stack, as wide as its time."""
    stack, place, ps = groups
    tree = samples.tree
    kind = np.array([("main", "input pipeline", "other").index(_thread(p)) for p in range(len(WHERE))], np.int64)
    ok = stack >= 0
    below = subtree_sums(tree, stack[ok], kind[place[ok]], ps[ok], 3)
    out: list[FlameNode] = []
    for k, thread in enumerate(("main", "input pipeline", "other")):
        total = int(ps[kind[place] == k].sum())  # an empty stack's time counts, though it draws no box
        if not total:
            continue
        width = below[:, k]
        # Boxes under FLAME_MIN of the thread's time are left out, and so is all below them.
        big = np.flatnonzero((width >= FLAME_MIN * total) & (width > 0) & (tree.depth < FLAME_DEPTH))
        children: dict[int, list[int]] = {}
        for node in sorted(big.tolist(), key=lambda i: (-int(width[i]), int(tree.frame[i]))):
            children.setdefault(int(tree.parent[node]), []).append(node)
        _layout(children, tree, width, samples.frames, thread, total, -1, 0, out)
    return tuple(out)


def _layout(children: dict, tree: StackTree, width: np.ndarray, frames, thread: str, total: int, node: int,
            offset: int, out: list) -> None:
    for child in children.get(node, ()):
        ps = int(width[child])
        file, line, name = frames[int(tree.frame[child])]
        out.append(FlameNode(thread, int(tree.depth[child]), round(offset / total, 6), round(ps / total, 6), name,
                             file, line, code_owner(file), ps))
        _layout(children, tree, width, frames, thread, total, child, offset, out)
        offset += ps