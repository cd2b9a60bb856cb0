"""The Python API behind the CLI: analyze a path into a Report."""

from __future__ import annotations

from tftrace import __version__
from tftrace.analysis.run import DEFAULT_TOP, analyze_trace, failed_run
from tftrace.errors import TftraceError, TraceReadError
from tftrace.load import load_run
from tftrace.logdir import find_runs
from tftrace.report import Report


def analyze(path: str, top: int | None = DEFAULT_TOP) -> Report:
    """Analyse every run under `path`. A broken run is reported with its error; if every run is
    broken, raise the first error."""
    runs = find_runs(path)
    reports = []
    for run in runs:
        try:
            reports.append(analyze_trace(load_run(run), run.name, top))
        except TftraceError as e:
            reports.append(failed_run(run.path, run.name, str(e)))
    if all(r.error for r in reports):
        raise TraceReadError(reports[0].error if len(reports) == 1 else
                             f"{path}: no readable run; first error: {reports[0].error}")
    return Report(tuple(reports), __version__)
