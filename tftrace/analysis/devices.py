"""Per device (GPU, TPU chip): how busy it was between its first and last op, and its idle gaps."""

from __future__ import annotations

import numpy as np

from tftrace.analysis import kineto_window
from tftrace.analysis.intervals import merge
from tftrace.model.events import Trace
from tftrace.model.report import DeviceRow

IDLE_GAP_PS = 10_000_000  # 10 us: shorter pauses between kernels are launch latency, not idling


def device_rows(trace: Trace) -> tuple[DeviceRow, ...]:
    ev = trace.events
    line = ev["line"]
    out = []
    devices = sorted({(ln.host, ln.plane) for ln in trace.lines if ln.role == "device_ops"})
    is_compute = _computes(trace)
    counted = kineto_window.counted(trace)  # PyTorch traces: HTA's window of device work
    for host, plane in devices:
        ids = [i for i, ln in enumerate(trace.lines) if ln.role == "device_ops" and (ln.host, ln.plane) == (host, plane)]
        rows = np.flatnonzero(np.isin(line, ids) if counted is None else np.isin(line, ids) & counted)
        if len(rows) == 0:
            continue
        start = ev["start_ps"][rows]
        lo, hi = merge(start, start + ev["dur_ps"][rows])
        computes = is_compute[ev["name"][rows]]
        c_lo, c_hi = merge(start[computes], start[computes] + ev["dur_ps"][rows][computes])
        gaps = lo[1:] - hi[:-1]
        idle = gaps[gaps >= IDLE_GAP_PS]
        span = int(hi[-1] - lo[0])
        busy = int((hi - lo).sum())
        out.append(DeviceRow(host, plane, busy, span, round(busy / span, 6) if span else 0.0, len(idle),
                             int(idle.sum()), int(idle.max()) if len(idle) else 0, int((c_hi - c_lo).sum())))
    return tuple(out)


def _computes(trace: Trace) -> np.ndarray:
    """Per name: does a device event of it compute? Not a copy, a memset or a collective (as
    HTA's temporal breakdown counts them: its non-compute time)."""
    out = np.ones(len(trace.names) + 1, bool)
    for code, name in enumerate(trace.names):
        op = trace.ops.get(code)
        lower = (op.type if op is not None else name).lower()
        if lower.startswith(("memcpy", "memset", "copy")) or "nccl" in name.lower() or "rccl" in name.lower():
            out[code] = False
    return out
