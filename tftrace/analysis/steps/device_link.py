"""Attach device work (kernels, copies) to the step that launched it, and let host-found steps
run on to their last device event: a GPU step ends when its device work does, often well after
the host function returned.

Links, in order of trust: the correlation id a device event shares with its host launch
(`cuLaunchKernel`, `hipMemcpyHtoDAsync`...), whose start says which step launched it; the
group id older traces write on device events and steps alike; else the device event's own start
(it belongs to the last step that began before it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.model.events import Trace


@dataclass(frozen=True, eq=False)
class DeviceWork:
    """Device op events (rows of trace.events) and the step index each belongs to (-1: none)."""

    rows: np.ndarray
    step: np.ndarray
    how: str  # correlation | group | time | none

    def of_step(self, i: int) -> np.ndarray:
        return self.rows[self.step == i]


def link_device_work(trace: Trace, starts: np.ndarray, ends: np.ndarray, numbers: np.ndarray,
                     by_group: bool) -> DeviceWork:
    """`by_group`: the steps' numbers are group ids (steps from a device step line)."""
    rows = np.flatnonzero(trace.on_lines(lambda ln: ln.role == "device_ops"))
    if len(rows) == 0 or len(starts) == 0:
        return DeviceWork(rows, np.full(len(rows), -1, np.int64), "none")
    dev_start = trace.events["start_ps"][rows]
    step = _by_time(dev_start, starts, ends)
    how = "time"
    if by_group:
        grouped = _by_group(trace, rows, numbers)
        if (grouped >= 0).any():
            step, how = grouped, "group"
    else:
        launch = _launch_times(trace, rows)
        linked = launch >= 0
        if linked.any():
            step[linked] = _containing(launch[linked], starts, ends)
            how = "correlation"
    return DeviceWork(rows, step, how)


def _by_time(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The last step that began at or before t; after the last step's end, none."""
    i = np.searchsorted(starts, t, side="right") - 1
    i[(i == len(starts) - 1) & (t >= ends[-1])] = -1
    return i


def _containing(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    i = np.searchsorted(starts, t, side="right") - 1
    ok = (i >= 0) & (t < ends[np.maximum(i, 0)])
    return np.where(ok, i, -1)


def _stat(trace: Trace, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(event rows, values) of the events that carry a stat."""
    values = trace.stats[column]
    keep = values >= 0
    return trace.stats["event"][keep], values[keep]


def _launch_times(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per device event: the start of the host event with the same correlation id on the same
    host, or -1."""
    ev_rows, corr = _stat(trace, "correlation")
    out = np.full(len(rows), -1, np.int64)
    if len(ev_rows) == 0:
        return out
    line = trace.events["line"]
    host_of_line = np.array([trace.hosts.index(ln.host) for ln in trace.lines] + [0], np.int64)
    on_device = trace.on_lines(lambda ln: ln.on_device)
    is_launch = ~on_device[ev_rows]
    key_launch = host_of_line[line[ev_rows[is_launch]]] << 48 | corr[is_launch]
    launch_start = trace.events["start_ps"][ev_rows[is_launch]]
    order = np.argsort(key_launch, kind="stable")
    key_launch, launch_start = key_launch[order], launch_start[order]
    # Device events' own correlation ids, aligned with `rows`.
    dev_corr = np.full(len(rows), -1, np.int64)
    pos = np.searchsorted(rows, ev_rows[~is_launch])
    found = (pos < len(rows)) & (rows[np.minimum(pos, len(rows) - 1)] == ev_rows[~is_launch])
    dev_corr[pos[found]] = corr[~is_launch][found]
    has = dev_corr >= 0
    key = host_of_line[line[rows[has]]] << 48 | dev_corr[has]
    at = np.searchsorted(key_launch, key)
    hit = (at < len(key_launch)) & (key_launch[np.minimum(at, len(key_launch) - 1)] == key)
    linked = np.full(int(has.sum()), -1, np.int64)
    linked[hit] = launch_start[at[hit]]
    out[has] = linked
    return out


def _by_group(trace: Trace, rows: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    ev_rows, group = _stat(trace, "group_id")
    out = np.full(len(rows), -1, np.int64)
    pos = np.searchsorted(rows, ev_rows)
    found = (pos < len(rows)) & (rows[np.minimum(pos, len(rows) - 1)] == ev_rows)
    index = {int(n): i for i, n in enumerate(numbers.tolist())}
    out[pos[found]] = [index.get(int(g), -1) for g in group[found].tolist()]
    return out


def extend_to_device(ends: np.ndarray, work: DeviceWork, trace: Trace) -> np.ndarray:
    """Each step's end, moved on to the end of the last device event it launched."""
    linked = work.step >= 0
    if not linked.any():
        return ends
    ev = trace.events
    end = ev["start_ps"][work.rows[linked]] + ev["dur_ps"][work.rows[linked]]
    last = np.full(len(ends), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, work.step[linked], end)
    return np.maximum(ends, last)


def extend_to_cpu_modules(trace: Trace, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Step ends run on to the end of the XLA:CPU work each step started: a jitted call returns
    at once and its module's thunks run on XLA's own threads afterwards. A thunk belongs to the
    last step that began before it (it cannot run before its call), and no step reaches past
    the next one's start."""
    codes = [c for c, op in trace.ops.items() if op.kind == "xla"]
    if not codes or not len(starts):
        return ends
    rows = np.flatnonzero(trace.named(codes))
    t0 = trace.events["start_ps"][rows]
    t1 = t0 + trace.events["dur_ps"][rows]
    step = np.searchsorted(starts, t0, side="right") - 1
    ok = step >= 0
    reach = np.full(len(starts), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(reach, step[ok], t1[ok])
    limit = np.append(starts[1:], np.iinfo(np.int64).max)
    return np.maximum(ends, np.minimum(reach, limit))
