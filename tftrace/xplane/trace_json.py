"""Read the legacy trace viewer files (`*.trace.json`, `*.trace.json.gz`) older TF versions wrote."""

from __future__ import annotations

import gzip
import json
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
            per_line[(ev.get("pid"), ev.get("tid"))].append(ev)
    for (pid, tid), events in sorted(per_line.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        plane = processes.get(pid, f"pid {pid}")
        line = threads.get((pid, tid), str(tid))
        role = "device_ops" if plane.startswith("/device:") else line_role(plane, line)
        _add_events(builder, LineInfo(host, plane, line, role), events)


def _names(events) -> tuple[dict, dict]:
    processes, threads = {}, {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "M":
            continue
        name = (ev.get("args") or {}).get("name")
        if ev.get("name") == "process_name" and name:
            processes[ev.get("pid")] = str(name)
        elif ev.get("name") == "thread_name" and name:
            threads[(ev.get("pid"), ev.get("tid"))] = str(name)
    return processes, threads


def _add_events(builder: TraceBuilder, info: LineInfo, events: list) -> None:
    n = len(events)
    name = np.empty(n, np.int32)
    start = np.empty(n, np.int64)
    dur = np.empty(n, np.int64)
    stats: dict[str, np.ndarray] = {}
    for i, ev in enumerate(events):
        label = str(ev.get("name", ""))
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        if info.role == "device_ops":
            name[i] = _device_code(builder, label, args)
        else:
            name[i] = builder.intern(label)
        try:
            start[i] = round(float(ev["ts"]) * 1e6)
            dur[i] = round(float(ev.get("dur", 0)) * 1e6)
        except (TypeError, ValueError):
            start[i] = dur[i] = 0
        for key, value in args.items():
            col = INT_STATS.get(key) or STR_STATS.get(key)
            if col is None:
                continue
            if col not in stats:
                stats[col] = np.full(n, -1, np.int64)
            if key in STR_STATS:
                stats[col][i] = builder.intern(str(value))
            else:
                try:
                    stats[col][i] = int(value)
                except (TypeError, ValueError):
                    pass
    builder.add_line(info, name, start, dur, stats)


def _device_code(builder: TraceBuilder, label: str, args: dict) -> int:
    parsed = parse_tf_op(str(args.get("long_name", ""))) or parse_tf_op(label)
    if parsed:
        return builder.intern(f"{parsed[0]}:{parsed[1]}", Op(parsed[0], parsed[1], "device"))
    return builder.intern(f"kernel:{label}", Op(label, label, "device"))
