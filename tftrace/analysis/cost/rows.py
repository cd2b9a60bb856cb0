"""The report's rows with their cost figures: ops' FLOPs and bytes, layers' FLOPs per step,
devices' peaks (from analysis/cost/summary.py's RunCost)."""

from __future__ import annotations

import dataclasses

from tftrace.analysis.cost.summary import RunCost
from tftrace.model.report import DeviceRow


def with_costs(rows, cost: RunCost) -> tuple:
    """Op rows with their FLOPs and bytes over the trace, where known."""
    out = []
    for r in rows:
        c = cost.ops.get((r.name, r.device != "host"))
        if c is not None and not c.unknown:
            r = dataclasses.replace(r, flops=c.flops, bytes_accessed=c.bytes)
        out.append(r)
    return tuple(out)


def with_layer_flops(rows, cost: RunCost) -> tuple:
    """Layer rows with their FLOPs per step (forward and backward), where known."""
    return tuple(dataclasses.replace(r, flops_per_step=cost.layers[r.layer]) if r.layer in cost.layers else r
                 for r in rows)


def with_peaks(row: DeviceRow, cost: RunCost) -> DeviceRow:
    """A device row with its peaks, the run's precision on it and where the figures come from."""
    found = cost.devices.get((row.host, row.device))
    if found is None:
        return row
    peak = found.peak
    return dataclasses.replace(row, peak_flops_per_s=peak.flops_per_s, peak_bytes_per_s=peak.bytes_per_s,
                               precision=found.precision,
                               precision_peak_flops_per_s=peak.at(found.precision) if found.precision else None,
                               peak_source=peak.source)
