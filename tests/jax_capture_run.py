"""Captures for tests/test_capture_jax.py, run as a script in a fresh process: Keras on JAX, on the CPU,
with TensorFlow made unimportable (a finder first on sys.meta_path refuses it).

    python tests/jax_capture_run.py OUT_DIR [PART ...]

Writes OUT_DIR/<part>/logs (the runs) and OUT_DIR/results.json (what each part saw: weights equal,
warnings, experiments, errors). Parts: fit, plain, predict, data, loop, tracer_off, ahead, confirm_ahead, cut, cycles, all by
default.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sys
import threading
import time
import traceback
import warnings


class _NoTensorFlow:
    """Refuses `import tensorflow` (and its submodules), as on a machine without it."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras"):
            raise ImportError(f"No module named {name!r} (blocked by the test)")
        return None


sys.meta_path.insert(0, _NoTensorFlow())
os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

import keras  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import tftrace  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402
from capture_cut import cut_windows  # noqa: E402 - beside this script
from capture_tiny import tiny_data, tiny_model  # noqa: E402


def _model(seed: int = 0):
    return tiny_model(keras, seed)


_data = tiny_data


class Other(keras.callbacks.Callback):
    """A callback of the user's: its hooks are marked in the trace."""

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.001)


def _state(model) -> list:
    return [np.asarray(v) for v in model.weights] + [np.asarray(v) for v in model.optimizer.variables]


def _fit(callbacks, seed_data: int = 1):
    model = _model()
    x, y = _data()
    np.random.seed(seed_data)  # fit shuffles with NumPy's global generator
    model.fit(x, y, batch_size=8, epochs=2, validation_data=(x[:32], y[:32]), verbose=0, callbacks=callbacks)
    return model


def part_fit(out: str) -> dict:
    plain = _fit([Other()])
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), confirm=True)
    traced = _fit([cb, Other()])
    same = all(np.array_equal(a, b) for a, b in zip(_state(plain), _state(traced)))
    return {"runs": cb.runs, "weights_equal": same, "n_state": len(_state(plain)),
            "experiments": [e.to_dict() for e in cb.experiments]}


def part_plain(out: str) -> dict:
    """A plain fit, TraceCallback its only callback: Keras keeps dispatching the end hooks on its
    worker thread, and the weights are those of the same fit without it."""
    plain = _fit([])
    cb = tftrace.TraceCallback(os.path.join(out, "logs"))
    traced = _fit([cb])
    same = all(np.array_equal(a, b) for a, b in zip(_state(plain), _state(traced)))
    dispatch = {mode: getattr(cb._callbacks, f"_async_{mode}") for mode in ("train", "test")}
    return {"runs": cb.runs, "weights_equal": same, "async": dispatch}


def part_predict(out: str) -> dict:
    model = _model()
    x, _y = _data()
    before = [np.asarray(v) for v in model.weights]
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), confirm=True)
    model.predict(x, batch_size=8, verbose=0, callbacks=[cb])
    same = all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, model.weights))
    return {"runs": cb.runs, "weights_equal": same, "experiments": [e.to_dict() for e in cb.experiments]}


class Batches(keras.utils.PyDataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        x, y = _data()
        return x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]


def part_data(out: str) -> dict:
    """confirm on a PyDataset (read again by index) and on a generator (skipped, with the reason)."""
    x, y = _data()
    seen = {}

    def generator():
        for i in range(8):
            yield x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]

    for name, data in (("pydataset", Batches()), ("generator", generator())):
        cb = tftrace.TraceCallback(os.path.join(out, name), fit_steps=(1, 3), confirm=True)
        _model().fit(data, epochs=1, verbose=0, callbacks=[cb])
        seen[name] = {"runs": cb.runs, "experiments": [e.to_dict() for e in cb.experiments]}
    return seen


def _jit_loop(steps: int, log_dir: str, **kwargs):
    """A raw jitted training loop (no Keras): linear regression by gradient descent."""
    @jax.jit
    def train_step(w, x, y):
        loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * grad, loss

    x, y = _data()
    w = jnp.zeros((8, 1))
    w, _ = train_step(w, x[:8], y[:8])  # compiled before the window
    with tftrace.trace(log_dir, label="jit-loop", **kwargs) as t:
        for i in range(steps):
            with tftrace.step("train", i):
                with tftrace.region("load batch"):
                    xb, yb = x[i * 8 % 96:][:8], y[i * 8 % 96:][:8]
                w, loss = train_step(w, xb, yb)
                loss.block_until_ready()
    return t


def part_loop(out: str) -> dict:
    t = _jit_loop(6, os.path.join(out, "logs"), python=True, python_tracer=True)
    return {"runs": [t.run_dir]}


