"""A report's owners and cost figures per run, as the MCP server's owners and roofline tools give them."""

from __future__ import annotations

import dataclasses

from tftrace.model.answers import CostRow, DevicePeak, Owners, RooflineAnswer, RunOwners, RunRoofline
from tftrace.model.report import Report, RunReport


def owners_of(report: Report) -> Owners:
    return Owners(tuple(RunOwners(r.path, r.name, _step(r), r.owners, r.error) for r in report.runs),
                  report.tftrace_version)


def roofline_of(report: Report, top: int | None = None) -> RooflineAnswer:
    """`top`: the ops with the most self time kept, per run (None: all the report lists)."""
    return RooflineAnswer(tuple(_roofline(r, top) for r in report.runs), report.tftrace_version)


def _step(run: RunReport) -> int:
    return run.bottlenecks[0].step_ps if run.bottlenecks else run.steps.mean_ps


def _roofline(run: RunReport, top: int | None) -> RunRoofline:
    rows = sorted(run.ops, key=lambda o: (-o.self_ps, o.name, o.type))[:top]
    ops = tuple(CostRow(o.name, o.type, o.device, o.count, o.self_ps, o.flops, o.bytes_accessed) for o in rows)
    devices = tuple(DevicePeak(d.host, d.device, d.peak_flops_per_s, d.peak_bytes_per_s) for d in run.per_device)
    known = (run.flops_per_step is not None or run.mfu is not None
             or any(o.flops is not None or o.bytes_accessed is not None for o in ops)
             or any(d.peak_flops_per_s is not None or d.peak_bytes_per_s is not None for d in devices))
    rows = tuple(r for r in run.roofline.rows if r.scope != "op" or not top or r.name in {o.name for o in ops})
    return RunRoofline(run.path, run.name, run.flops_per_step, run.mfu, devices, ops, known or bool(rows), run.error,
                       dataclasses.replace(run.roofline, rows=rows))
