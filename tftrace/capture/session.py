"""Start and stop the profiler (TensorFlow's or JAX's) safely; `trace()` and `step()` for any loop."""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import tempfile
import time

from tftrace.capture import backend as backends
from tftrace.capture.sidecar import write_sidecar
from tftrace.capture.warn import warn as _warn
from tftrace.model.layout import PROFILE_DIR


def _profile_root(log_dir: str) -> str:
    return os.path.join(log_dir, *PROFILE_DIR)


_multi_worker_warned = False


def _warn_multi_worker_once() -> None:
    """TensorFlow 2.21 can abort a MultiWorkerMirroredStrategy worker while it collects a trace
    (heap corruption in tsl::profiler::ParseAnnotation): say so once, then capture as asked."""
    global _multi_worker_warned
    if _multi_worker_warned or _cluster_tasks(os.environ.get("TF_CONFIG", "")) < 2:
        return
    _multi_worker_warned = True
    _warn("this process is one task of a multi-worker cluster (TF_CONFIG): TensorFlow 2.21 can abort such a "
          "worker while it collects a trace (a TensorFlow bug, about 1 capture in 4-5 in tftrace's tests); "
          "capturing anyway, so profile a run you can afford to restart")


def _cluster_tasks(tf_config: str) -> int:
    try:
        cluster = json.loads(tf_config).get("cluster", {})
        return sum(len(tasks) for tasks in cluster.values() if isinstance(tasks, (list, dict)))
    except (ValueError, AttributeError, TypeError):
        return 0


def writable(log_dir: str) -> str | None:
    """Why `log_dir` cannot take a trace, or None if it can."""
    try:
        os.makedirs(_profile_root(log_dir), exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=_profile_root(log_dir)):
            pass
    except OSError as e:
        return f"cannot write to {log_dir}: {e.strerror or e}"
    return None


# TensorFlow and JAX each allow one profiler session per process. While tftrace holds one, it is
# here with a check that the code which opened it can still close it: the next capture closes it
# (keeping its data) when that code is gone, e.g. interrupted where no guard saw it, and
# interpreter exit closes it in any case. The check lives here, not on the session: it may hold the opener's frame, and
# nothing reachable from that frame may hold it back (a cycle would keep the frame, and the tf.data
# iterators in it, alive until interpreter shutdown, where destroying them can hang).
_open: ProfilerSession | None = None
_open_alive = None
_atexit_registered = False


