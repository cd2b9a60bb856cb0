"""Read the legacy trace viewer files (`*.trace.json`, `*.trace.json.gz`) older TF versions wrote."""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections import defaultdict

import numpy as np

from tftrace.build import TraceBuilder, line_role
from tftrace.errors import TraceReadError
from tftrace.names import Op, parse_tf_op
from tftrace.events import INT_STATS, STR_STATS, LineInfo


def load_trace_json(path: str) -> dict:
    """The decoded JSON document, or TraceReadError naming what is wrong with the file."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        if isinstance(e, FileNotFoundError) or not os.path.exists(path):
            raise TraceReadError(f"{path}: cannot read: {e.strerror or e}") from None
        raise TraceReadError(f"{path}: not a readable gzip file (truncated or corrupt: {e})") from None
    except (EOFError, zlib.error) as e:
        raise TraceReadError(f"{path}: truncated or corrupt gzip data ({e})") from None
    if not raw.strip():
        raise TraceReadError(f"{path}: empty file, not a trace")
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceReadError(f"{path}: not valid trace JSON ({e})") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceReadError(f"{path}: JSON without a 'traceEvents' list, not a trace viewer file")
    return doc


def add_trace_json(builder: TraceBuilder, doc: dict, host: str) -> None:
    """Add the complete ('X') events of a trace viewer document, one line per (pid, tid)."""
    processes, threads = _names(doc["traceEvents"])
    per_line: dict[tuple, list] = defaultdict(list)
    for ev in doc["traceEvents"]:
        if isinstance(ev, dict) and ev.get("ph") == "X" and "ts" in ev:
            per_line[(_ident(ev.get("pid")), _ident(ev.get("tid")))].append(ev)
    for (pid, tid), events in sorted(per_line.items()):
        plane = processes.get(pid, f"pid {pid}")
        line = threads.get((pid, tid), str(tid))
        role = "device_ops" if plane.startswith("/device:") else line_role(plane, line)
        _add_events(builder, LineInfo(host, plane, line, role), events)


def _ident(value) -> str:
    """A pid or tid as a key: any JSON value, even a list, names a process or thread."""
    return str(value)


def _names(events) -> tuple[dict, dict]:
    processes, threads = {}, {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "M":
            continue
        args = ev.get("args")
        name = args.get("name") if isinstance(args, dict) else None
        if ev.get("name") == "process_name" and name:
            processes[_ident(ev.get("pid"))] = str(name)
        elif ev.get("name") == "thread_name" and name:
            threads[(_ident(ev.get("pid")), _ident(ev.get("tid")))] = str(name)
    return processes, threads


def _add_events(builder: TraceBuilder, info: LineInfo, events: list) -> None:
    # Events whose time is not a usable number are left out: there is nothing to place.
    timed = [(ev, t) for ev in events if (t := _ps(ev.get("ts"))) is not None]
    n = len(timed)
    name = np.empty(n, np.int32)
    start = np.empty(n, np.int64)
    dur = np.empty(n, np.int64)
    stats: dict[str, np.ndarray] = {}
    for i, (ev, ts) in enumerate(timed):
        label = str(ev.get("name", ""))
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        name[i] = _device_code(builder, label, args) if info.role == "device_ops" else builder.intern(label)
        start[i] = ts
        dur[i] = max(_ps(ev.get("dur", 0)) or 0, 0)
        for key, value in args.items():
            col = INT_STATS.get(key) or STR_STATS.get(key)
            if col is None:
                continue
            if col not in stats:
                stats[col] = np.full(n, -1, np.int64)
            stats[col][i] = builder.intern(str(value)) if key in STR_STATS else _int(value)
    builder.add_line(info, name, start, dur, stats)


_LIMIT = 1 << 62


def _ps(us) -> int | None:
    """Microseconds (the format's unit, a float) as integer picoseconds, or None."""
    try:
        value = float(us)
    except (TypeError, ValueError):
        return None
    ps = value * 1e6
    return round(ps) if math.isfinite(ps) and abs(ps) < _LIMIT else None


def _int(value) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return -1
    return number if -_LIMIT < number < _LIMIT else -1


def _device_code(builder: TraceBuilder, label: str, args: dict) -> int:
    parsed = parse_tf_op(str(args.get("long_name", ""))) or parse_tf_op(label)
    if parsed:
        return builder.intern(f"{parsed[0]}:{parsed[1]}", Op(parsed[0], parsed[1], "device"))
    return builder.intern(f"kernel:{label}", Op(label, label, "device"))
