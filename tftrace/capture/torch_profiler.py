"""PyTorch's profiler (torch.profiler) driven as tftrace's other profilers are: start, stop, marks, layer ranges."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import sys
import time

from tftrace.model.layout import PROFILE_DIR

TORCH = "torch"
SUFFIX = ".pt.trace.json"  # what torch.profiler's tensorboard_trace_handler names its files


class TorchProfiler:
    """`torch.profiler.profile` (CPU, and CUDA where present) around the window; at stop its Kineto
    trace goes to `<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.pt.trace.json`, a run
    folder named as TensorFlow's and JAX's profilers name theirs."""

    name = TORCH

    def __init__(self):
        self._prof = None
        self._log_dir = ""

    def start(self, log_dir: str, levels: dict, python_tracer: bool | None) -> None:
        import torch
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        # with_stack is torch's Python tracer: every Python call an event (22,000 for a few Keras
        # steps of a two-layer model), so only when asked for.
        prof = torch.profiler.profile(activities=activities, record_shapes=False, with_stack=bool(python_tracer))
        prof.__enter__()
        self._prof, self._log_dir = prof, log_dir

    def stop(self) -> None:
        prof, self._prof = self._prof, None
        if prof is None:
            raise RuntimeError("the torch profiler was not started")
        prof.__exit__(None, None, None)
        run = _new_run_dir(os.path.join(self._log_dir, *PROFILE_DIR))
        prof.export_chrome_trace(os.path.join(run, socket.gethostname() + SUFFIX))

    def step(self, name: str, number: int):
        # `ProfilerStep#N`, the range `prof.step()` writes: how torch's own tools (and tftrace) find
        # steps. `name` (train, test, predict) is the sidecar's `mode`.
        import torch
        return torch.profiler.record_function(f"ProfilerStep#{int(number)}")

    def region(self, name: str):
        import torch
        return torch.profiler.record_function(name)

    def serve(self, port: int) -> None:
        raise RuntimeError("torch.profiler has no profiler server to capture from outside")


def _new_run_dir(root: str) -> str:
    """A fresh `<YYYY_MM_DD_HH_MM_SS>` folder under `root` (`..._2` if that second's is taken)."""
    stamp = time.strftime("%Y_%m_%d_%H_%M_%S")
    for n in itertools.count(1):
        path = os.path.join(root, stamp if n == 1 else f"{stamp}_{n}")
        try:
            os.makedirs(path)
        except FileExistsError:
            continue
        return path


def mark_owners(session, model=None) -> None:
    """Name the owners of the ops in an open torch capture's trace until it stops: a Keras model's
    layers, loss, metrics and optimizer (`mark_layers`); any other program's torch modules, each
    call a range (global module hooks: capture/torch_owners)."""
    try:
        if model is not None and _is_keras(model):
            from tftrace.capture.marks import Patches
            patches = Patches()
            mark_layers(patches, model, session.sidecar, clock=session)
            session.on_stop.append(patches.restore)
            return
        from tftrace.capture.torch_owners import ModuleRanges
        ranges = ModuleRanges(clock=session, model=model)
        if ranges.open():
            session.sidecar["module_ranges"] = True
            session.on_stop.append(ranges.close)
    except Exception:  # the names are a bonus: the capture goes on without them
        pass


def _is_keras(model) -> bool:
    return any(c.__module__.split(".")[0] in ("keras", "tf_keras") for c in type(model).__mro__)


def mark_layers(patches, model, sidecar: dict, clock=None) -> None:
    """Wrap each Keras layer's `call` (on the instance, put back by `patches.restore()`) in
    `torch.profiler.record_function(layer.name)`: Keras on torch leaves no layer name in the trace
    otherwise. The names marked go in the sidecar as `layer_ranges` (the model's first), so a reader
    tells them from other ranges; the ranges' own time adds to `clock.hooks_ns` (the capture's, as
    its hooks are: tens of us a range under the profiler). The loss, metrics and optimizer get
    ranges of their own (capture/torch_owners). Never raises: the names are a bonus."""
    from tftrace.capture.marks import marked
    from tftrace.capture.program_config import layers_of
    names = sidecar.setdefault("layer_ranges", [])
    try:
        import torch
        for layer in [model, *layers_of(model)]:
            name = str(getattr(layer, "name", "") or "")
            if type(layer).__name__ == "InputLayer":  # a functional model's inputs: never called
                continue
            if name and patches.put(layer, "call",
                                    lambda fn, name=name: marked(fn, name, torch.profiler.record_function, clock)):
                names.append(name)
    except Exception:  # the layers marked so far stay marked, and are put back with the rest
        pass
    from tftrace.capture.torch_owners import mark_keras_owners
    mark_keras_owners(patches, model, sidecar, clock)


@contextlib.contextmanager
def keras_without_tensorflow():
    """Keras' `get_config()` (the sidecar reads the program's configuration with it) asks whether
    TensorFlow is available by importing it: seconds, and a second framework in a torch process.
    While this is open, and only if Keras has not asked yet and TensorFlow is not imported, Keras is
    told it is not; afterwards Keras asks again as before."""
    lazy = None
    if "tensorflow" not in sys.modules:
        try:
            from keras.src.utils import module_utils
            lazy = module_utils.tensorflow
            if getattr(lazy, "_available", True) is not None:  # asked already: its answer stands
                lazy = None
        except Exception:  # another Keras: nothing to hold back
            lazy = None
    if lazy is not None:
        lazy._available = False
    try:
        yield
    finally:
        if lazy is not None and lazy._available is False:
            lazy._available = None
