"""Model metadata (layers, parameters, shapes, versions) saved next to a captured run."""

from __future__ import annotations

import json
import os

from tftrace.atomic import replacing
from tftrace.model.layout import SIDECAR


def write_sidecar(run_dir: str, data: dict) -> str:
    path = os.path.join(run_dir, SIDECAR)
    with open(path, "w", encoding="utf-8") as f:
        _dump(data, f)
    return path


def add_to_sidecar(run_dir: str, key: str, value) -> None:
    """Set one field of a run's sidecar after its window: the file is replaced whole (a crash
    mid-write leaves the old one)."""
    path = os.path.join(run_dir, SIDECAR)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data[key] = value
    with replacing(path) as f:
        _dump(data, f)


def _dump(data: dict, f) -> None:
    json.dump(data, f, indent=2, sort_keys=True, default=str)


def _shape(layer):
    try:
        return str(tuple(layer.output.shape))
    except Exception:  # subclassed models and unbuilt layers have no symbolic output
        return ""


def _params(layer) -> int:
    try:
        return int(layer.count_params())
    except Exception:  # unbuilt layers raise
        return -1


def describe(model, mode: str, batch_size: int | None = None, callbacks=()) -> dict:
    """What analysis needs to name layers and show parameters beside time, and the program's
    configuration (capture/program_config.py). Framework versions are read from the modules already
    imported: a JAX run must not import TensorFlow for them."""
    from tftrace.capture.backend import TORCH, keras_backend
    if keras_backend() == TORCH:
        from tftrace.capture.torch_profiler import keras_without_tensorflow
        with keras_without_tensorflow():
            return _describe(model, mode, batch_size, callbacks)
    return _describe(model, mode, batch_size, callbacks)


def _describe(model, mode: str, batch_size: int | None, callbacks) -> dict:
    from tftrace.capture.backend import versions
    from tftrace.capture.program_config import layers_of, program_config
    layers, outputs = [], output_layers(model)
    for layer in layers_of(model):
        layers.append({"name": layer.name, "class": type(layer).__name__, "params": _params(layer),
                       "trainable_params": _trainable(layer), "output_shape": _shape(layer),
                       "dtype_policy": _policy(layer), **({"output": True} if layer.name in outputs else {})})
    return {
        "model": getattr(model, "name", ""), "mode": mode, "batch_size": batch_size,
        "params": _params(model), "trainable_params": _trainable(model), "dtype_policy": _policy(model),
        "layers": layers, "layer_names": [x["name"] for x in layers],
        "layer_params": {x["name"]: x["params"] for x in layers},
        "keras_version": "", **versions(), "program": program_config(model, callbacks),
    }


def output_layers(model) -> set[str]:
    """The layers whose outputs are the model's: their width is what the model predicts."""
    try:
        outputs = model.outputs if getattr(model, "outputs", None) else []
        return {t._keras_history.operation.name for t in outputs if getattr(t, "_keras_history", None)}
    except Exception:  # a subclassed model has no graph of layers: no layer is known to make its output
        return set()


def _policy(layer) -> str:
    """The layer's dtype policy (`mixed_bfloat16`, `float32`...): what precision its ops ran at."""
    policy = getattr(layer, "dtype_policy", None)
    return str(getattr(policy, "name", policy or ""))


def _trainable(layer) -> int:
    try:
        return int(sum(int(w.shape.num_elements() if hasattr(w.shape, "num_elements") else _prod(w.shape))
                       for w in layer.trainable_weights))
    except Exception:
        return -1


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
