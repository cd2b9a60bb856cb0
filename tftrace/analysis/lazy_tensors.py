"""PyTorch/XLA runs, told apart by its lazy-tensor runtime's events on the host (`StepMarker` for
`xm.mark_step()`, `SyncTensorsGraph`, `TensorCollectionBarrier`, `XLAGraphExecutor::Compile`,
`PjRtComputationClient::...`) or by the torch ops its HLO metadata names on the device
(`aten__addmm`); and those events, found once per trace."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from tftrace.model.events import Trace

STEP_MARKER = "StepMarker"  # xm.mark_step() (torch_xla.step(), MpDeviceLoader call it)
SYNC = "SyncTensorsGraph"  # the host cuts the lazy graph and runs it: at mark_step, or where a value is read
COMPILES = ("XLAGraphExecutor::Compile",)  # a graph seen for the first time (PjRtComputationClient::Compile inside)
FROM_DEVICE = ("PjRtComputationClient::TransferFromServer",)  # `.item()`, `.cpu()`, printing a tensor
TO_DEVICE = ("PjRtComputationClient::TransferToServer",)  # a CPU tensor sent to the device (the batch)
_MARKS = (STEP_MARKER, SYNC, "SyncLiveTensorsGraph", "TensorCollectionBarrier", "XLAGraphExecutor::",
          "PjRtComputationClient::")


def is_torch_xla(trace: Trace) -> bool:
    """Was the trace recorded from a PyTorch/XLA program?"""
    if any(trace.has_prefix(mark) for mark in _MARKS):
        return True
    return any(op.source.rsplit("/", 1)[-1].startswith(("aten__", "xla__")) for op in trace.ops.values() if op.source)


@dataclass(frozen=True)
class Runtime:
    """The runtime's events on the host threads, as rows of the trace (outermost only, in time order)."""

    markers: np.ndarray  # StepMarker
    syncs: np.ndarray  # SyncTensorsGraph outside any StepMarker: a value read inside the step cut the graph
    compiles: np.ndarray
    from_device: np.ndarray
    to_device: np.ndarray


_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def runtime(trace: Trace) -> Runtime:
    made = _MADE.get(trace)
    if made is None:
        made = _MADE[trace] = _runtime(trace)
    return made


def _runtime(trace: Trace) -> Runtime:
    host = trace.on_lines(lambda ln: not ln.on_device)
    ev = trace.events

    def rows(names) -> np.ndarray:
        codes = trace.codes(names)
        found = np.flatnonzero(trace.named(codes) & host) if codes else np.zeros(0, np.int64)
        return found[np.argsort(ev["start_ps"][found], kind="stable")]

    markers = rows((STEP_MARKER,))
    syncs = rows((SYNC,))
    if len(markers) and len(syncs):  # the sync a mark_step makes is inside its StepMarker
        at = np.searchsorted(ev["start_ps"][markers], ev["start_ps"][syncs], side="right") - 1
        inside = (at >= 0) & (ev["start_ps"][syncs] < (ev["start_ps"] + ev["dur_ps"])[markers[np.maximum(at, 0)]])
        syncs = syncs[~inside]
    return Runtime(markers, syncs, rows(COMPILES), rows(FROM_DEVICE), rows(TO_DEVICE))
