"""Find runs in a path: a logdir at any depth, one run folder, or one trace file."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from tftrace.model.errors import NoTracesError, TraceReadError
from tftrace.model.layout import EXPERIMENT, JSON_SUFFIXES, SAMPLES_FILE, SIDECAR, TRACE_SUFFIXES
from tftrace.read import storage
from tftrace.read.kineto import is_kineto



@dataclass(frozen=True)
class Run:
    """One profiling session: a folder `plugins/profile/<run>/` with a file per host."""

    path: str  # the run folder, or the file when a single file was given
    name: str  # the run's name relative to the logdir, as TensorBoard lists it
    files: tuple[str, ...]


def is_trace_file(path: str) -> bool:
    """A trace by its name alone (`*.xplane.pb`, `*.trace.json[.gz]`, `*.pt.trace.json[.gz]`)."""
    return path.endswith(TRACE_SUFFIXES)


def _is_trace(path: str) -> bool:
    """A trace by its name, or a JSON file whose first bytes say it is PyTorch's (`*_kineto.json.gz`)."""
    if is_trace_file(path):
        return True
    name = _basename(path)
    return name.endswith(JSON_SUFFIXES) and name not in (SIDECAR, SAMPLES_FILE, EXPERIMENT) and is_kineto(path)


def find_runs(path: str) -> list[Run]:
    """The runs under `path` (a local path or an fsspec URL such as gs://bucket/logdir), sorted by
    name; raises when there is nothing to read."""
    if storage.kind(path) == "file":
        if not _is_trace(path):
            raise TraceReadError(f"{path}: not a trace file (expected *.xplane.pb, *.trace.json[.gz] or a "
                                 f"PyTorch profiler trace)")
        return [Run(path, _basename(path), (path,))]
    runs = []
    for folder, dirs, files in storage.walk(path):
        dirs.sort()
        traces = _preferred(sorted(f for f in files if _is_trace(storage.join(folder, f))))
        name = storage.relative(folder, path)
        cycles = _cycles(traces)
        for f in cycles:  # each a run of its own, named by its file
            full = storage.join(folder, f)
            runs.append(Run(full, f if name in ("", ".") else f"{name}/{f}", (full,)))
        traces = [f for f in traces if f not in cycles]
        if traces:
            runs.append(Run(folder, name, tuple(storage.join(folder, f) for f in traces)))
    if not runs:
        raise NoTracesError(f"{path}: no profiler traces found (*.xplane.pb, *.trace.json[.gz] or PyTorch's "
                            f"*.pt.trace.json[.gz]) in this folder or below")
    return sorted(runs, key=lambda r: r.name)


# torch.profiler's tensorboard_trace_handler names each file `<worker>.<time in ns>.pt.trace.json`.
_CYCLE = re.compile(r"(.+)\.\d+\.pt\.trace\.json(\.gz)?\Z")


def _cycles(files: list[str]) -> set[str]:
    """PyTorch files of one worker written at different times: the profiling cycles of one process
    (a schedule's `repeat`, or a last cycle closed at exit), not ranks of one run."""
    by_worker: dict[str, list[str]] = {}
    for f in files:
        m = _CYCLE.match(f)
        if m:
            by_worker.setdefault(m.group(1), []).append(f)
    return {f for group in by_worker.values() if len(group) > 1 for f in group}


def _preferred(files: list[str]) -> list[str]:
    """One file per host: XSpace where a host has one, else its legacy JSON."""
    by_host: dict[str, str] = {}
    for f in files:
        host = host_from_file(f)
        if host not in by_host or f.endswith(".xplane.pb"):
            by_host[host] = f
    return sorted(by_host.values())


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] if storage.is_url(path) else os.path.basename(path)


def host_from_file(path: str) -> str:
    """The host (or rank) a file is named after: its name without its trace suffix."""
    base = _basename(path)
    for s in TRACE_SUFFIXES + JSON_SUFFIXES:
        if base.endswith(s):
            return base[: -len(s)]
    return base
