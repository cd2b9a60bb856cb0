"""Analyse a run host by host: map each host file to its part (here, in worker processes or on a
Dask cluster, each reading its file itself), then reduce the parts into the run's report."""

from __future__ import annotations

import os

from tftrace.analysis.run import HostPart, analyze_trace, combine_hosts, host_part
from tftrace.errors import TftraceError, TraceReadError
from tftrace.malloc import freed_memory_kept, keep_freed_memory
from tftrace.read.loader import load_host, load_run
from tftrace.read.logdir import Run, host_from_file
from tftrace.report import RunReport


def analyze_run(run: Run, top: int | None, ops: str, progress=None, workers: int = 1, client=None) -> RunReport:
    """The report of one run. A single host is read and analysed in one pass, here; several are
    mapped one by one (workers > 1: in that many processes; `client`: on its Dask cluster), and
    the slowest host, whose steps the report shows, analysed again with the parts."""
    if len(run.files) == 1:
        return analyze_trace(load_run(run, progress), run.name, top, ops)
    engine = _engine(workers, client, len(run.files))
    try:
        results = engine.map(_map_host, [(run, path) for path in run.files])
        parts = [r for r in results if isinstance(r, HostPart)]
        problems = tuple(r for r in results if isinstance(r, str))
        if not parts:
            raise TraceReadError(problems[0])
        for path in run.files:
            if progress is not None:  # per host: its bytes were read in another process
                progress(path, 1, 1)
        return engine.call(_reduce, run, parts, problems, top, ops)
    finally:
        engine.close()


def _map_host(run: Run, path: str) -> HostPart | str:
    """The map: one host file read and analysed into its part, or why it cannot be read."""
    try:
        return host_part(load_host(run, path))
    except TraceReadError as e:
        return str(e)


def _reduce(run: Run, parts: list[HostPart], problems: tuple[str, ...], top, ops) -> RunReport:
    """The reduce: the slowest host read again (with the files beside the run) and the parts combined."""
    # With several files, each host is named after its file (read/loader.py).
    by_host = {host_from_file(path): path for path in run.files}
    return combine_hosts(parts, lambda host: load_host(run, by_host[host], beside_files=True), run.name, top, ops,
                         problems)


class _Serial:
    """Map and reduce in this process, one host at a time."""

    def map(self, fn, args):
        return [fn(*a) for a in args]

    def call(self, fn, *args):
        return fn(*args)

    def close(self):
        pass


class _Processes(_Serial):
    """Map in worker processes; the reduce in one of them too, so this process never holds a
    host's events."""

    def __init__(self, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        # fork: workers start without importing tftrace again; spawn where fork is unavailable.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        # The workers are this command's own: they may keep freed memory as the command does.
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                                         initializer=keep_freed_memory)

    def map(self, fn, args):
        return [f.result() for f in [self._pool.submit(fn, *a) for a in args]]

    def call(self, fn, *args):
        return self._pool.submit(fn, *args).result()

    def close(self):
        self._pool.shutdown()


class _Dask(_Serial):
    """Map on a dask.distributed cluster, each worker reading its host file itself (paths, not
    bytes, go through the scheduler); the reduce on a worker too."""

    def __init__(self, client):
        self._client = client

    def map(self, fn, args):
        futures = [self._client.submit(_kept, fn, *a, pure=False) for a in args]
        return self._client.gather(futures)

    def call(self, fn, *args):
        return self._client.submit(_kept, fn, *args, pure=False).result()


def _kept(fn, *args):
    """A task on a Dask worker, with freed memory kept for reuse while it runs (malloc.py)."""
    with freed_memory_kept():
        return fn(*args)


def _engine(workers: int, client, hosts: int):
    if client is not None:
        return _Dask(client)
    if workers < 1:
        raise TftraceError(f"workers must be at least 1 (got {workers})")
    workers = min(workers, hosts)
    return _Processes(workers) if workers > 1 else _Serial()


def default_workers() -> int:
    """The machine's cores (those this process may use)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def dask_client(address: str):
    """A Dask client connected to the scheduler at `address`; a one-line error when dask is not
    installed or the scheduler cannot be reached."""
    try:
        from distributed import Client
    except ImportError:
        raise TftraceError('--dask needs dask.distributed: pip install "tftrace[dask]"') from None
    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise TftraceError(f"cannot reach the Dask scheduler at {address}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
