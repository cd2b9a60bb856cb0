"""Captures for tests/test_capture_cost.py on Keras' JAX and torch backends, run as a script in a fresh process
with TensorFlow made unimportable (and JAX too, on torch), on the CPU.

    python tests/cost_capture_run.py BACKEND OUT_DIR [PART ...]

Parts: counted, uncountable, trace, and on torch pairwise (all by default). Writes
OUT_DIR/results.json: each part's runs' sidecar `cost`, `cost_missing` and `host_peaks`, whether the
model's state after the fit (weights, optimizer, metrics, seed generators; on torch each weight's
`.grad` and torch's random state) is what it was before TraceCallback's end hook and what a fit
without the callback leaves, the capture's warnings, and errors.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
import time
import traceback
import warnings

BACKEND = sys.argv[1] if __name__ == "__main__" else "jax"
_BLOCKED = ("tensorflow", "tf_keras") + (("jax", "jaxlib") if BACKEND == "torch" else ())


class _Blocked:
    """Refuses the frameworks this backend must not import (a probe finds a spec; importing raises)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        raise ImportError(f"No module named {spec.name!r} (blocked by the test)")

    def exec_module(self, module):
        raise ImportError(module.__name__)


sys.meta_path.insert(0, _Blocked())
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402

import keras  # noqa: E402

import tftrace  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402

from cost_model import BATCH, cnn as _cnn, data  # noqa: E402 - beside this script


def cnn(seed: int = 0):
    return _cnn(keras, seed)


def state(model) -> list[bytes]:
    """Every variable of the model, its optimizer and its metrics (seed generators' included), each
    weight's gradient on torch, and the random generators' states."""
    variables = list(model.variables) + list(model.optimizer.variables) + list(model.metrics_variables)
    out = [np.asarray(keras.ops.convert_to_numpy(v.value)).tobytes() for v in variables]
    if BACKEND == "torch":
        import torch
        out += [b"" if v.value.grad is None else v.value.grad.detach().cpu().numpy().tobytes()
                for v in model.trainable_variables]
        out.append(torch.get_rng_state().numpy().tobytes())
    out.append(repr(np.random.get_state()).encode())
    return out


class Record(keras.callbacks.Callback):
    """The model's state as the fit ends: before and after TraceCallback's end hook (which counts)."""

    def on_train_end(self, logs=None):
        self.at_end = state(self.model)


def fit(model, callbacks, epochs: int = 1):
    x, y = data()
    np.random.seed(1)  # fit shuffles with NumPy's global generator
    model.fit(x, y, batch_size=BATCH, epochs=epochs, validation_data=(x[:64], y[:64]), verbose=0, callbacks=callbacks)
    return model


def sidecars(runs: list[str]) -> dict:
    out = {}
    for run in runs:
        with open(os.path.join(run, "tftrace_run.json")) as f:
            side = json.load(f)
        out[side["label"]] = {k: side.get(k) for k in ("cost", "cost_missing", "host_peaks", "mode", "steps")}
    return out


def part_counted(out: str) -> dict:
    plain = state(fit(cnn(), []))  # as the fit ends: the random generators are the process's
    before, after = Record(), Record()
    cb = tftrace.TraceCallback(os.path.join(out, "logs"))
    model = cnn()
    began = time.perf_counter()
    fit(model, [before, cb, after])
    fit_s = time.perf_counter() - began
    x, _y = data()
    model.predict(x, batch_size=BATCH, verbose=0, callbacks=[cb])
    return {"runs": sidecars(cb.runs), "unchanged_by_count": before.at_end == after.at_end,
            "same_as_plain": plain == after.at_end, "fit_s": fit_s}


class Picky(keras.layers.Layer):
    """Runs on real data; refuses a batch of zeros (what the torch counter feeds it)."""

    def compute_output_shape(self, shape):  # built symbolically without running `call`
        return shape

    def call(self, x):
        if float(keras.ops.convert_to_numpy(keras.ops.sum(keras.ops.abs(x)))) == 0.0:
            raise ValueError("a batch of zeros")
        return x


