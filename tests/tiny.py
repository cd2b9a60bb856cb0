"""Hand-built tiny Traces for unit cases: events given as (line, name, start_us, dur_us, stats)."""

from __future__ import annotations

import dataclasses

import numpy as np

from tftrace.read.build import TraceBuilder, line_role
from tftrace.model.events import INT_STATS, LineInfo


def tiny_trace(events, plane: str = "/host:CPU", sidecar: dict | None = None):
    """`events`: iterable of (line, event name, start in us, duration in us, {stat: value}); a line
    is a thread name on `plane`, or a (plane, line name) pair (a device's stream, say)."""
    builder = TraceBuilder("tiny", "xplane")
    by_line: dict[tuple, list] = {}
    for line, name, start, dur, *rest in events:
        key = line if isinstance(line, tuple) else (plane, line)
        by_line.setdefault(key, []).append((name, start, dur, rest[0] if rest else {}))
    for (plane, line), items in by_line.items():
        n = len(items)
        stats = {col: np.full(n, -1, np.int64) for col in INT_STATS.values()}
        for i, (_name, _s, _d, st) in enumerate(items):
            for key, value in st.items():
                stats[INT_STATS[key]][i] = value
        builder.add_line(LineInfo("host", plane, line, line_role(plane, line)),
                         np.array([builder.intern(x[0]) for x in items]),
                         np.array([round(x[1] * 1e6) for x in items], np.int64),
                         np.array([round(x[2] * 1e6) for x in items], np.int64), stats)
    return dataclasses.replace(builder.build(), sidecar=sidecar or {})
