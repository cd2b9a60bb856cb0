"""The one door: every front end (the CLI, the TensorBoard tab, the notebook) and the Python API
reach reading and analysis through these calls. Analyses are imported when first called, so
importing this module stays cheap."""

from __future__ import annotations

from tftrace.model.errors import ReportError, TftraceError, TraceReadError
from tftrace.model.report import DEFAULT_TOP, SIDES, Report, RunReport, failed_run
from tftrace.model.version import VERSION
from tftrace.read.logdir import Run, find_runs, is_trace_file  # noqa: F401 - the runs a path holds, for the front ends
# Paths and files in a local folder or in cloud storage (gs://, s3://...), for the front ends.
from tftrace.read.storage import isdir as is_folder, is_url, join, listdir, remove, write_bytes  # noqa: F401
from tftrace.render import jupyter as _jupyter  # noqa: F401 - Jupyter shows reports and diffs as HTML

DIFF_TOP = 20  # ops, layers and categories a diff lists unless asked for more


def analyze(path: str, top: int | None = DEFAULT_TOP, progress=None, ops: str = "all", workers: int = 1,
            client=None) -> Report:
    """Analyse every run under `path`. A broken run is reported with its error; if every run is
    broken, raise the first error. `progress(path, bytes_done, bytes_total)` hears reading;
    `ops` is all, host or device: which ops the op table lists. Runs of several hosts are
    analysed host by host: in `workers` processes, or on a Dask cluster (`client`, a
    dask.distributed Client); the report is the same either way."""
    if ops not in SIDES:
        raise TftraceError(f"unknown ops side {ops!r}; choose one of {', '.join(SIDES)}")
    reports = [analyze_run(run, top, ops, progress, workers, client) for run in find_runs(path)]
    if all(r.error for r in reports):
        raise TraceReadError(reports[0].error if len(reports) == 1 else
                             f"{path}: no readable run; first error: {reports[0].error}")
    return Report(tuple(reports), VERSION)


def analyze_run(run: Run, top: int | None = DEFAULT_TOP, ops: str = "all", progress=None, workers: int = 1,
                client=None) -> RunReport:
    """One run's report entry, its hosts mapped and reduced as `analyze` does (hostmap.py); a run
    that cannot be read becomes an entry carrying its error."""
    from tftrace.hostmap import analyze_run as mapped
    try:
        return mapped(run, top, ops, progress, workers, client)
    except TftraceError as e:
        return failed_run(run.path, run.name, str(e))


def compare(baseline: RunReport, candidate: RunReport, baseline_name: str, candidate_name: str,
            top: int | None = DIFF_TOP, notes: tuple[str, ...] = (), limit: float | None = None):
    """The DiffReport of two analysed runs; `limit` (percent) adds the speed gate's decision."""
    from tftrace.analysis.compare.runs import diff_runs
    return diff_runs(baseline, candidate, baseline_name, candidate_name, top, notes, limit)


def diff(baseline: str, candidate: str, top: int | None = DIFF_TOP, fail_if_slower: float | str | None = None):
    """Compare two runs (each a logdir, run folder, trace file or saved JSON report).
    `fail_if_slower` (percent, e.g. 5 or "5%") adds the speed gate's decision (`result.gate`)."""
    from tftrace.analysis.compare.gate import parse_limit
    limit = parse_limit(fail_if_slower) if fail_if_slower is not None else None
    base, base_note = _side(baseline, "baseline")
    cand, cand_note = _side(candidate, "candidate")
    notes = tuple(n for n in (base_note, cand_note) if n)
    return compare(base, cand, baseline, candidate, top, notes, limit)


def explore(path: str, host: str | None = None):
    """The RunAnalysis of the single run at `path` (the first run, by name, of a logdir): its steps,
    timeline, ops, layers, Python, memory and findings, each computed on first use and kept."""
    from tftrace.analysis.explore import RunAnalysis
    from tftrace.read.loader import load_run
    runs = find_runs(path)
    if not runs:
        raise TraceReadError(f"{path}: no profiler run found")
    return RunAnalysis(load_run(runs[0]), runs[0].name, host)


def findings(path: str | Report):
    """Each run's ranked findings, compact (`tftrace findings`): id, projection, basis and fix.
    `path` may also be a Report already made."""
    from tftrace.analysis.answers.ranked import list_findings
    return _versioned(list_findings(path if isinstance(path, Report) else report_of(path)))


def explain(path: str | Report, finding_id: str):
    """The ops, owners, steps and median-step timeline behind one finding of the single run at
    `path` (`tftrace explain`), each list capped."""
    from tftrace.analysis.answers.explain import explain as explain_one
    return _versioned(explain_one(one_run(path), finding_id))


def whatif(path: str | Report, finding_ids: list[str] | tuple[str, ...]):
    """The step once the fixes of these findings of the single run at `path` are applied together
    (`tftrace whatif`), from their projections, with what the figure rests on."""
    from tftrace.analysis.answers.whatif import what_if
    return _versioned(what_if(one_run(path), finding_ids))


def owners(path: str | Report):
    """Each run's owners table (who in the program holds each part of a step)."""
    from tftrace.analysis.answers.run_tables import owners_of
    return _versioned(owners_of(path if isinstance(path, Report) else report_of(path)))


def roofline(path: str | Report, top: int | None = DEFAULT_TOP):
    """The cost figures each run's report holds: the `top` ops' FLOPs and bytes, the devices' peaks,
    FLOPs per step and MFU (None where the trace cannot say)."""
    from tftrace.analysis.answers.run_tables import roofline_of
    return _versioned(roofline_of(path if isinstance(path, Report) else report_of(path), top))


def report_of(path: str) -> Report:
    """Every op kept (explain needs them all): a path analysed, or a saved JSON report read back."""
    return _saved_report(path) if path.endswith(".json") else analyze(path, top=None)


def one_run(path: str | Report) -> RunReport:
    """The single readable run of a path (or a Report); several are an error naming them."""
    report = path if isinstance(path, Report) else report_of(path)
    runs = [r for r in report.runs if not r.error]
    if len(runs) != 1:
        names = ", ".join(r.name for r in report.runs)
        where = path if isinstance(path, str) else "the report"
        raise TraceReadError(f"{where} holds {len(runs)} readable runs ({names}); pass one run folder")
    return runs[0]


def schema(name: str | None = None) -> dict:
    """The JSON Schema (draft 2020-12) of one document tftrace writes (report, diff, findings,
    explain, whatif, spilled, error), or of all of them together."""
    from tftrace.model.json_schema import DOCUMENTS, combined_schema, document_schema
    if name is None:
        return combined_schema()
    if name not in DOCUMENTS:
        raise TftraceError(f"no schema {name!r}; choose one of {', '.join(DOCUMENTS)}")
    return document_schema(name)


def _versioned(answer):
    """An answer signed with the version that made it (a saved report's may be older)."""
    import dataclasses
    return dataclasses.replace(answer, tftrace_version=VERSION)


def load(path: str):
    """The Trace (the event table) of the single run at `path` (the first run, by name, of a logdir)."""
    from tftrace.read.loader import load as load_trace
    return load_trace(path)


def _side(path: str, side: str) -> tuple[RunReport, str]:
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