class HostStep(keras.Sequential):
    """A JAX step that reads a value back to the host as it runs: fine run eagerly, impossible to jit
    (what the JAX counter does with a step the trainer does not jit)."""

    def train_step(self, state, data):
        float(np.asarray(data[0]).mean())
        return super().train_step(state, data)


def part_uncountable(out: str) -> dict:
    """A step the counter cannot run: the capture, the fit and its weights go on as without it."""
    def model(seed=0):
        keras.utils.set_random_seed(seed)
        if BACKEND == "jax":
            m = HostStep([keras.Input((12, 12, 3)), keras.layers.Flatten(), keras.layers.Dense(10, name="dense")])
        else:
            m = keras.Sequential([keras.Input((12, 12, 3)), keras.layers.Flatten(), Picky(name="picky"),
                                  keras.layers.Dense(10, name="dense")])
        m.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=BACKEND == "jax")
        return m
    plain = fit(model(), [])
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), evaluate_steps=None)
    traced = fit(model(), [cb])
    same = [np.asarray(keras.ops.convert_to_numpy(v.value)).tobytes() for v in plain.weights] == \
        [np.asarray(keras.ops.convert_to_numpy(v.value)).tobytes() for v in traced.weights]
    return {"runs": sidecars(cb.runs), "same_as_plain": same}


def part_trace(out: str) -> dict:
    """tftrace.trace(model=...) around the user's own loop of model calls, then around a training call."""
    model = cnn()
    x, _y = data()
    outputs = []
    with tftrace.trace(os.path.join(out, "logs"), label="calls", model=model) as calls:
        for i in range(4):
            with tftrace.step("predict", i):
                outputs.append(keras.ops.convert_to_numpy(model(x[i * BATCH:(i + 1) * BATCH], training=False)))
    plain = [keras.ops.convert_to_numpy(model(x[i * BATCH:(i + 1) * BATCH], training=False)) for i in range(4)]
    with tftrace.trace(os.path.join(out, "logs"), label="training", model=model) as training:
        model(x[:BATCH], training=True)
    with tftrace.trace(os.path.join(out, "logs"), label="no_model") as bare:
        keras.ops.sum(keras.ops.ones((4, 4)))
    return {"runs": sidecars([calls.run_dir, training.run_dir, bare.run_dir]),
            "outputs_equal": all(a.tobytes() == b.tobytes() for a, b in zip(outputs, plain)),
            "calls_put_back": not any("call" in vars(layer) for layer in [model, *model.layers])}


def pairwise_loss(y_true, y_pred):
    """A loss over every pair of the batch's examples: its matmul grows with the batch's square."""
    similarity = keras.ops.matmul(y_pred, keras.ops.transpose(y_pred))
    return keras.ops.mean(similarity) + 0.0 * keras.ops.mean(y_true)


def part_pairwise(out: str) -> dict:
    """A step whose FLOPs do not grow with the batch alone: counted on the whole batch (torch)."""
    model = cnn()
    model.compile("adam", pairwise_loss)
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), evaluate_steps=None)
    fit(model, [cb])
    return {"runs": sidecars(cb.runs)}


PARTS = {"counted": part_counted, "uncountable": part_uncountable, "trace": part_trace}
if BACKEND == "torch":
    PARTS["pairwise"] = part_pairwise


def main(out: str, parts: list[str]) -> None:
    results = {}
    for name in parts or list(PARTS):
        part = PARTS[name]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = part(os.path.join(out, name))
            except Exception:
                result = {"error": traceback.format_exc()}
        result["warnings"] = [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]
        results[name] = result
    results["imported"] = sorted({m.split(".")[0] for m in sys.modules} & {"tensorflow", "tf_keras", "jax", "torch"})
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)


if __name__ == "__main__":
    main(sys.argv[2], sys.argv[3:])
