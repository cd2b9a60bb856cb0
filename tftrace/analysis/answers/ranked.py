"""Each run's ranked findings, compact: id, projection and fix, without the evidence (explain has it)."""

from __future__ import annotations

from tftrace.model.answers import FindingRow, Findings, RunFindings
from tftrace.model.report import Report, RunReport


def list_findings(report: Report) -> Findings:
    return Findings(tuple(_run(r) for r in report.runs), report.tftrace_version)


def _run(run: RunReport) -> RunFindings:
    rows = tuple(FindingRow(b.id, b.rank, b.kind, b.title, b.part, b.share, b.step_ps, b.step_if_removed_ps,
                            b.projection_basis, b.measured_step_ps, b.after_first, b.recommendation)
                 for b in run.bottlenecks)
    step = run.bottlenecks[0].step_ps if run.bottlenecks else run.steps.mean_ps
    return RunFindings(run.path, run.name, run.mode, run.verdict.bound, run.verdict.text, step, rows, run.error)
