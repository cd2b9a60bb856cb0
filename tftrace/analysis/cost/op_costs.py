"""What each op of a trace cost over the whole trace, from whatever the trace holds: XLA's HLO
(analysis/cost/xla.py), a TPU op's own stats (each event one run), or input shapes read with
a formula (PyTorch's ops); per op name code, then per op as the op table lists them."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tftrace.analysis.cost.xla import xla_op_costs
from tftrace.model.cost import OpCost
from tftrace.model.events import Trace

# What counted an op's cost, as the report says it.
SOURCES = {"hlo": "XLA's optimized HLO, by its GPU cost model as XProf counts",
           "hlo_cpu": "XLA's optimized HLO, by its target-free cost model",
           "tpu": "the TPU's per-op stats", "shapes": "the ops' recorded input shapes"}


class CodeCost(NamedTuple):
    """One op name's cost over the trace."""

    cost: OpCost
    runs: int
    source: str  # a key of SOURCES
    unknown: bool = False  # part of it is a call whose cost nothing in the trace can say
    time_ps: int = 0  # the time its work took, where not its own (self) time: an op counted from its
    # shapes holds the ops it calls (`aten::convolution` around `aten::mkldnn_convolution`)


def code_costs(trace: Trace) -> dict[int, CodeCost]:
    """Per op name code, what its events cost in all."""
    costs = trace.costs
    out = {code: CodeCost(cost, runs, "hlo", unknown) for code, (cost, runs, unknown) in xla_op_costs(trace).items()}
    if costs.per_run:
        counts = _events_per_host(trace)
        for (host, code), (cost, source) in costs.per_run.items():
            n = counts.get((host, code), 0)
            if n:
                out[code] = _add(out.get(code), CodeCost(OpCost().plus(cost, n), n, source))
    codes = {code for _h, code in costs.totals}
    inclusive = (_device_time(trace, codes) or _durations(trace, codes)) if costs.totals else {}
    for (_host, code), total in costs.totals.items():
        out[code] = _add(out.get(code), CodeCost(OpCost(total.flops, total.bytes, 0.0), total.runs, total.source,
                                                 False, inclusive.get(code, 0)))
    return out


def _device_time(trace: Trace, codes: set) -> dict[int, int]:
    """Per code of a host op: the device time of the kernels launched inside its events (a
    launch on the op's thread, within its span, linked to its kernel by correlation id); {}
    where the trace has no device work linked to launches."""
    ev, st = trace.events, trace.stats
    corr = st["correlation"]
    linked = corr >= 0
    rows, corr = st["event"][linked], corr[linked]
    if not len(rows):
        return {}
    on_device = trace.on_lines(lambda ln: ln.on_device)[rows]
    dev_time = dict(zip(corr[on_device].tolist(), ev["dur_ps"][rows[on_device]].tolist()))
    if not dev_time:
        return {}
    launch_rows, launch_corr = rows[~on_device], corr[~on_device]
    launch_line, launch_start = ev["line"][launch_rows].astype(np.int64), ev["start_ps"][launch_rows]
    order = np.lexsort((launch_start, launch_line))
    launch_line, launch_start, launch_corr = launch_line[order], launch_start[order], launch_corr[order]
    kernel_ps = np.array([dev_time.get(c, 0) for c in launch_corr.tolist()], np.float64)
    cum = np.concatenate(([0.0], np.cumsum(kernel_ps)))
    key = (launch_line << 42) + launch_start  # one sorted axis: line, then start
    out: dict[int, int] = {}
    mine = np.flatnonzero(trace.named(codes) & ~trace.on_lines(lambda ln: ln.on_device))
    line = ev["line"][mine].astype(np.int64)
    lo = np.searchsorted(key, (line << 42) + ev["start_ps"][mine], side="left")
    hi = np.searchsorted(key, (line << 42) + ev["start_ps"][mine] + ev["dur_ps"][mine], side="right")
    total = cum[hi] - cum[lo]
    for code, t in zip(ev["name"][mine].tolist(), total.tolist()):
        out[code] = out.get(code, 0) + int(t)
    return out if any(out.values()) else {}


def _durations(trace: Trace, codes: set) -> dict[int, int]:
    """Per code: its events' whole durations on the host, children included."""
    ev = trace.events
    rows = trace.named(codes) & trace.on_lines(lambda ln: not ln.on_device)
    total = np.bincount(ev["name"][rows], ev["dur_ps"][rows].astype(np.float64), minlength=len(trace.names) + 1)
    return {c: int(total[c]) for c in codes}


def _add(a: CodeCost | None, b: CodeCost) -> CodeCost:
    if a is None:
        return b
    return CodeCost(a.cost.plus(b.cost), a.runs + b.runs, a.source, a.unknown or b.unknown, a.time_ps + b.time_ps)


def _events_per_host(trace: Trace) -> dict[tuple[str, int], int]:
    hosts = list(trace.hosts) or [""]
    index = {h: i for i, h in enumerate(hosts)}
    host_of = trace.per_line(np.array([index.get(ln.host, 0) for ln in trace.lines] + [0], np.int64))
    key = host_of * (len(trace.names) + 1) + trace.events["name"]
    counts = np.bincount(key, minlength=len(hosts) * (len(trace.names) + 1))
    out = {}
    for k in np.flatnonzero(counts).tolist():
        out[(hosts[k // (len(trace.names) + 1)], k % (len(trace.names) + 1))] = int(counts[k])
    return out


class EntryCost(NamedTuple):
    flops: float
    bytes: float
    runs: int
    unknown: bool
    time_ps: int = 0  # where not the op's self time (CodeCost.time_ps)


def entry_costs(trace: Trace, by_code: dict[int, CodeCost]) -> dict[tuple[str, bool], EntryCost]:
    """(op name, on a device) -> its cost, as op table entries name ops (several codes of one
    op, a kernel per GPU, add up)."""
    out: dict[tuple[str, bool], EntryCost] = {}
    for code, c in by_code.items():
        op = trace.ops.get(code)
        if op is None:
            continue
        key = (op.name, op.kind == "device")
        before = out.get(key, EntryCost(0.0, 0.0, 0, False))
        out[key] = EntryCost(before.flops + c.cost.flops, before.bytes + c.cost.bytes, before.runs + c.runs,
                             before.unknown or c.unknown, before.time_ps + c.time_ps)
    return out
