"""What each captured step costs, saved beside its run once the call is over: its FLOPs, its batch, the CPU's peaks.

The FLOPs are the backend's own counter's. The trace cannot hold these on every backend
(TensorFlow on the CPU records no shapes), so the capture records them in the run's sidecar as
`cost` and `host_peaks` (see docs/cost-capture.md).
Everything here runs after the call's last window and its untraced stretch: never inside a window
or the steps timed after it. A count that fails leaves its key out (with `cost_missing` saying
why), never the capture or the user's call."""

from __future__ import annotations

import sys
from typing import NamedTuple

from tftrace.capture import batch_spec, cost_analytic
from tftrace.capture.sidecar import add_to_sidecar
from tftrace.capture.warn import warn

_CALLS = {"train": "fit", "test": "evaluate", "predict": "predict"}


class _Pending(NamedTuple):
    run: str
    mode: str


class StepCosts:
    """One per TraceCallback: the runs a call captured, the batch each mode fed its step (read as
    the mode ends, from the call's data), and their costs written when the call is over."""

    def __init__(self, backend: str):
        self._backend = backend
        self._pending: list[_Pending] = []
        self._batches: dict[str, batch_spec.BatchSpec | str] = {}  # mode -> its batch, or why not known
        # (mode, shapes, steps a call) -> the cost, for one call: a fit's epochs share one count; the
        # next call may run another model (layers frozen, compiled again)
        self._counted: dict = {}
        self._warned = False

    def clear(self) -> None:
        self._pending, self._batches, self._counted = [], {}, {}

    def captured(self, run: str, mode: str) -> None:
        self._pending.append(_Pending(run, mode))

    def mode_ended(self, model, mode: str) -> None:
        """Read the batch `mode` fed its step, from the call's data in its frame (cheap: no batch read)."""
        if not any(p.mode == mode for p in self._pending) or mode in self._batches:
            return
        try:
            self._batches[mode] = batch_spec.of_call(model, _CALLS[mode])
        except batch_spec.Unknown as e:
            self._batches[mode] = str(e)
        except Exception as e:  # an unexpected data object: the cost stays unknown
            self._batches[mode] = f"the batch could not be read ({type(e).__name__}: {e})"

    def call_ended(self, model) -> None:
        """The call is over: count each captured run's step and write it, and the host's peaks."""
        pending, batches = self._pending, self._batches
        self._pending, self._batches = [], {}
        try:
            self._write(model, pending, batches)
        finally:
            self._counted = {}

    def _write(self, model, pending: list[_Pending], batches: dict) -> None:
        if not pending or model is None:
            return
        peaks = self._peaks(model)
        for run, mode in pending:
            batch = batches.get(mode, "the call's data was not read")
            try:
                if isinstance(batch, str):
                    add_to_sidecar(run, "cost_missing", batch)
                else:
                    cost = self._cost(model, mode, batch)
                    add_to_sidecar(run, "cost" if isinstance(cost, dict) else "cost_missing", cost)
                if isinstance(peaks, dict):
                    add_to_sidecar(run, "host_peaks", peaks)
            except Exception as e:  # the sidecar could not be rewritten: the run stays as saved
                self._warn(f"could not record the step's cost beside {run} ({type(e).__name__}: {e})")

    def _cost(self, model, mode: str, batch: batch_spec.BatchSpec):
        spe = _steps_per_execution(model)
        key = (mode, repr(batch.structure), spe)
        if key not in self._counted:
            try:
                self._counted[key] = count(model, self._backend, mode, batch, spe)
            except batch_spec.Unknown as e:  # a case not counted yet, known as such: no warning
                self._counted[key] = str(e)
            except Exception as e:  # never into the user's call: the run keeps its trace, without the count
                self._counted[key] = f"the {mode} step could not be counted ({type(e).__name__}: {_short(e)})"
                self._warn(f"the {mode} step's FLOPs could not be counted ({type(e).__name__}: {_short(e)}); "
                           "the trace is kept without them")
        return self._counted[key]

    def _peaks(self, model):
        try:
            return host_peaks(self._backend, model)
        except Exception as e:
            return f"{type(e).__name__}: {_short(e)}"

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warn(message)


def count(model, backend: str, mode: str, batch: batch_spec.BatchSpec, spe: int = 1) -> dict:
    """The `cost` of one step of `mode` (`spe` batches, as the window's markers mark a step). Raises
    batch_spec.Unknown for what is not counted yet."""
    replicas = _replicas(model)
    if replicas > 1:  # each replica takes its share of the batch: the graph counted would be one replica's
        raise batch_spec.Unknown(f"the model runs on {replicas} replicas (a distribution strategy): not counted yet")
    if backend == "jax":
        from tftrace.capture import cost_jax
        flops, source = cost_jax.step_flops(model, mode, batch.structure)
        cost = {"source": source, "step_flops": flops}
    elif backend == "torch":
        cost = _torch(model, mode, batch)
    else:
        cost = _tensorflow(model, mode, batch)
    cost.update(step=mode, batch_size=batch.batch_size, batch_shapes=batch.shapes(), batch_source=batch.how,
                batches_per_step=spe)
    if spe > 1:  # the trace's step is one call of the step function: spe batches
        cost["step_flops"] *= spe
        for part in ("layers", "other"):
            cost[part] = _scaled(cost.get(part), spe)
    return cost


