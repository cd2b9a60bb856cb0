"""Analyse a run host by host: map each host file to its part (here, in worker processes or on a
Dask cluster, each reading its file itself), then reduce the parts into the run's report."""

from __future__ import annotations

import os
import sys
import threading

from tftrace.model.errors import TftraceError, TraceReadError
from tftrace.malloc import freed_memory_kept, keep_freed_memory
from tftrace.model.events import Trace
from tftrace.read.loader import load_host, load_run, with_files_beside
from tftrace.read.logdir import Run
from tftrace.model.report import RunReport


def analyze_run(run: Run, top: int | None, ops: str, progress=None, workers: int = 1, client=None) -> RunReport:
    """The report of one run. A single host is read and analysed in one pass, here; several are
    mapped one by one (workers > 1: in that many processes; `client`: on its Dask cluster), and
    the parts reduced where the slowest host, whose steps the report shows, was mapped: that
    process kept its Trace, so it is not read twice."""
    if len(run.files) == 1:
        return _one_file(run, top, ops, progress)
    from tftrace.analysis.hosts import slowest
    from tftrace.analysis.run import HostPart
    engine = _engine(workers, client, len(run.files))
    try:
        results = engine.map(_map_host, [(run, path, engine.keeps) for path in run.files])
        mapped = [(path, r) for path, r in zip(run.files, results) if isinstance(r, HostPart)]
        parts = [part for _path, part in mapped]
        problems = tuple(r for r in results if isinstance(r, str))
        if not parts:
            raise TraceReadError(problems[0])
        for path in run.files:
            if progress is not None:  # per host: its bytes were read in another process
                progress(path, 1, 1)
        timed = _path_of(mapped, slowest([p.view for p in parts]))
        return engine.call_where(run.files.index(timed), _reduce, run, timed, parts, problems, top, ops)
    finally:
        engine.close()


def _one_file(run: Run, top: int | None, ops: str, progress) -> RunReport:
    """A run of one file, read in a thread while this one imports the analyses on first use (the
    reader's C part runs without the GIL: most of the reading hides behind the imports)."""
    if "tftrace.analysis.run" in sys.modules:
        from tftrace.analysis.run import analyze_trace
        return analyze_trace(load_run(run, progress), run.name, top, ops)
    loading = _Loading(run, progress)
    from tftrace.analysis.run import analyze_trace
    return analyze_trace(loading.result(), run.name, top, ops)


class _Loading:
    """load_run on a daemon thread: Ctrl-C in the waiting thread ends the command at once."""

    def __init__(self, run: Run, progress):
        self._done = threading.Event()
        self._trace = self._error = None
        threading.Thread(target=self._load, args=(run, progress), daemon=True, name="tftrace-load").start()

    def _load(self, run: Run, progress) -> None:
        try:
            self._trace = load_run(run, progress)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread, raised there
            self._error = e
        finally:
            self._done.set()

    def result(self) -> Trace:
        while not self._done.wait(0.05):  # in slices: a signal reaches the waiting thread
            pass
        if self._error is not None:
            raise self._error
        return self._trace


# In the process that maps hosts: the slowest host it has mapped, (path, Trace, view). One Trace
# at most beside the one being mapped; emptied by the reduce.
_kept: list[tuple[str, Trace, HostView]] = []


def _map_host(run: Run, path: str, keep: bool) -> HostPart | str:
    """The map: one host file read and analysed into its part, or why it cannot be read; its
    Trace kept (`keep`) while it is the slowest this process has mapped."""
    from tftrace.analysis.hosts import slowest
    from tftrace.analysis.run import host_part
    try:
        trace = load_host(run, path)
    except TraceReadError as e:
        return str(e)
    part = host_part(trace)
    if keep and (not _kept or slowest([_kept[0][2], part.view]) is part.view):
        _kept[:] = [(path, trace, part.view)]
    return part


def _reduce(run: Run, timed: str, parts: list[HostPart], problems: tuple[str, ...], top, ops) -> RunReport:
    """The reduce: the parts combined with the slowest host's Trace (kept by its map, or read
    again) and the files beside the run."""
    kept = [trace for path, trace, _view in _kept if path == timed]
    _kept.clear()
    trace = with_files_beside(run, kept[0]) if kept else load_host(run, timed, beside_files=True)
    from tftrace.analysis.run import combine_hosts
    return combine_hosts(parts, lambda _host: trace, run.name, top, ops, problems)


def _path_of(mapped: list[tuple[str, HostPart]], view: HostView) -> str:
    """The file a host's part was mapped from: by the part itself, not by its host's name (a file
    with no events names no host, and two files may name the same one)."""
    return next(path for path, part in mapped if part.view is view)


class _Serial:
    """Map and reduce in this process, one host at a time."""

    keeps = True

    def map(self, fn, args):
        return [fn(*a) for a in args]

    def call_where(self, _index, fn, *args):
        """`fn(*args)` in the process that mapped the `_index`-th host."""
        return fn(*args)

    def close(self):
        _kept.clear()


class _Processes(_Serial):
    """Map in worker processes, each its own one-process pool so the reduce can go to the one
    that mapped the slowest host; this process never holds a host's events."""

    def __init__(self, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        # fork: workers start without importing tftrace again; spawn where fork is unavailable.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        # The workers are this command's own: they may keep freed memory as the command does.
        self._pools = [ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(method),
                                           initializer=keep_freed_memory) for _ in range(workers)]
        self._mapped_by: dict[int, int] = {}  # host index -> pool

    def map(self, fn, args):
        from concurrent.futures import FIRST_COMPLETED, wait
        results, todo, running = [None] * len(args), list(enumerate(args)), {}
        free = list(range(len(self._pools)))
        while todo or running:
            while free and todo:  # each free worker takes the next host
                pool, (i, a) = free.pop(0), todo.pop(0)
                running[self._pools[pool].submit(fn, *a)] = pool, i
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                pool, i = running.pop(future)
                results[i], self._mapped_by[i] = future.result(), pool
                free.append(pool)
        return results

    def call_where(self, index, fn, *args):
        return self._pools[self._mapped_by[index]].submit(fn, *args).result()

    def close(self):
        for pool in self._pools:
            pool.shutdown()


class _Dask(_Serial):
    """Map on a dask.distributed cluster, each worker reading its host file itself (paths, not
    bytes, go through the scheduler); the reduce on a worker too."""

    keeps = False  # a cluster's workers outlive the run: they keep nothing of it

    def __init__(self, client):
        self._client = client

    def map(self, fn, args):
        futures = [self._client.submit(_freed_kept, fn, *a, pure=False) for a in args]
        return self._client.gather(futures)

    def call_where(self, _index, fn, *args):
        return self._client.submit(_freed_kept, fn, *args, pure=False).result()


def _freed_kept(fn, *args):
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
