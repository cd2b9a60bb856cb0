"""A run's cost figures: each op's and layer's FLOPs, its devices' peaks, FLOPs per step,
achieved FLOP/s and MFU, and the roofline rows of its ops, owners and layers.

MFU is the FLOPs one step does (as counted: XLA's HLO, the TPU's stats, input shapes or the
capture) over the mean step time, over the peak FLOP/s of the devices that ran it (XProf's
peak: each device's maximum over precisions). Nothing here is guessed: where the work or the
peak is not known, the figure is None and the roofline says why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tftrace.analysis.classify import classify, trace_scopes
from tftrace.analysis.cost.bound import RULE, roofline_row
from tftrace.analysis.cost.captured import CapturedCost, captured_cost
from tftrace.analysis.cost.device_peaks import Peak, device_peaks, host_peak
from tftrace.analysis.cost.op_costs import SOURCES, EntryCost, code_costs, entry_costs
from tftrace.analysis.cost.xla import module_runs
from tftrace.analysis.owners.of_ops import Unscoped, op_owner
from tftrace.analysis.owners.program import program_of
from tftrace.model.events import Trace
from tftrace.model.owners import OwnerRow
from tftrace.model.roofline import Roofline, RooflineRow

_ARITHMETIC = ("matmul", "convolution")  # the categories whose kernels' precision is the run's


def host_costs(trace: Trace) -> dict:
    """One host's ops' costs over its trace: (op name, on a device) -> EntryCost (the map's part)."""
    return entry_costs(trace, code_costs(trace))


def merge_costs(parts) -> dict:
    out: dict = {}
    for part in parts:
        for key, c in part.items():
            b = out.get(key)
            out[key] = c if b is None else EntryCost(b.flops + c.flops, b.bytes + c.bytes, b.runs + c.runs,
                                                     b.unknown or c.unknown, b.time_ps + c.time_ps)
    return out


@dataclass(frozen=True)
class DevicePeak:
    """What a device row shows of its peaks."""

    peak: Peak
    precision: str = ""  # the run's matmul and convolution arithmetic on it


@dataclass(frozen=True)
class RunCost:
    ops: dict = field(default_factory=dict)  # (op name, on a device) -> EntryCost over the trace
    layers: dict = field(default_factory=dict)  # layer -> FLOPs per step (forward and backward)
    devices: dict = field(default_factory=dict)  # (host, plane) -> DevicePeak
    flops_per_step: float | None = None
    mfu: float | None = None
    roofline: Roofline = Roofline()


_MODES = {"train": "train", "test": "evaluate", "predict": "predict"}  # the sidecar's steps, as run modes name them


def run_cost(trace: Trace, table, costs: dict, steps: int, mean_step_ps: int, top: int | None,
             mode: str = "") -> RunCost:
    """The run's cost figures from the timed host's Trace, every host's op table and costs, its
    steps (how many, and their mean) and mode (the capture's count is of one kind of step: a run
    of another kind does not take it)."""
    captured = captured_cost(trace.sidecar)
    skipped = ""
    if captured is not None and captured.step in _MODES and mode in _MODES.values() and _MODES[captured.step] != mode:
        captured, skipped = None, (f"the capture counted a {captured.step} step's FLOPs; these steps are "
                                   f"{mode}: not used")
    device_side = any(e.device != "host" for e in table)
    main = [e for e in table if (e.device != "host") == device_side]
    ops_by_name = {(op.name, op.kind == "device"): op for op in trace.ops.values()}
    precision = _run_precision(main, ops_by_name)
    peaks = device_peaks(trace)
    used = sorted({(ln.host, ln.plane) for ln in trace.lines if ln.role == "device_ops"})
    devices = {k: DevicePeak(peaks[k], precision) for k in used if k in peaks}
    if device_side:
        known = [devices[k].peak for k in used if k in devices and devices[k].peak.flops_per_s]
        peak = known[0] if known else next((d.peak for d in devices.values()), None)
        count = len(known)
        kind = _kind(used)
    else:
        peak = host_peak(trace.sidecar)
        count = 1 if peak is not None and peak.flops_per_s else 0
        kind = "CPU"
    per_step, counted, note = _per_step(trace, costs, captured, steps)
    missing = trace.sidecar.get("cost_missing") if isinstance(trace.sidecar, dict) else None
    if per_step is None and isinstance(missing, str) and missing:
        skipped = skipped or f"the capture could not count the step's FLOPs: {missing}"
    note = "; ".join(n for n in (note, skipped) if n)
    step_s = mean_step_ps / 1e12 if mean_step_ps > 0 else 0.0
    achieved = per_step / step_s if per_step is not None and step_s > 0 else None
    mfu = achieved / (peak.flops_per_s * count) if achieved is not None and peak is not None and \
        peak.flops_per_s and count else None
    # Host ops costed from their shapes on a device run (PyTorch's): their time is their kernels'.
    launched = [e for e in table if device_side and e.device == "host" and costs.get((e.name, False)) is not None
                and costs[(e.name, False)].time_ps]
    rows = _op_rows(main + launched, costs, ops_by_name, peak, top, precision) \
        + _group_rows(trace, main + launched, costs, ops_by_name, peak, top, precision) \
        + _module_rows(trace, main, peak, precision) + _captured_rows(main, captured, steps, peak, top)
    matched = peak.at(precision) if peak and precision else None
    matched_mfu = round(achieved / (matched * count), 6) if achieved is not None and matched and count else None
    roofline = Roofline(kind if (rows or per_step is not None) else "", counted,
                        peak.flops_per_s if peak else None, peak.bytes_per_s if peak else None, precision,
                        matched, count, _ridge(peak), peak.source if peak else _no_peak(trace, device_side),
                        achieved, matched_mfu, RULE, note, tuple(rows))
    layers = _layer_flops(main, costs, captured, steps)
    return RunCost(costs, layers, devices, per_step, None if mfu is None else round(mfu, 6), roofline)


def _kind(planes) -> str:
    kinds = sorted({p.split(":")[1] for _h, p in planes if ":" in p})
    return "/".join(kinds) or "device"


def _ridge(peak: Peak | None) -> float | None:
    if peak is None or not peak.flops_per_s or not peak.bytes_per_s:
        return None
    return round(peak.flops_per_s / peak.bytes_per_s, 3)


def _no_peak(trace: Trace, device_side: bool) -> str:
    if device_side:
        return "no peak known: the trace records no clock, cores or device name to read one from"
    return "no peak known: the host's was not measured (tftrace's capture records it in the sidecar's host_peaks)"


def _run_precision(entries, ops_by_name) -> str:
    """The precision most of the run's matmul and convolution time computes in ("" if no
    kernel says)."""
    time: dict[str, int] = {}
    for e in entries:
        op = ops_by_name.get((e.name, e.device != "host"))
        if op is not None and op.precision and e.category in _ARITHMETIC:
            time[op.precision] = time.get(op.precision, 0) + e.self_ps
    return max(time.items(), key=lambda kv: (kv[1], kv[0]))[0] if time else ""


def _per_step(trace: Trace, costs: dict, captured: CapturedCost | None, steps: int):
    """(FLOPs per step, what counted them, a note on what they leave out)."""
    runs = module_runs(trace)
    if runs and steps:
        total = sum(m.cost.flops for m in runs)
        graphed = [m.module.name for m in runs if m.graphed]
        notes = [f"{', '.join(sorted(set(graphed)))}: kernels inside CUDA graphs name no instruction, so the FLOPs "
                 "per step count each module run whole, and those kernels' op rows have none"] if graphed else []
        unknown = sorted({name for m in runs for name in m.module.unknown})
        if unknown:
            notes.append(f"custom calls no cost model can see into are left out ({', '.join(unknown[:3])}"
                         f"{', ...' if len(unknown) > 3 else ''}): the FLOPs per step are a floor")
        cpu = all(m.module.model == "cpu" for m in runs)
        return total / steps, SOURCES["hlo_cpu" if cpu else "hlo"], "; ".join(notes)
    flops = sum(c.flops for c in costs.values())
    sources = {s for s in (_source_of(trace),) if s}
    if flops and steps:
        return flops / steps, ", ".join(sorted(sources)) or SOURCES["shapes"], ""
    if captured is not None:
        total = captured.step_flops
        if total is None:
            total = sum(f + b for f, b in captured.layers.values()) + sum(captured.other.values())
        return total, f"the capture: {captured.source}", \
            "the trace holds no shapes: FLOPs per layer and phase come from what the capture counted"
    return None, "", ""


def _source_of(trace: Trace) -> str:
    c = trace.costs
    if c.per_run:
        return SOURCES[next(iter(c.per_run.values()))[1]]
    if c.totals:
        return SOURCES[next(iter(c.totals.values())).source]
    return ""


def _op_rows(entries, costs, ops_by_name, peak, top, default: str = "") -> list[RooflineRow]:
    rows = []
    def _time(e):
        c = costs.get((e.name, e.device != "host"))
        return (c.time_ps if c is not None and c.time_ps else e.self_ps)
    for e in sorted(entries, key=lambda e: (-_time(e), e.name)):
        c = costs.get((e.name, e.device != "host"))
        time = (c.time_ps or e.self_ps) if c is not None else 0
        if c is None or c.unknown or not (c.flops or c.bytes) or time <= 0:
            continue
        op = ops_by_name.get((e.name, e.device != "host"))
        rows.append(roofline_row("op", e.name, e.phase, time, c.runs or e.count, c.flops, c.bytes,
                                 (op.precision if op is not None else "") or default, peak))
        if top and len(rows) >= top:
            break
    return rows


def _group_rows(trace, entries, costs, ops_by_name, peak, top, default: str = "") -> list[RooflineRow]:
    """Per owner (with its phase) and per layer: their ops' costs and time added up."""
    scopes = trace_scopes(trace)
    program = program_of(trace.sidecar)
    unscoped = Unscoped(program, set())
    groups: dict[tuple, list] = {}
    for e in entries:
        c = costs.get((e.name, e.device != "host"))
        if c is None or c.unknown:
            continue
        op = ops_by_name.get((e.name, e.device != "host"))
        precision = (op.precision if op is not None else "") or (default if op is not None and op.kind == "torch"
                                                                 else "")
        if op is not None:
            key = op_owner(op, classify(op, scopes), program, unscoped)
            row = OwnerRow(key.kind, key.name, key.phase)
            _add(groups, ("owner", row.owner, key.phase), e, c, precision)
        if e.layer:
            _add(groups, ("layer", e.layer, ""), e, c, precision)
    out = []
    for scope in ("owner", "layer"):
        mine = sorted(((k, v) for k, v in groups.items() if k[0] == scope), key=lambda kv: (-kv[1][0], kv[0]))
        for (s, name, phase), (time, runs, flops, nbytes, by) in mine[:top] if top else mine:
            if time > 0 and (flops or nbytes):
                precision = max(by.items(), key=lambda kv: (kv[1], kv[0]))[0] if by else ""
                out.append(roofline_row(s, name, phase, time, runs, flops, nbytes, precision, peak))
    return out


def _add(groups: dict, key: tuple, e, c: EntryCost, precision: str) -> None:
    """Add an op's time, runs and cost to a group; its precisions by the time of their ops
    that do arithmetic (the group's precision is the one with the most)."""
    time, runs, flops, nbytes, by = groups.get(key, (0, 0, 0.0, 0.0, {}))
    own = c.time_ps or e.self_ps
    if precision and c.flops:
        by = {**by, precision: by.get(precision, 0) + own}
    groups[key] = (time + own, runs + (c.runs or e.count), flops + c.flops, nbytes + c.bytes, by)


def _module_rows(trace: Trace, entries, peak, precision: str) -> list[RooflineRow]:
    """A row per module run inside CUDA graphs, whole: its kernels name no instruction, so its
    work is known only per module run; its time is its kernels' own."""
    time_of = {}
    for e in entries:
        if e.device != "host":
            time_of[e.name] = time_of.get(e.name, 0) + e.self_ps
    rows = []
    for m in module_runs(trace):
        if not m.graphed:
            continue
        names = {trace.ops[code].name for (h, code, p) in trace.costs.kernels
                 if h == m.host and p == m.module.program and code in trace.ops}
        time = sum(time_of.get(n, 0) for n in names)
        cost = m.cost
        if time > 0 and (cost.flops or cost.bytes):
            rows.append(roofline_row("module", m.module.name, "", time, m.runs, cost.flops, cost.bytes, precision,
                                     peak))
    return rows


def _captured_rows(entries, captured: CapturedCost | None, steps: int, peak, top) -> list[RooflineRow]:
    """Per layer and phase, the capture's FLOPs over its ops' time (no bytes: the capture
    counts none)."""
    if captured is None or not steps:
        return []
    time: dict[tuple[str, str], tuple[int, int]] = {}
    for e in entries:
        if e.layer in captured.layers and e.phase in ("forward", "backward"):
            t, n = time.get((e.layer, e.phase), (0, 0))
            time[(e.layer, e.phase)] = (t + e.self_ps, n + e.count)
    rows = []
    for (layer, phase), (t, n) in sorted(time.items(), key=lambda kv: -kv[1][0]):
        flops = captured.layers[layer][0 if phase == "forward" else 1] * steps
        if t > 0 and flops:
            rows.append(roofline_row("layer", layer, phase, t, n, flops, 0.0, "fp32", peak))
    return rows[:top] if top else rows


def _layer_flops(entries, costs, captured: CapturedCost | None, steps: int) -> dict[str, float]:
    """Per layer, FLOPs per step: its ops' over the steps, else what the capture counted."""
    out: dict[str, float] = {}
    if steps:
        for e in entries:
            c = costs.get((e.name, e.device != "host"))
            if e.layer and c is not None and not c.unknown and c.flops:
                out[e.layer] = out.get(e.layer, 0.0) + c.flops / steps
    if not out and captured is not None:
        out = {layer: f + b for layer, (f, b) in captured.layers.items()}
    return out


def top_rows(roofline: Roofline, top: int | None) -> Roofline:
    """The roofline with at most `top` rows of each scope (op, owner, layer; modules all), in order."""
    if not top:
        return roofline
    seen: dict[str, int] = {}
    rows = []
    for r in roofline.rows:
        seen[r.scope] = seen.get(r.scope, 0) + 1
        if r.scope == "module" or seen[r.scope] <= top:
            rows.append(r)
    return dataclasses.replace(roofline, rows=tuple(rows))
