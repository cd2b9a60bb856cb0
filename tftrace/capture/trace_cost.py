"""The cost of a `tftrace.trace(model=...)` block's model call: its first call's inputs, counted after the window.

The block is the user's own code: tftrace cannot see a jitted function or a training step of
theirs, only the Keras model they name. Its call is wrapped on the instance while the window is
open (put back as it closes; the wrapper reads the first call's input shapes, a check a call after
that), and once the window is stopped that call is counted as a predict step: the model's
forward pass on a batch of those shapes. A block that calls the model with training=True runs a
training step of its own (loss, gradients, update) that cannot be counted from here: its cost is
left out, saying so. The host's peaks are recorded for every trace() window."""

from __future__ import annotations

from tftrace.capture import batch_spec
from tftrace.capture.marks import Patches
from tftrace.capture.sidecar import add_to_sidecar
from tftrace.capture.warn import warn


class ModelCalls:
    """The first call of a model while a window is open: its inputs (Leafs) and `training`."""

    def __init__(self):
        self.structure = None
        self.training = None
        self.calls = 0
        self._patches = Patches()

    def watch(self, model) -> None:
        self._patches.put(model, "call", self._wrapper)

    def restore(self) -> None:
        self._patches.restore()

    def _wrapper(self, fn):
        def call(*args, **kwargs):
            if not self.calls:
                self._seen(args, kwargs)
            self.calls += 1
            return fn(*args, **kwargs)
        call.__wrapped__ = fn
        return call

    def _seen(self, args, kwargs) -> None:
        try:
            inputs = args[0] if args else kwargs.get("inputs")
            self.structure = batch_spec.leaves_of(inputs)
            self.training = bool(kwargs.get("training")) if len(args) < 2 else bool(args[1])
        except Exception:  # inputs of a kind the counter cannot take: no count, the call goes on
            self.structure = None


def record(run_dir: str | None, backend: str, model, calls: ModelCalls | None) -> None:
    """`cost` (or `cost_missing`) and `host_peaks` into a trace() run's sidecar. Never raises."""
    if not run_dir:
        return
    from tftrace.capture.step_cost import count, host_peaks
    try:
        if model is not None and calls is not None:
            add_to_sidecar(run_dir, *_cost(backend, model, calls, count))
        peaks = host_peaks(backend, model)
        if isinstance(peaks, dict):
            add_to_sidecar(run_dir, "host_peaks", peaks)
    except Exception as e:  # the trace is saved already: only the figures beside it are missing
        warn(f"could not record the model's cost beside {run_dir} ({type(e).__name__}: {e})")


def _cost(backend: str, model, calls: ModelCalls, count) -> tuple[str, object]:
    if not calls.calls:
        return "cost_missing", "the block did not call the model"
    if calls.training:
        return "cost_missing", ("the block called the model with training=True: its training step (loss, "
                                "gradients, update) is the block's own code, which the capture cannot count "
                                "(tftrace.TraceCallback counts Keras' own training steps)")
    if calls.structure is None:
        return "cost_missing", "the model's inputs were of a kind the counter cannot take"
    try:
        batch = batch_spec.fixed((calls.structure,), None, "the inputs of the block's first call of the model")
        cost = count(model, backend, "predict", batch)
    except batch_spec.Unknown as e:
        return "cost_missing", str(e)
    except Exception as e:
        text = (str(e).strip().splitlines() or [""])[0][:200]
        warn(f"the model's FLOPs could not be counted ({type(e).__name__}: {text}); the trace is kept without them")
        return "cost_missing", f"the model's call could not be counted ({type(e).__name__}: {text})"
    cost["source"] += "; the block's first call of the model (training=False), counted as one step"
    return "cost", cost