def part_tracer_off(out: str) -> dict:
    t = _jit_loop(3, os.path.join(out, "logs"))  # the default: JAX's Python tracer off
    return {"runs": [t.run_dir]}


def part_ahead(out: str) -> dict:
    """A stock capture (jax.profiler, no tftrace) of a loop that never waits for a result: the host
    marks steps as long as their dispatch while XLA:CPU runs the module behind. Timed untraced too."""
    import statistics

    @jax.jit
    def step(w, x):
        for _ in range(4):
            x = jnp.tanh(x @ w)
        return w - 1e-3 * x.T @ x / x.shape[0], x.sum()

    state = {"w": jnp.ones((384, 384)) * 0.01}
    x = jnp.ones((256, 384))

    def loop(n, mark=False):
        t0 = time.perf_counter()
        for i in range(n):
            with (jax.profiler.StepTraceAnnotation("train", step_num=i) if mark else contextlib.nullcontext()):
                state["w"], loss = step(state["w"], x)
        loss.block_until_ready()
        return (time.perf_counter() - t0) / n * 1e3

    loop(3)  # compiled
    untraced = statistics.median(loop(10) for _ in range(5))
    log_dir = os.path.join(out, "logs")
    jax.profiler.start_trace(log_dir)
    loop(10, mark=True)
    jax.profiler.stop_trace()
    runs = sorted(glob.glob(os.path.join(log_dir, "plugins", "profile", "*")))
    return {"runs": runs, "untraced_ms": untraced}


def part_confirm_ahead(out: str) -> dict:
    """confirm=True on a Keras fit whose steps take milliseconds on XLA:CPU while their dispatch
    takes a fraction of one: the host runs ahead, and the untraced step must still be the device's.
    Also each epoch's steps, timed untraced by epoch (no hooks of ours)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((768,)), keras.layers.Dense(768, activation="tanh"),
                              keras.layers.Dense(768, activation="tanh"), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    x, y = rng.random((16 * 256, 768), dtype=np.float32), rng.random((16 * 256, 1), dtype=np.float32)

    class Epochs(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds = []

        def on_epoch_begin(self, epoch, logs=None):
            self._t = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):  # the callback list has read the logs: its work done
            self.seconds.append(time.perf_counter() - self._t)
    epochs = Epochs()
    model.fit(x, y, batch_size=256, epochs=3, verbose=0, callbacks=[epochs])
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), evaluate_steps=None, predict_steps=None, confirm=True)
    model.fit(x, y, batch_size=256, epochs=1, verbose=0, callbacks=[cb])
    return {"runs": cb.runs, "experiments": [e.to_dict() for e in cb.experiments],
            "epoch_ms": min(epochs.seconds[1:]) / 16 * 1e3}


def part_cut(out: str) -> dict:
    """An exception and a Ctrl-C inside fit windows: each window is kept, marked cut short."""
    return cut_windows(keras, _model, _data, out)


def part_cycles(out: str, cycles: int = 20) -> dict:
    """Many captures in a row while other threads run Python and jitted work: keras-team/keras#20450
    turned JAX profiling off below Python 3.12 for segfaults in such runs."""
    stop = threading.Event()
    f = jax.jit(lambda a: jnp.tanh(a @ a))

    def busy():
        a = jnp.ones((16, 16))
        while not stop.is_set():
            sum(i * i for i in range(100))
            f(a).block_until_ready()

    threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    runs = []
    try:
        for i in range(cycles):
            with tftrace.trace(os.path.join(out, "logs"), label=f"cycle{i}") as t:
                for s in range(3):
                    with tftrace.step("train", s):
                        f(jnp.ones((16, 16))).block_until_ready()
            runs.append(t.run_dir)
    finally:
        stop.set()
        for t in threads:
            t.join()
    return {"runs": runs, "seconds": time.perf_counter() - began, "python": sys.version.split()[0]}


PARTS = {"fit": part_fit, "plain": part_plain, "predict": part_predict, "data": part_data, "loop": part_loop,
         "tracer_off": part_tracer_off, "ahead": part_ahead, "confirm_ahead": part_confirm_ahead, "cut": part_cut,
         "cycles": part_cycles}


def main(out: str, parts: list[str]) -> None:
    results = {}
    for name in parts or list(PARTS):
        began = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = PARTS[name](os.path.join(out, name))
            except Exception:
                result = {"error": traceback.format_exc()}
        result["warnings"] = [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]
        result["wall_s"] = time.perf_counter() - began
        results[name] = result
    results["tensorflow_imported"] = sorted(m for m in sys.modules if m.split(".")[0] == "tensorflow")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