def _tensorflow(model, mode: str, batch) -> dict:
    from tftrace.capture import cost_tf
    layers = _layers(model)
    counted, graph = None, "the graph Keras traced for the call, its shapes fixed for this batch"
    try:
        found = cost_tf.keras_graph(model, mode, batch.structure)
        if found is not None:
            counted = cost_tf.count_ops(*found)
    except Exception:  # a graph this Keras holds otherwise: trace the step again
        counted = None
    if counted is not None and any(c.flops is None for c in counted):
        counted = None  # a shape the copy could not fix (past a loop): a trace for this batch fixes it
    if counted is None:
        graph = "the step traced again for this batch"
        try:
            counted = cost_tf.count_ops(cost_tf.step_graph(model, mode, batch.structure))
        except Exception as e:
            return _analytic_only(layers, mode, batch, f"the step could not be traced for counting "
                                                       f"({type(e).__name__}: {_short(e)})")
    tally = cost_tf.tally(counted, [layer.name for layer in layers], _optimizer_name(model))
    per_layer = dict(tally.layers)
    by_name = {layer.name: layer for layer in layers}
    analytic, partial = [], []
    for name in sorted(tally.unknown):  # an op of the layer had shapes the graph does not fix
        found = _analytic(by_name.get(name), mode, batch.batch_size)
        if found is None:
            partial.append(name)
        else:
            per_layer[name] = found
            analytic.append(name)
    source = f"TensorFlow's op statistics (the flops each op type registers) on the {mode} step's graph: {graph}"
    if analytic:
        source += (f"; analytic counts from weights and output shapes for {', '.join(analytic)} "
                   "(shapes not fixed in the graph)")
    if partial:
        source += f"; partial for {', '.join(partial)} (ops whose shapes are not fixed)"
    if tally.unowned_unknown:
        source += f"; {tally.unowned_unknown} ops outside the layers not counted (shapes not fixed)"
    other = {k: v for k, v in tally.other.items() if v}
    cost = {"source": source, "layers": per_layer, "other": other,
            "step_flops": sum(sum(v.values()) for v in per_layer.values()) + sum(other.values())}
    if analytic:
        cost["analytic"] = analytic
    if partial:
        cost["partial"] = partial
    return cost


def _analytic_only(layers, mode: str, batch, why: str) -> dict:
    per_layer = {}
    for layer in layers:
        found = _analytic(layer, mode, batch.batch_size)
        if found is not None and (found["forward"] or found["backward"]):
            per_layer[layer.name] = found
    if not per_layer:
        raise ValueError(why)
    return {"source": f"analytic counts from layer weights and output shapes, for the layers of kinds where they "
                      f"are exact ({', '.join(sorted(per_layer))}); the rest of the step is not counted: {why}",
            "layers": per_layer, "analytic": sorted(per_layer),
            "step_flops": sum(sum(v.values()) for v in per_layer.values())}


def _analytic(layer, mode: str, batch_size: int) -> dict | None:
    if layer is None:
        return None
    forward = cost_analytic.forward(layer, batch_size)
    if forward is None:
        return None
    backward = 0.0
    if mode == "train":
        backward = cost_analytic.backward(layer, forward, bool(layer.trainable and layer.trainable_weights))
    return {"forward": forward, "backward": backward}


def _torch(model, mode: str, batch) -> dict:
    import torch

    from tftrace.capture import cost_torch
    counted, how = cost_torch.count(model, mode, batch.structure, batch.batch_size)
    phases = "forward pass, loss and weight gradients" if mode == "train" else \
        ("forward pass and loss" if mode == "test" else "forward pass")
    source = (f"torch.utils.flop_counter.FlopCounterMode over the {mode} step's {phases} on zeros of the batch's "
              f"shapes, {how} (torch {torch.__version__}): matmuls, convolutions and attention; elementwise ops "
              "and the optimizer's update count nothing there")
    return {"source": source, "layers": counted.layers, "other": {k: v for k, v in counted.other.items() if v},
            "step_flops": counted.step_flops}


def host_peaks(backend: str, model) -> dict | str:
    """The CPU's measured peaks where the model runs on the CPU; else why not (a string)."""
    from tftrace.capture import host_peaks as peaks
    if _accelerated(backend):
        return "the model runs on an accelerator: its peaks come from the trace"
    dtypes = ["float32"]
    compute = str(getattr(getattr(model, "dtype_policy", None), "compute_dtype", "") or "")
    if compute in ("bfloat16", "float16"):
        dtypes.append(compute)
    return peaks.measure(backend, dtypes)


def _accelerated(backend: str) -> bool:
    try:
        if backend == "jax":
            import jax
            return jax.default_backend() != "cpu"
        if backend == "torch":  # Keras' device where Keras runs the model; a raw loop's: any GPU
            if "keras" not in sys.modules:
                import torch
                return bool(torch.cuda.is_available())
            from keras.src.backend.torch.core import get_device
            return str(get_device()) != "cpu"
        import tensorflow as tf
        return bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))
    except Exception:
        return False


def _optimizer_name(model) -> str:
    optimizer = getattr(model, "optimizer", None)
    inner = getattr(optimizer, "inner_optimizer", None)  # loss scaling wraps the optimizer that runs
    return str(getattr(inner or optimizer, "name", "") or "")


def _layers(model) -> list:
    from tftrace.capture.program_config import layers_of
    return [layer for layer in layers_of(model) if type(layer).__name__ != "InputLayer"]


def _replicas(model) -> int:
    try:
        return int(getattr(getattr(model, "distribute_strategy", None), "num_replicas_in_sync", 1) or 1)
    except Exception:
        return 1


def _scaled(part, factor: int):
    if isinstance(part, dict):
        return {k: _scaled(v, factor) for k, v in part.items()}
    return part * factor if isinstance(part, (int, float)) else part


def _steps_per_execution(model) -> int:
    try:
        return max(int(getattr(model, "steps_per_execution", 1) or 1), 1)
    except (TypeError, ValueError):
        return 1


def _short(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else "")[:200]
