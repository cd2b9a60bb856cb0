"""Step-time breakdown: input, compute, host overhead and idle, from each step's timeline.

Method. Each step is a time window [start, end) on the host clock. Three event classes are
merged into disjoint intervals across all threads (so parallel threads never count twice):
  input    waiting for data: `IteratorGetNext*` events (graph op, eager op, or the tf.data
           DoCompute on its own thread) and host-to-device copies on a device;
  compute  op execution: on a device, its op lines; on CPU-only runs, the TF ops (graph or
           eager) on every non-tf.data thread, minus per-call pipeline building ops;
  the rest of the step is host overhead (Python, eager dispatch, tf.function tracing,
           building tf.data iterators, kernel launches).
Inside a step, input wins over compute where both cover the same instant (XProf's priority
too). Idle is the gap between one step's end and the next one's start (callbacks, Python
between calls). Fractions are of the total wall time of steps plus the gaps between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.intervals import covered, merge
from tftrace.analysis.steps import Steps
from tftrace.names import Op
from tftrace.events import Trace

INPUT_TYPES = {"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional", "OptionalGetValue",
               "MultiDeviceIteratorGetNextFromShard", "InfeedDequeue", "InfeedDequeueTuple"}
# Ops that build a tf.data pipeline or iterator: per-call overhead, not model compute.
PIPELINE_TYPES = {"MakeIterator", "AnonymousIterator", "AnonymousIteratorV2", "AnonymousIteratorV3",
                  "DeleteIterator", "IteratorToStringHandle", "OptionalHasValue", "OptionalNone",
                  "DatasetCardinality", "DatasetToGraphV2", "AnonymousMultiDeviceIteratorV3",
                  "MultiDeviceIteratorInit", "DeleteMultiDeviceIterator", "OptionsDataset"}
_H2D = ("memcpyh2d", "memcpyhtod")


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

    @property
    def wall_ps(self) -> int:
        return int(self.dur.sum() + self.idle.sum())

    def fraction(self, part: np.ndarray) -> float:
        return float(part.sum()) / self.wall_ps if self.wall_ps else 0.0


def is_pipeline_op(op: Op) -> bool:
    return op.type in PIPELINE_TYPES or (op.kind == "eager" and "Dataset" in op.type)


def is_input_event(name: str, op: Op | None) -> bool:
    if name.lower().startswith("iteratorgetnext"):
        return True
    if op is None:
        return False
    return op.type in INPUT_TYPES or (op.kind == "device" and op.type.lower().startswith(_H2D))


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
    names = ev["name"].to_numpy()
    is_input = input_name[names]
    is_compute = compute_name[names]
    is_compute &= compute_line
    is_compute &= ~is_input
    return is_input, is_compute


def spans(events, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of the selected events only (never a full-length temporary)."""
    idx = np.flatnonzero(mask)
    start = events["start_ps"].to_numpy()[idx]
    return start, start + events["dur_ps"].to_numpy()[idx]


def timeline(trace: Trace, steps: Steps, classes: tuple[np.ndarray, np.ndarray]) -> Timeline:
    ev = trace.events
    start = np.asarray(steps.starts, np.int64)
    end = np.asarray(steps.ends, np.int64)
    is_input, is_compute = classes
    inp_merged = merge(*spans(ev, is_input))
    inp = covered(*inp_merged, start, end)
    s, e = spans(ev, is_compute)
    busy_merged = merge(np.concatenate([inp_merged[0], s]), np.concatenate([inp_merged[1], e]))
    busy = covered(*busy_merged, start, end)
    dur = end - start
    idle = np.zeros(len(start), np.int64)
    if len(start) > 1:
        idle[1:] = np.maximum(start[1:] - end[:-1], 0)
    return Timeline(start, dur, inp, busy - inp, np.maximum(dur - busy, 0), idle, busy_merged)
