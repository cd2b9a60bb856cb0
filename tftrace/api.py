"""The Python API behind the CLI: analyze a path into a Report."""

from __future__ import annotations

from tftrace import __version__
from tftrace.analysis.ops import SIDES
from tftrace.analysis.run import DEFAULT_TOP, failed_run
from tftrace.errors import ReportError, TftraceError, TraceReadError
from tftrace.hostmap import analyze_run
from tftrace.read.logdir import find_runs
from tftrace.report import Report


def analyze(path: str, top: int | None = DEFAULT_TOP, progress=None, ops: str = "all", workers: int = 1,
            client=None) -> Report:
    """Analyse every run under `path`. A broken run is reported with its error; if every run is
    broken, raise the first error. `progress(path, bytes_done, bytes_total)` hears reading;
    `ops` is all, host or device: which ops the op table lists. Runs of several hosts are
    analysed host by host: in `workers` processes, or on a Dask cluster (`client`, a
    dask.distributed Client); the report is the same either way."""
    if ops not in SIDES:
        raise TftraceError(f"unknown ops side {ops!r}; choose one of {', '.join(SIDES)}")
    runs = find_runs(path)
    reports = []
    for run in runs:
        try:
            reports.append(analyze_run(run, top, ops, progress, workers, client))
        except TftraceError as e:
            reports.append(failed_run(run.path, run.name, str(e)))
    if all(r.error for r in reports):
        raise TraceReadError(reports[0].error if len(reports) == 1 else
                             f"{path}: no readable run; first error: {reports[0].error}")
    return Report(tuple(reports), __version__)


def _side(path: str, side: str):
    """One side of a diff: a logdir, run folder or trace (analysed whole) or a saved JSON report."""
    try:
        if path.endswith(".json"):
            report = _saved_report(path)
            note = f"{side} is a saved report: only the ops it lists are compared"
        else:
            report, note = analyze(path, top=None), ""
    except TftraceError as e:
        raise type(e)(f"{side}: {e}") from None
    runs = [r for r in report.runs if not r.error]
    if len(runs) != 1:
        names = ", ".join(r.name for r in report.runs)
        raise TraceReadError(f"{side}: {path} holds {len(runs)} readable runs ({names}); pass one run folder")
    return runs[0], note


def _saved_report(path: str) -> Report:
    import json
    from tftrace.read import storage
    try:
        with storage.open_binary(path) as f:
            data = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise TraceReadError(f"{path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise ReportError(f"{path}: not valid JSON ({e})") from None
    try:
        return Report.from_dict(data)
    except ReportError as e:
        raise ReportError(f"{path}: {e}") from None


def diff(baseline: str, candidate: str, top: int | None = 20, fail_if_slower: float | str | None = None):
    """Compare two runs (each a logdir, run folder, trace file or saved JSON report).
    `fail_if_slower` (percent, e.g. 5 or "5%") adds the speed gate's decision (`result.gate`)."""
    from tftrace.analysis.diff import diff_runs
    from tftrace.analysis.gate import parse_limit
    limit = parse_limit(fail_if_slower) if fail_if_slower is not None else None
    base, base_note = _side(baseline, "baseline")
    cand, cand_note = _side(candidate, "candidate")
    notes = tuple(n for n in (base_note, cand_note) if n)
    return diff_runs(base, cand, baseline, candidate, top, notes, limit)
