"""Start and stop the TensorFlow profiler safely; `trace()` and `step()` for any loop."""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import warnings

from tftrace.capture.sidecar import write_sidecar


class CaptureWarning(UserWarning):
    """Something kept tftrace from capturing; the user's code goes on regardless."""


def _warn(message: str) -> None:
    warnings.warn(f"tftrace: {message}", CaptureWarning, stacklevel=3)


def _profile_root(log_dir: str) -> str:
    return os.path.join(log_dir, "plugins", "profile")


def writable(log_dir: str) -> str | None:
    """Why `log_dir` cannot take a trace, or None if it can."""
    try:
        os.makedirs(_profile_root(log_dir), exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=_profile_root(log_dir)):
            pass
    except OSError as e:
        return f"cannot write to {log_dir}: {e.strerror or e}"
    return None


class ProfilerSession:
    """One profiler window: start(), stop() -> the run folder; never raises into user code."""

    def __init__(self, log_dir: str, label: str, host_tracer_level: int = 2,
                 python_tracer_level: int = 0, device_tracer_level: int = 1):
        self.log_dir = os.fspath(log_dir)
        self.label = label
        self.levels = dict(host_tracer_level=host_tracer_level, python_tracer_level=python_tracer_level,
                           device_tracer_level=device_tracer_level)
        self.active = False
        self.run_dir: str | None = None
        self._before: set[str] = set()
        self.steps: list[int] = []

    def start(self) -> bool:
        """Start profiling; warn and return False if that is not possible now."""
        problem = writable(self.log_dir)
        if problem:
            _warn(f"{problem}; not profiling")
            return False
        import tensorflow as tf
        self._before = set(os.listdir(_profile_root(self.log_dir)))
        try:
            options = tf.profiler.experimental.ProfilerOptions(**self.levels)
            tf.profiler.experimental.start(self.log_dir, options=options)
        except Exception as e:  # AlreadyExistsError when another session (e.g. TensorBoard's) runs
            _warn(f"could not start the profiler ({type(e).__name__}: {str(e).strip() or 'another profiler is running'}); "
                  "this window is skipped")
            return False
        self.active = True
        return True

    def stop(self, sidecar: dict | None = None) -> str | None:
        """Stop profiling and name the run folder after the window; returns its path."""
        if not self.active:
            return None
        self.active = False
        import tensorflow as tf
        try:
            tf.profiler.experimental.stop()
        except Exception as e:
            _warn(f"could not save the profile ({type(e).__name__}: {e})")
            return None
        self.run_dir = self._name_run()
        if self.run_dir and sidecar is not None:
            try:
                write_sidecar(self.run_dir, {**sidecar, "label": self.label, "steps": self.steps})
            except OSError as e:
                _warn(f"could not write the model sidecar ({e})")
        return self.run_dir

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


_step_counter = itertools.count()
# Names passed to region(): the sidecar lists them so analysis can tell them from TF's own events.
REGIONS: set[str] = set()


@contextlib.contextmanager
def step(name: str = "train", step_num: int | None = None):
    """Mark one iteration of a loop as a step that tftrace and TensorBoard's profiler both find."""
    import tensorflow as tf
    number = next(_step_counter) if step_num is None else int(step_num)
    with tf.profiler.experimental.Trace(name, step_num=number, _r=1):
        yield number


@contextlib.contextmanager
def region(name: str):
    """Name a piece of your own code (image loading, augmentation, logging) so the analysis can
    say how much step time it takes: TensorFlow's profiler does not see pure Python otherwise."""
    import tensorflow as tf
    REGIONS.add(str(name))
    with tf.profiler.experimental.Trace(str(name)):
        yield


class trace(contextlib.ContextDecorator):
    """Profile a block (or a decorated function) into `<log_dir>/plugins/profile/<run>/`.

        with tftrace.trace("logs", label="predict-loop") as t:
            for i, x in enumerate(data):
                with tftrace.step("predict", i):
                    model(x)

    Levels are the profiler's own: `python_tracer_level=1` makes pure-Python input work
    (image loading, augmentation) visible. Nothing here ever raises into the traced code.
    """

    def __init__(self, log_dir: str, label: str = "trace", host_tracer_level: int = 2,
                 python_tracer_level: int = 0, device_tracer_level: int = 1, model=None):
        self._args = (log_dir, label, host_tracer_level, python_tracer_level, device_tracer_level)
        self.model = model
        self.session: ProfilerSession | None = None
        self.run_dir: str | None = None

    def __enter__(self) -> "trace":
        self.session = ProfilerSession(*self._args)
        self.session.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.session is not None:
            from tftrace.capture.sidecar import describe
            meta = describe(self.model, mode="trace") if self.model is not None else {"mode": "trace"}
            meta["regions"] = sorted(REGIONS)
            if exc_type is not None:
                _warn(f"the traced block raised {exc_type.__name__}; the profile captured so far is kept")
            self.run_dir = self.session.stop(sidecar=meta)
        return False

