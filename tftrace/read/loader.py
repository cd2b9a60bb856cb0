"""Load a run (its host files) into one Trace."""

from __future__ import annotations

import dataclasses

from tftrace.read.build import TraceBuilder
from tftrace.model.layout import EXPERIMENT, SAMPLES_FILE, SIDECAR
from tftrace.read.experiment_file import read_experiment
from tftrace.read.kineto import is_kineto, read_kineto
from tftrace.model.errors import TraceReadError
from tftrace.read import storage
from tftrace.read.logdir import Run, find_runs, host_from_file
from tftrace.read.samples_file import read_samples
from tftrace.read.sidecar_file import read_sidecar
from tftrace.model.events import Trace
from tftrace.read.xspace import read_xspace
from tftrace.read.trace_json import read_trace_json


def load_run(run: Run, progress=None) -> Trace:
    """Read every host file of a run. A broken host file is left out and named in the Trace's
    `problems`, the other hosts kept; if no file reads, raise TraceReadError naming the first.
    `progress(path, bytes_done, bytes_total)` hears how reading a large file goes."""
    return _load(run, run.files, progress, True)


def load_host(run: Run, path: str, beside_files: bool = False, progress=None) -> Trace:
    """One host file of a run as a Trace of its own (named as load_run names it), with the
    run's sidecar; `beside_files` also reads its Python samples and experiment figures."""
    return _load(run, (path,), progress, beside_files, by_file=len(run.files) > 1)


def _load(run: Run, files, progress, beside_files: bool, by_file: bool | None = None) -> Trace:
    kineto = {f for f in files if not f.endswith(".xplane.pb") and is_kineto(f)}  # the files read here
    fmt = "xplane" if any(f.endswith(".xplane.pb") for f in run.files) else "kineto" if kineto else "trace_json"
    builder = TraceBuilder(run.path, fmt)
    problems: list[TraceReadError] = []
    # Two processes on one machine write the same hostname into their XSpace: with several
    # files, each file's name (`<host>.xplane.pb`, `127.0.0.1_6009.xplane.pb`) names its host.
    by_file = len(files) > 1 if by_file is None else by_file
    for path in files:
        mark = builder.mark()
        try:
            if path.endswith(".xplane.pb"):
                read_xspace(path, builder, progress, host_from_file(path) if by_file else None)
            elif path in kineto:
                read_kineto(path, builder, host_from_file(path))
            else:
                read_trace_json(path, builder, host_from_file(path))
        except TraceReadError as e:
            builder.rollback(mark)
            problems.append(e)
    if len(problems) == len(files):
        raise problems[0]
    trace = builder.build()
    sidecar_path = beside(run, SIDECAR)
    sidecar, noted = read_sidecar(sidecar_path) if storage.isfile(sidecar_path) else ({}, [])
    trace = dataclasses.replace(trace, sidecar=sidecar, problems=tuple(str(e) for e in problems) + tuple(noted))
    return with_files_beside(run, trace) if beside_files else trace


def with_files_beside(run: Run, trace: Trace) -> Trace:
    """`trace` with its run's Python samples and experiment figures; a file that cannot be read
    is left out and named in the Trace's `problems`."""
    samples, problems, samples_path = None, [], beside(run, SAMPLES_FILE)
    if storage.isfile(samples_path):
        try:
            samples = read_samples(samples_path)
        except TraceReadError as e:  # the trace stands without them
            problems.append(str(e))
    experiment_path = beside(run, EXPERIMENT)
    experiment, more = read_experiment(experiment_path) if storage.isfile(experiment_path) else (None, [])
    return dataclasses.replace(trace, problems=trace.problems + tuple(problems) + tuple(more),
                               python_samples=samples, experiment=experiment)


def beside(run: Run, name: str) -> str:
    """The path of a file saved beside a run's traces (its sidecar, Python samples, experiment)."""
    # A run given as one file has it as its path (logdir.find_runs): its folder holds the rest.
    folder = storage.dirname(run.path) if run.files == (run.path,) else run.path
    return storage.join(folder, name)


def load(path: str) -> Trace:
    """The Trace of the single run at `path` (the first run, by name, of a logdir)."""
    return load_run(find_runs(path)[0])
