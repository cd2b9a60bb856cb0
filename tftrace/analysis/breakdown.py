"""Step-time breakdown: input, compute, host overhead and idle, from each step's timeline.

Method. Each step is a time window [start, end). Events are merged into disjoint intervals
(so parallel threads and streams never count twice), and each instant of a step goes to one
part, by priority as in XProf:
  CPU-only runs: input (waiting in `IteratorGetNext*`) over compute (the TF ops, graph or
    eager, on every non-tf.data thread, minus per-call pipeline building ops); the rest of the
    step is host overhead (Python, eager dispatch, tf.function tracing, building iterators).
  Runs with a device, seen from the device, which is what the step waits for: compute (kernels
    and the step's device-to-host or device-to-device copies) over input (host-to-device
    copies); the rest is host overhead: the device idle, waiting for the host. Only device work
    a step launched counts (see device_link): the step's own, and, where the host runs ahead,
    the earlier steps' work the device still runs in its window (busy, so computing). While the
    device idles, what the host does is kept too: the time it waits for input data explains
    much device idle time.
Idle is the gap between one step's end and the next one's start (callbacks, Python between
calls). Fractions are of the total wall time of steps plus the gaps between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.steps.device_link import DeviceWork
from tftrace.analysis.intervals import covered, merge, merge_rows, union
from tftrace.analysis.steps.found import Steps
from tftrace.model.names import H2D, Op, is_input_event
from tftrace.model.events import Trace

# Ops that build a tf.data pipeline or iterator: per-call overhead, not model compute.
PIPELINE_TYPES = {"MakeIterator", "AnonymousIterator", "AnonymousIteratorV2", "AnonymousIteratorV3",
                  "DeleteIterator", "IteratorToStringHandle", "OptionalHasValue", "OptionalNone",
                  "DatasetCardinality", "DatasetToGraphV2", "AnonymousMultiDeviceIteratorV3",
                  "MultiDeviceIteratorInit", "DeleteMultiDeviceIterator", "OptionsDataset"}


@dataclass(frozen=True)
class Timeline:
    """Per-step parts (ps) and the merged intervals behind them; internal to the analyses."""

    start: np.ndarray
    dur: np.ndarray
    input: np.ndarray
    compute: np.ndarray
    overhead: np.ndarray
    idle: np.ndarray
    busy: tuple[np.ndarray, np.ndarray]  # merged intervals of input and compute events
    device_busy: np.ndarray | None = None  # per step, on device runs: kernels and copies
    copies: np.ndarray | None = None  # per step: device copies (either direction)
    input_wait: np.ndarray | None = None  # per step: the host waits for input while the device idles

    @property
    def wall_ps(self) -> int:
        return int(self.dur.sum() + self.idle.sum())

    @property
    def iterations(self) -> np.ndarray:
        """Each step with the gap after it (the last has none): what one turn of the loop costs."""
        return self.dur + np.r_[self.idle[1:], 0]

    def fraction(self, part: np.ndarray) -> float:
        return float(part.sum()) / self.wall_ps if self.wall_ps else 0.0


def is_pipeline_op(op: Op) -> bool:
    return op.type in PIPELINE_TYPES or (op.kind == "eager" and "Dataset" in op.type)


def event_classes(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks over events: (input, compute)."""
    ev = trace.events
    n_names = len(trace.names)
    input_name = np.zeros(n_names + 1, bool)
    compute_name = np.zeros(n_names + 1, bool)
    for code, name in enumerate(trace.names):
        op = trace.ops.get(code)
        if is_input_event(name, op):
            input_name[code] = True
        elif op is not None and op.kind not in ("data",) and not is_pipeline_op(op):
            compute_name[code] = True
    if any(ln.role == "device_ops" for ln in trace.lines):
        compute_line = trace.on_lines(lambda ln: ln.role == "device_ops")
    else:
        compute_line = trace.on_lines(lambda ln: ln.role not in ("data", "derived"))
    names = ev["name"]
    is_input = input_name.take(names)  # take: twice as fast as [] with int32 codes
    is_compute = compute_name.take(names)
    is_compute &= compute_line
    is_compute &= ~is_input
    return is_input, is_compute


def spans(events, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of the selected events only (never a full-length temporary)."""
    idx = np.flatnonzero(mask)
    start = events["start_ps"][idx]
    return start, start + events["dur_ps"][idx]


def timeline(trace: Trace, steps: Steps, classes: tuple[np.ndarray, np.ndarray],
             work: DeviceWork | None = None) -> Timeline:
    ev = trace.events
    start = np.asarray(steps.starts, np.int64)
    end = np.asarray(steps.ends, np.int64)
    is_input, is_compute = classes
    inp_merged = merge_rows(ev, is_input)
    comp_merged = merge_rows(ev, is_compute)
    busy_merged = union(inp_merged, comp_merged)
    dur = end - start
    idle = np.zeros(len(start), np.int64)
    if len(start) > 1:
        idle[1:] = np.maximum(start[1:] - np.maximum.accumulate(end)[:-1], 0)
    if work is not None and work.how != "none":
        return _device_timeline(trace, start, end, idle, work, inp_merged, busy_merged)
    inp = covered(*inp_merged, start, end)
    busy = covered(*busy_merged, start, end)
    return Timeline(start, dur, inp, busy - inp, np.maximum(dur - busy, 0), idle, busy_merged)


def _device_timeline(trace: Trace, start, end, idle, work: DeviceWork, host_wait, busy_merged) -> Timeline:
    """Per step, from the device work the step launched (clipped to the step)."""
    ev = trace.events
    names = ev["name"][work.rows]
    kind = np.zeros(len(trace.names) + 1, np.int8)  # 0 kernel, 1 copy into the device, 2 other copy
    for code, op in trace.ops.items():
        if _is_copy(op.type):
            kind[code] = 1 if op.type.lower().startswith(H2D) else 2
    kinds = kind[names]
    s_all = ev["start_ps"][work.rows]
    e_all = s_all + ev["dur_ps"][work.rows]
    n = len(start)
    compute, dev_busy, copies = (np.zeros(n, np.int64) for _ in range(3))
    order = np.argsort(work.step, kind="stable")
    bounds = np.searchsorted(work.step[order], np.arange(n + 1))
    for i in range(n):
        sel = order[bounds[i]:bounds[i + 1]]
        lo, hi = np.array([start[i]]), np.array([end[i]])
        s_i, e_i, k_i = s_all[sel], e_all[sel], kinds[sel]
        compute[i] = covered(*merge(s_i[k_i != 1], e_i[k_i != 1]), lo, hi)[0]
        dev_busy[i] = covered(*merge(s_i, e_i), lo, hi)[0]
        copies[i] = covered(*merge(s_i[k_i > 0], e_i[k_i > 0]), lo, hi)[0]
    # Where the host runs ahead, a step's window holds the device still running the steps before
    # it: the device is busy then, not waiting for the host. (Work no step launched still counts
    # for none.)
    linked = work.step >= 0
    device = merge(s_all[linked], e_all[linked])
    busy_all = covered(*device, start, end)
    compute += np.maximum(busy_all - dev_busy, 0)
    dev_busy = np.maximum(busy_all, dev_busy)
    both = merge(np.concatenate([device[0], host_wait[0]]), np.concatenate([device[1], host_wait[1]]))
    wait = covered(*both, start, end) - dev_busy
    dur = end - start
    return Timeline(start, dur, dev_busy - compute, compute, dur - dev_busy, idle, busy_merged,
                    dev_busy, copies, wait)


def _is_copy(op_type: str) -> bool:
    return op_type.lower().startswith(("memcpy", "memset", "copy"))
