"""The profiler a capture drives, TensorFlow's, JAX's or PyTorch's: chosen, started, stopped and marked here."""

from __future__ import annotations

import importlib
import inspect
import sys
import time

from tftrace.capture.torch_profiler import TORCH
from tftrace.model.errors import TftraceError

TENSORFLOW, JAX = "tensorflow", "jax"
NAMES = (TENSORFLOW, JAX, TORCH)


class Unavailable(Exception):
    """No profiler tftrace drives fits this process; the message says why, in one line."""


class BackendError(TftraceError, ValueError):
    """A backend was asked for by a name tftrace does not capture with."""


def keras_backend() -> str | None:
    """Keras' backend if Keras 3 is imported already (never imported here: that would import TF)."""
    keras = sys.modules.get("keras")
    try:
        return str(keras.backend.backend()) if keras is not None else None
    except Exception:  # tf.keras, a half-imported Keras: no backend to read
        return None


_fallback: str | None = None  # the choice that had to import a framework, made once


def choose(explicit: str | None = None) -> str:
    """TENSORFLOW, JAX or TORCH: `explicit` if given; else Keras' backend when it is one of them;
    else the framework already imported (torch alone: TORCH; JAX alone: JAX); else TensorFlow if
    it imports, else JAX, else torch."""
    global _fallback
    if explicit is not None:
        if explicit not in NAMES:
            raise BackendError(f"backend must be 'tensorflow', 'jax' or 'torch', not {explicit!r}")
        return explicit
    keras = keras_backend()
    if keras in NAMES:
        return keras
    tf, jax, torch = ("tensorflow" in sys.modules, "jax" in sys.modules, "torch" in sys.modules)
    if torch and not (tf or jax):  # a PyTorch program: only torch.profiler sees its ops
        return TORCH
    if jax and not tf:  # a JAX program: TensorFlow's profiler would not see JAX's work
        return JAX
    if tf:
        return TENSORFLOW
    if _fallback is None:
        for name in NAMES:  # TensorFlow first: tftrace's home; importing it is what its capture did
            try:
                importlib.import_module(name)
            except ImportError:
                continue
            _fallback = name
            break
        else:
            raise Unavailable("neither TensorFlow, JAX nor torch can be imported here: pip install tensorflow, "
                              "jax or torch")
    return _fallback


def profiler(name: str):
    """The profiler `name` (TENSORFLOW, JAX or TORCH): start, stop, step and region markers, server."""
    if name == TORCH:
        from tftrace.capture.torch_profiler import TorchProfiler
        return TorchProfiler()
    return _JaxProfiler() if name == JAX else _TensorFlowProfiler()


class _TensorFlowProfiler:
    name = TENSORFLOW

    def start(self, log_dir: str, levels: dict, python_tracer: bool | None) -> None:
        import tensorflow as tf
        levels = dict(levels)
        if python_tracer is not None:
            levels["python_tracer_level"] = int(python_tracer)
        tf.profiler.experimental.start(log_dir, options=tf.profiler.experimental.ProfilerOptions(**levels))

    def stop(self) -> None:
        import tensorflow as tf
        tf.profiler.experimental.stop()

    def step(self, name: str, number: int):
        import tensorflow as tf
        return tf.profiler.experimental.Trace(name, step_num=number, _r=1)

    def region(self, name: str):
        import tensorflow as tf
        return tf.profiler.experimental.Trace(name)

    def serve(self, port: int) -> None:
        import tensorflow as tf
        tf.profiler.experimental.server.start(int(port))


class _JaxProfiler:
    name = JAX
    drained_s: float | None = None  # how long the last stop waited for dispatched work
    start_drained_s: float | None = None  # how long the last start did

    def start(self, log_dir: str, levels: dict, python_tracer: bool | None) -> None:
        import jax
        # Before the trace begins, the work a loop that never waits has dispatched: else the window's
        # first steps run that backlog (a 17 ms CNN step read 2.8 ms, then 44.8 ms).
        began = time.perf_counter()
        drain(jax)
        self.start_drained_s = time.perf_counter() - began
        options = None
        # JAX's Python tracer records every Python call (on by JAX's default) and makes a Python-heavy
        # step several times longer: off unless asked for (the sampler measures Python instead), where
        # start_trace takes options (jax >= 0.4.3x); an older JAX asked to turn it off gets a warning.
        if "profiler_options" in inspect.signature(jax.profiler.start_trace).parameters:
            options = jax.profiler.ProfileOptions()
            options.host_tracer_level = int(levels.get("host_tracer_level", options.host_tracer_level))
            options.python_tracer_level = int(bool(python_tracer))
        elif python_tracer is False:
            from tftrace.capture.warn import warn
            warn(f"jax {jax.__version__} takes no profiler options: its Python tracer stays on")
        if options is None:
            jax.profiler.start_trace(log_dir)
        else:
            jax.profiler.start_trace(log_dir, profiler_options=options)

    def stop(self) -> None:
        import jax
        began = time.perf_counter()
        drain(jax)
        self.drained_s = time.perf_counter() - began
        jax.profiler.stop_trace()

    def step(self, name: str, number: int):
        import jax
        # `_r=1` and `step_num`, as TensorFlow's step markers: XProf and tftrace find the steps.
        return jax.profiler.StepTraceAnnotation(name, step_num=number)

    def region(self, name: str):
        import jax
        return jax.profiler.TraceAnnotation(name)

    def serve(self, port: int) -> None:
        import jax
        jax.profiler.start_server(int(port))


def drain(jax) -> None:
    """Wait for the work already dispatched, once, as a window opens and as it closes: JAX runs
    jitted calls asynchronously and a loop that never reads a result (Keras 3 with asynchronous
    callbacks) is steps ahead of its device; without this the trace would end before their device
    work ran. The time is the profiler's (its start and stop), never a step's."""
    try:
        for array in jax.live_arrays():
            array.block_until_ready()
    except Exception:  # a deleted or donated buffer, an old JAX: the trace ends where it ends
        pass


def versions() -> dict:
    """The versions of the frameworks this process imported (read, never imported here)."""
    out = {}
    for key, module in (("tensorflow_version", "tensorflow"), ("keras_version", "keras"),
                        ("jax_version", "jax"), ("jaxlib_version", "jaxlib"), ("torch_version", "torch")):
        version = getattr(sys.modules.get(module), "__version__", None)
        if isinstance(version, str):
            out[key] = version
    backend = keras_backend()
    if backend:
        out["backend"] = backend
    return out