class ProfilerSession:
    """One profiler window: start(), stop() -> the run folder; never raises into user code.

    `steps` and `completed` are the step numbers begun and finished inside the window, `planned`
    how many it was meant to hold (None: open-ended), `sidecar` the metadata saved with it.
    `backend`: "tensorflow" or "jax" (None: `backend.choose()` when the window starts).
    """

    def __init__(self, log_dir: str, label: str, host_tracer_level: int = 2,
                 python_tracer_level: int = 0, device_tracer_level: int = 1, python: bool | float | str = "auto",
                 python_tracer: bool | None = None, backend: str | None = None):
        self.log_dir = os.fspath(log_dir)
        self.label = label
        # `python`: also sample every thread's Python stacks ("auto", the default: every 5 ms while
        # that costs under 1% of the time, less often if not; True: every 5 ms, and ask for TF's
        # Python tracer where a TF version honours it; a number: that interval in seconds; False: off).
        self.python = python
        self.levels = dict(host_tracer_level=host_tracer_level,
                           python_tracer_level=max(python_tracer_level, int(python is True or _number(python))),
                           device_tracer_level=device_tracer_level)
        # The profiler's own Python tracer: True asks for it; None or False: off on JAX (JAX's own
        # default is on, and it slows Python-heavy loops many times over), TF's python_tracer_level.
        self.python_tracer = python_tracer
        self.backend = backends.choose(backend) if backend is not None else None  # a bad name raises now
        self.profiler = None
        self._sampler = None
        self.active = False
        self.run_dir: str | None = None
        self._before: set[str] = set()
        self.steps: list[int] = []
        self.completed: list[int] = []
        self.planned: int | None = None
        self.sidecar: dict = {}
        # The capture's own time outside the steps (ms): starting the profiler, and stopping it
        # (on JAX each first waiting for the work already dispatched: `start_drain_ms`, `drain_ms`),
        # saved in the sidecar.
        self.cost: dict = {}
        # tftrace's own hooks inside the window's steps (step markers, the marks around other
        # callbacks' hooks), timed as they run: `hooks_ms` over `hooks_steps` in the sidecar.
        self.hooks_ns = 0
        # Run first thing when the window stops, whoever stops it: a window abandoned where no guard
        # saw the exception is stopped by the next capture or at exit, and its opener undoes its part.
        self.on_stop: list = []

    def start(self, alive=None) -> bool:
        """Start profiling; warn once and return False if that is not possible now. `alive()` says
        whether the code that opened the window can still close it (default: always)."""
        global _open, _open_alive
        problem = writable(self.log_dir)
        if problem:
            _warn(f"{problem}; not profiling")
            return False
        if not close_abandoned():
            _warn(f"another tftrace capture ({_open.label}) is running; the {self.label} window is skipped")
            return False
        try:
            self.profiler = backends.profiler(self.backend or backends.choose())
        except backends.Unavailable as e:
            _warn(f"{e}; the {self.label} window is skipped")
            return False
        if self.profiler.name == backends.TENSORFLOW:
            _warn_multi_worker_once()
        self._before = set(os.listdir(_profile_root(self.log_dir)))
        began = time.perf_counter()
        try:
            self.profiler.start(self.log_dir, self.levels, self.python_tracer)
        except Exception as e:  # AlreadyExistsError (TF), RuntimeError (JAX) when another session runs
            _warn(f"could not start the profiler ({type(e).__name__}: {str(e).strip() or 'another profiler is running'}); "
                  f"the {self.label} window is skipped")
            return False
        self.cost["start_ms"] = round((time.perf_counter() - began) * 1e3, 3)
        drained = getattr(self.profiler, "start_drained_s", None)
        if drained is not None:
            self.cost["start_drain_ms"] = round(drained * 1e3, 3)
        self.active, _open, _open_alive = True, self, alive
        _close_at_exit_once()
        self._start_sampler()
        return True

    def _start_sampler(self) -> None:
        if not self.python:
            return
        from tftrace.capture.sampler import DEFAULT_BUDGET, DEFAULT_INTERVAL_S, PythonSampler
        auto = self.python == "auto"
        interval = float(self.python) if _number(self.python) else DEFAULT_INTERVAL_S
        try:
            self._sampler = PythonSampler(interval, DEFAULT_BUDGET if auto else None)
            self._sampler.start()
        except Exception as e:  # the trace is worth having without the samples
            self._sampler = None
            _warn(f"could not sample Python stacks ({type(e).__name__}: {e}); the {self.label} trace goes on without")

    def _save_samples(self) -> None:
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return
        sampler.stop()
        if self.run_dir is not None:
            try:
                sampler.save(self.run_dir)
            except OSError as e:
                _warn(f"could not save the Python samples ({e})")

    def stop(self, sidecar: dict | None = None, cut_short: str | None = None) -> str | None:
        """Stop profiling and name the run folder after the window; returns its path. `cut_short`
        says what ended the window early (an exception's class name, "interpreter exit"...)."""
        if not self.active:
            return None
        undo, self.on_stop = self.on_stop, []
        for fn in undo:
            try:
                fn()
            except Exception:
                pass
        began = time.perf_counter()
        try:
            self.profiler.stop()
        except Exception as e:
            self._release()
            self._save_samples()
            _warn(f"could not save the {self.label} profile ({type(e).__name__}: {e})")
            return None
        self.cost["stop_ms"] = round((time.perf_counter() - began) * 1e3, 3)
        if self.hooks_ns and self.completed:
            self.cost.update(hooks_ms=round(self.hooks_ns / 1e6, 3), hooks_steps=len(self.completed))
        drained = getattr(self.profiler, "drained_s", None)
        if drained is not None:
            self.cost["drain_ms"] = round(drained * 1e3, 3)
        self._release()  # only now: an interrupt inside stop() leaves it for the next capture to close
        self.run_dir = self._name_run()
        self._save_samples()
        if self.run_dir is None:
            _warn(f"the profiler wrote no trace for the {self.label} window into {self.log_dir}")
            return None
        meta = {**backends.versions(), "profiler": self.profiler.name, **self.sidecar, **(sidecar or {}),
                "label": self.label, "steps": self.steps, "regions": sorted(REGIONS), "capture_cost": self.cost}
        if cut_short:
            meta["cut_short"] = self._cut(cut_short)
        try:
            write_sidecar(self.run_dir, meta)
        except OSError as e:
            _warn(f"could not write the model sidecar ({e})")
        return self.run_dir

    def _release(self) -> None:
        global _open, _open_alive
        self.active = False
        if _open is self:
            _open, _open_alive = None, None

    def _cut(self, by: str) -> dict:
        cut = {"by": by, "steps_completed": len(self.completed)}
        if self.planned is not None:
            cut["steps_planned"] = self.planned
        if len(self.steps) > len(self.completed):  # the step that was running: in the trace, but partial
            cut["partial_step"] = self.steps[-1]
        return cut

    def _name_run(self) -> str | None:
        root = _profile_root(self.log_dir)
        try:
            new = sorted(set(os.listdir(root)) - self._before)
        except OSError:
            return None
        if not new:
            return None
        src = os.path.join(root, new[-1])
        dst = os.path.join(root, f"{new[-1]}_{self.label}" if self.label else new[-1])
        for n in itertools.count(2):
            if not os.path.exists(dst):
                break
            dst = os.path.join(root, f"{new[-1]}_{self.label}_{n}")
        try:
            os.rename(src, dst)
        except OSError:
            return src
        return dst


