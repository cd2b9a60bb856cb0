"""Sample the Python stacks of every thread while a capture window is open.

TensorFlow's Python tracer sees only the main thread (and TensorFlow 2.21 ignores the level
asked from Python), while the slow Python of many Keras runs executes on tf.data's threads: a
generator behind `from_generator`, a `PyDataset.__getitem__`. A sampler thread reading
`sys._current_frames()` sees them all, like py-spy or pyinstrument do, at a cost set by its
interval. Times are Unix nanoseconds, the clock the profiler's trace starts from.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import threading
import time

from tftrace.model.layout import SAMPLES_FILE

DEFAULT_INTERVAL_S = 0.005
MAX_DEPTH = 256
# By default the sampler keeps its own time under this share of the wall time, slowing down when
# deep stacks or many threads make a tick dear (benchmarks/RESULTS-sampler.md: 5 ms ticks cost a
# Keras step 0.6%).
DEFAULT_BUDGET = 0.01
MAX_INTERVAL_S = 0.1


class PythonSampler:
    """start(), stop(), save(run_dir): stacks of all threads every `interval_s` seconds."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, budget: float | None = None):
        self.interval_s = max(float(interval_s), 0.0005)
        self.budget = budget  # the most of the wall time its own ticks may take (None: no limit)
        self._codes: dict = {}  # code object -> frame id (holding the code keeps the id unique)
        self.frames: list[tuple[str, int, str]] = []  # (file, first line, function)
        self._stack_ids: dict[tuple, int] = {}
        self.stacks: list[tuple[int, ...]] = []  # frame ids, outermost first
        self.ticks: list[int] = []  # Unix ns of each tick
        self.samples: list[tuple[int, int, int, int]] = []  # (tick, thread ident, stack id, leaf line)
        self.thread_names: dict[int, str] = {}
        self.busy_ns = 0  # the sampler's own time, for its cost
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tftrace-python-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        me = threading.get_ident()
        main = threading.main_thread().ident
        started = time.perf_counter_ns()
        while not self._stop.wait(self.interval_s):
            began = time.perf_counter_ns()
            self._tick(me, main)
            self.busy_ns += time.perf_counter_ns() - began
            if self.budget is not None and self.busy_ns > self.budget * (time.perf_counter_ns() - started):
                self.interval_s = min(self.interval_s * 2, MAX_INTERVAL_S)  # over budget: tick less often

    def _tick(self, me: int, main: int | None) -> None:
        tick = len(self.ticks)
        self.ticks.append(time.time_ns())
        frames = sys._current_frames()
        for ident, frame in frames.items():
            if ident == me:
                continue
            if ident not in self.thread_names:
                self.thread_names[ident] = _thread_name(ident, main)
            stack, leaf_line = self._stack(frame)
            self.samples.append((tick, ident, stack, leaf_line))
        del frames

    def _stack(self, frame) -> tuple[int, int]:
        ids = []
        leaf_line = frame.f_lineno or 0
        codes = self._codes
        while frame is not None and len(ids) < MAX_DEPTH:
            code = frame.f_code
            fid = codes.get(code)
            if fid is None:
                fid = codes[code] = len(self.frames)
                self.frames.append((code.co_filename, code.co_firstlineno, code.co_qualname))
            ids.append(fid)
            frame = frame.f_back
        key = tuple(reversed(ids))
        sid = self._stack_ids.get(key)
        if sid is None:
            sid = self._stack_ids[key] = len(self.stacks)
            self.stacks.append(key)
        return sid, leaf_line

    def to_dict(self) -> dict:
        # Folders whose code is a library's though it is not installed as one (tftrace itself,
        # when installed editable): analysis must not take it for the user's code.
        roots = {"tftrace": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
        return {"version": 1, "clock": "unix_ns", "interval_s": self.interval_s, "pid": os.getpid(), "roots": roots,
                "sampler_busy_ns": self.busy_ns, "frames": self.frames, "stacks": self.stacks,
                "ticks": self.ticks, "threads": {str(k): v for k, v in self.thread_names.items()},
                "samples": self.samples}

    def save(self, run_dir: str) -> str:
        path = os.path.join(run_dir, SAMPLES_FILE)
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, separators=(",", ":"))
        return path


def _thread_name(ident: int, main: int | None) -> str:
    if ident == main:
        return "MainThread"
    thread = threading._active.get(ident)  # noqa: SLF001 - the only map from ident to Thread
    # Threads TensorFlow starts in C++ (tf.data's, running a generator or py_func) have no
    # Python Thread object: they show up only while they run Python.
    return thread.name if thread is not None else "native thread"
