"""Read the legacy trace viewer files (`*.trace.json`, `*.trace.json.gz`) older TF versions wrote."""

from __future__ import annotations

from array import array

import numpy as np

from tftrace.read.build import TraceBuilder, line_role
from tftrace.model.events import INT_STATS, STR_STATS, LineInfo
from tftrace.model.names import Op, parse_tf_op, strip_annotation
from tftrace.read.json_stream import event_batches

# Event args worth keeping: step-related stats, and the op a device event ran.
# A kernel's TF op: `tf_op`, or the annotation TensorFlow's trace viewer export writes (`level 0`,
# `annotation` with its `#shape=...#` tail), as the XSpace of the same capture holds it.
_KERNEL_OP = ("tf_op", "level 0", "annotation")
# A device's lines that repeat its kernels' time grouped another way (the trace viewer export's
# step, name scope and op lines): as in the XSpace they come from, they hold no ops of their own.
_DERIVED = ("Steps", "TensorFlow Name Scope", "TensorFlow Ops", "Framework Name Scope", "Framework Ops",
            "XLA Modules", "Source code")
_WANTED = frozenset(INT_STATS) | frozenset(STR_STATS) | {"long_name", *_KERNEL_OP}


def read_trace_json(path: str, builder: TraceBuilder, host: str) -> None:
    """Add the complete ('X') events of a trace viewer file, one line per (pid, tid). The file is
    parsed a batch at a time and each event kept as a few numbers, so memory stays near the
    events' own size; TraceReadError names what is wrong with the file (nothing is added then)."""
    events = _Events()
    for batch in event_batches(path):
        events.add(batch)
    for (pid, tid), line in sorted(events.lines.items()):
        plane = events.processes.get(pid, f"pid {pid}")
        name = events.threads.get((pid, tid), str(tid))
        role = ("derived" if name.startswith(_DERIVED) else "device_ops") if plane.startswith("/device:") \
            else line_role(plane, name)
        _add_line(builder, LineInfo(host, plane, name, role), line, events.labels)


class _Line:
    """One thread's events as arrays; args only for the few events that carry wanted ones."""

    __slots__ = ("label", "start", "dur", "args")

    def __init__(self):
        self.label, self.start, self.dur = array("i"), array("q"), array("q")
        self.args: list[tuple[int, dict]] = []


class _Events:
    def __init__(self):
        self.lines: dict[tuple[str, str], _Line] = {}
        self.processes: dict[str, str] = {}
        self.threads: dict[tuple[str, str], str] = {}
        self._codes: dict[str, int] = {}
        self.labels: list[str] = []

    def add(self, batch: list) -> None:
        for ev in batch:
            if not isinstance(ev, dict):
                continue
            ph = ev.get("ph")
            if ph == "X" and "ts" in ev:
                self._complete(ev)
            elif ph == "M":
                self._metadata(ev)

    def _complete(self, ev: dict) -> None:
        # Events whose time is not a usable number are left out: there is nothing to place.
        ts = _ps(ev["ts"])
        if ts is None:
            return
        get = ev.get
        key = (str(get("pid")), str(get("tid")))  # any JSON value, even a list, names a thread
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = _Line()
        label = get("name", "")
        label = label if type(label) is str else str(label)
        code = self._codes.get(label)
        if code is None:
            code = self._codes[label] = len(self.labels)
            self.labels.append(label)
        line.label.append(code)
        line.start.append(ts)
        dur = _ps(get("dur", 0))
        line.dur.append(dur if dur is not None and dur > 0 else 0)
        args = get("args")
        if args and type(args) is dict and not _WANTED.isdisjoint(args):
            line.args.append((len(line.label) - 1, {k: v for k, v in args.items() if k in _WANTED}))

    def _metadata(self, ev: dict) -> None:
        args = ev.get("args")
        name = args.get("name") if isinstance(args, dict) else None
        if ev.get("name") == "process_name" and name:
            self.processes[_ident(ev.get("pid"))] = str(name)
        elif ev.get("name") == "thread_name" and name:
            self.threads[(_ident(ev.get("pid")), _ident(ev.get("tid")))] = str(name)


def _ident(value) -> str:
    """A pid or tid as a key: any JSON value, even a list, names a process or thread."""
    return str(value)


def _add_line(builder: TraceBuilder, info: LineInfo, line: _Line, labels: list[str]) -> None:
    local = np.frombuffer(line.label, np.int32)
    n = len(local)
    args = dict(line.args)
    name = np.empty(n, np.int32)
    stats: dict[str, np.ndarray] = {}
    if info.role == "device_ops":
        for i in range(n):
            label = labels[local[i]]
            name[i] = _device_code(builder, label, args.get(i, {}))
            _stats(builder, stats, i, args.get(i), n)
    else:
        # Names are interned in event order (a name at its first event), as the events come.
        uniq, first = np.unique(local, return_index=True)
        first_of = dict(zip(first.tolist(), uniq.tolist()))  # event -> the label first seen there
        table = np.empty(len(labels), np.int32)
        named: dict[int, int] = {}  # event -> its op's full name, where the event is named by its type only
        for i in sorted(first_of.keys() | args.keys()):
            if i in first_of:
                table[first_of[i]] = builder.intern(labels[first_of[i]])
            _stats(builder, stats, i, args.get(i), n)
            full = _host_op(labels[local[i]], args.get(i))
            if full:
                named[i] = builder.intern(full)
        name[:] = table[local]
        for i, code in named.items():
            name[i] = code
    builder.add_line(info, name, np.frombuffer(line.start, np.int64), np.frombuffer(line.dur, np.int64), stats)


def _stats(builder: TraceBuilder, stats: dict[str, np.ndarray], i: int, args: dict | None, n: int) -> None:
    for key, value in (args or {}).items():
        col = INT_STATS.get(key) or STR_STATS.get(key)
        if col is None:
            continue
        if col not in stats:
            stats[col] = np.full(n, -1, np.int64)
        stats[col][i] = builder.intern(str(value)) if key in STR_STATS else _int(value)


_LIMIT = 1 << 62


def _ps(us) -> int | None:
    """Microseconds (the format's unit, a float) as integer picoseconds, or None."""
    try:
        ps = float(us) * 1e6
    except (TypeError, ValueError):
        return None
    return round(ps) if -_LIMIT < ps < _LIMIT else None  # False for nan and infinities


def _int(value) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return -1
    return number if -_LIMIT < number < _LIMIT else -1


def _device_code(builder: TraceBuilder, label: str, args: dict) -> int:
    parsed = parse_tf_op(str(args.get("long_name", ""))) or _kernel_op(args) or parse_tf_op(label)
    if parsed:
        return builder.intern(f"{parsed[0]}:{parsed[1]}", Op(parsed[0], parsed[1], "device"))
    return builder.intern(f"kernel:{label}", Op(label, label, "device"))


def _kernel_op(args: dict):
    """The TF op a GPU kernel runs, from its arguments; None where none names one."""
    for key in _KERNEL_OP:
        parsed = parse_tf_op(strip_annotation(str(args.get(key) or "")))
        if parsed:
            return parsed
    return None


def _host_op(label: str, args: dict | None) -> str:
    """`scope/op:Type` for a host op event the trace viewer export names by its type alone (its
    `long_name` holds the name, as the XSpace's event name does); "" for any other event."""
    long_name = str((args or {}).get("long_name") or "")
    parsed = parse_tf_op(long_name)
    return long_name if parsed and parsed[1] == label else ""