def close_abandoned() -> bool:
    """Close tftrace's open session if the code that opened it is gone (keeping its profile, with
    one warning); True if no tftrace session holds the profiler now."""
    session, alive = _open, _open_alive
    if session is None:
        return True
    try:
        if session.active and (alive is None or alive()):
            return False
    except Exception:  # a liveness check that fails cannot prove the owner alive
        pass
    run = session.stop(cut_short="unknown")
    if run:
        _warn(f"an earlier {session.label} window was left open by an interruption tftrace did not see; "
              f"it is closed now and its profile kept in {run}")
    return _open is None


def _close_at_exit_once() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_close_at_exit)
        _atexit_registered = True


def _close_at_exit() -> None:
    session = _open
    if session is not None and session.active:
        run = session.stop(cut_short="interpreter exit")
        if run:
            _warn(f"the {session.label} window was still open at interpreter exit; its profile is kept in {run}")


_step_counter = itertools.count()
# Names passed to region(): the sidecar lists them so analysis can tell them from TF's own events.
REGIONS: set[str] = set()


def _marker_profiler(session):
    """The open capture's profiler, else the one a capture would choose now; None if none can."""
    if session is not None and session.profiler is not None:
        return session.profiler
    try:
        return backends.profiler(backends.choose())
    except backends.Unavailable:
        return None


@contextlib.contextmanager
def step(name: str = "train", step_num: int | None = None):
    """Mark one iteration of a loop as a step that tftrace and TensorBoard's profiler both find
    (TensorFlow's `Trace(name, step_num=n, _r=1)`, or JAX's `StepTraceAnnotation(name, step_num=n)`)."""
    number = next(_step_counter) if step_num is None else int(step_num)
    session = _open  # counted into a tftrace capture's sidecar, so a cut-short one knows how far it got
    profiler = _marker_profiler(session)
    with profiler.step(name, number) if profiler is not None else contextlib.nullcontext():
        if session is not None:
            session.steps.append(number)
        yield number
    if session is not None:
        session.completed.append(number)


@contextlib.contextmanager
def region(name: str):
    """Name a piece of your own code (image loading, augmentation, logging) so the analysis can
    say how much step time it takes: TensorFlow's profiler does not see pure Python otherwise."""
    REGIONS.add(str(name))
    profiler = _marker_profiler(_open)
    with profiler.region(str(name)) if profiler is not None else contextlib.nullcontext():
        yield


class trace(contextlib.ContextDecorator):
    """Profile a block (or a decorated function) into `<log_dir>/plugins/profile/<run>/`.

        with tftrace.trace("logs", label="predict-loop") as t:
            for i, x in enumerate(data):
                with tftrace.step("predict", i):
                    model(x)

    Every thread's Python stacks are sampled while it is open (`python="auto"`, the default: every
    5 ms while that costs under 1% of the time, less often otherwise; True: every 5 ms; a number
    sets the interval in seconds; False: no sampling), so the report names the Python functions
    behind input, loading and per-call time. Levels are the profiler's own (TensorFlow 2.21 ignores them from Python).
    `backend`: "tensorflow" or "jax"; by default Keras' backend, else the framework imported
    (JAX alone: JAX), else TensorFlow if it imports. `python_tracer=True` asks for the profiler's
    Python tracer (off by default here, though JAX's own default is on: it slows Python-heavy loops
    many times over; the sampler names Python functions instead).
    Nothing here ever raises into the traced code; a block that raises (Ctrl-C included) keeps
    what it captured, marked as cut short in its sidecar.
    """

    def __init__(self, log_dir: str, label: str = "trace", host_tracer_level: int = 2,
                 python_tracer_level: int = 0, device_tracer_level: int = 1, model=None,
                 python: bool | float | str = "auto", python_tracer: bool | None = None, backend: str | None = None):
        if backend is not None:
            backends.choose(backend)  # a name tftrace cannot capture with is the caller's error: say so now
        self._args = (log_dir, label, host_tracer_level, python_tracer_level, device_tracer_level, python,
                      python_tracer, backend)
        self.model = model
        self.session: ProfilerSession | None = None
        self.run_dir: str | None = None
        self._entered: list[ProfilerSession] = []  # a decorated function may call itself
        self._calls: dict = {}  # id(session) -> the model's first call in its window (capture/trace_cost.py)

    def __enter__(self) -> "trace":
        session = self.session = ProfilerSession(*self._args)
        session.sidecar = {"mode": "trace"}
        session.start()  # never abandoned: __exit__ runs however the block ends
        calls = None
        if session.active and self.model is not None:  # the model's first call: its cost, counted after
            from tftrace.capture.trace_cost import ModelCalls
            calls = self._calls[id(session)] = ModelCalls()
            calls.watch(self.model)  # before the layer ranges below wrap the model's call
        if session.active and self.model is not None and session.profiler.name == backends.TORCH:
            from tftrace.capture.marks import Patches
            from tftrace.capture.torch_profiler import mark_layers
            layers = Patches()  # each layer's call a named range: torch's trace names no Keras layer
            mark_layers(layers, self.model, session.sidecar, clock=session)
            session.on_stop.append(layers.restore)
        if calls is not None:
            session.on_stop.append(calls.restore)  # after the layer ranges are put back
        self._entered.append(session)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        session = self._entered.pop() if self._entered else None
        if session is not None and session.active:
            if exc_type is not None and not issubclass(exc_type, GeneratorExit):  # a generator closed early: no error
                _warn(f"the traced block raised {exc_type.__name__}; the profile captured so far is kept")
            self.run_dir = session.stop(sidecar=self._describe(),
                                        cut_short=exc_type.__name__ if exc_type is not None else None)
            if exc_type is None:  # after the window: the model's call counted, the host's peaks measured
                from tftrace.capture.trace_cost import record
                record(self.run_dir, session.profiler.name, self.model, self._calls.get(id(session)))
        if session is not None:
            self._calls.pop(id(session), None)
        return False

    def _describe(self) -> dict:
        if self.model is None:
            return {"mode": "trace"}
        try:
            from tftrace.capture.sidecar import describe
            return describe(self.model, mode="trace")
        except Exception as e:  # metadata is a bonus; never fail the capture for it
            return {"mode": "trace", "error": f"{type(e).__name__}: {e}"}


def _number(value) -> bool:
    """A sampling interval given in seconds (not True/False, not "auto")."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
