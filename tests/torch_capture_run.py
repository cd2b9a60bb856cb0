"""Captures for tests/test_capture_torch.py, run as a script in a fresh process: Keras on torch (CPU) and a
raw torch loop, with TensorFlow and JAX made unimportable (a finder first on sys.meta_path refuses them).

    python tests/torch_capture_run.py OUT_DIR [PART ...]

Writes OUT_DIR/<part>/logs (the runs) and OUT_DIR/results.json (what each part saw: weights equal,
warnings, errors, the frameworks imported). Parts: fit, confirm, predict, keras_loop, cut, broken, unsaved, cnn, loop, stock;
all but loop and stock by default. `loop` and `stock` import no Keras: run them on their own, so torch is the only
framework in the process.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
import time
import traceback
import warnings


class _NoTensorFlowNoJax:
    """Refuses `import tensorflow` and `import jax` (and their submodules), as on a machine with torch only.
    The spec it finds has no origin, so a probe (`importlib.util.find_spec`, as torch._dynamo makes for
    the modules it skips) passes on; importing it raises ImportError, and nothing enters sys.modules."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras", "jax", "jaxlib"):
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        raise ImportError(f"No module named {spec.name!r} (blocked by the test)")

    def exec_module(self, module):  # never reached: create_module refuses
        raise ImportError(module.__name__)


sys.meta_path.insert(0, _NoTensorFlowNoJax())
os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tftrace  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402
from capture_cut import cut_windows  # noqa: E402 - beside this script
from capture_tiny import tiny_data, tiny_model  # noqa: E402


def _keras():
    import keras
    return keras


def _model(seed: int = 0):
    return tiny_model(_keras(), seed)


_data = tiny_data


def _other():
    keras = _keras()

    class Other(keras.callbacks.Callback):
        """A callback of the user's: its hooks are marked in the trace."""

        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.001)
    return Other()


def _state(model) -> list:
    return [np.asarray(v) for v in model.weights] + [np.asarray(v) for v in model.optimizer.variables]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def _fit(callbacks, epochs: int = 2):
    model = _model()
    x, y = _data()
    np.random.seed(1)  # fit shuffles with NumPy's global generator
    model.fit(x, y, batch_size=8, epochs=epochs, validation_data=(x[:64], y[:64]), verbose=0, callbacks=callbacks)
    return model


def part_fit(out: str) -> dict:
    plain = _fit([_other()])
    cb = tftrace.TraceCallback(os.path.join(out, "logs"))
    traced = _fit([cb, _other()])
    layer_calls_put_back = not any("call" in vars(layer) for layer in [traced, *traced.layers])
    return {"runs": cb.runs, "weights_equal": _same(_state(plain), _state(traced)), "n_state": len(_state(plain)),
            "layer_calls_put_back": layer_calls_put_back}


def part_predict(out: str) -> dict:
    model = _model()
    x, _y = _data()
    before = [np.asarray(v) for v in model.weights]
    plain = model.predict(x, batch_size=8, verbose=0)
    cb = tftrace.TraceCallback(os.path.join(out, "logs"))
    traced = model.predict(x, batch_size=8, verbose=0, callbacks=[cb])
    return {"runs": cb.runs, "weights_equal": _same(before, [np.asarray(v) for v in model.weights]),
            "predictions_equal": _same([plain], [traced])}


def part_cut(out: str) -> dict:
    """An exception and a Ctrl-C inside fit windows: each window is kept, marked cut short."""
    return cut_windows(_keras(), _model, _data, out)


def part_broken(out: str) -> dict:
    """torch's profiler refuses to start (another profiler holds this thread: `emit_itt`, as `emit_nvtx`
    does on a GPU): one warning, and fit trains on to the same weights."""
    plain = _fit([], epochs=1)
    cb = tftrace.TraceCallback(os.path.join(out, "logs"))
    with torch.autograd.profiler.emit_itt():
        traced = _fit([cb], epochs=1)
    return {"runs": cb.runs, "weights_equal": _same(_state(plain), _state(traced))}


def part_unsaved(out: str) -> dict:
    """The trace cannot be written when the window ends (the profile folder became a file): one
    warning, and fit trains on to the same weights."""
    import shutil
    keras = _keras()
    logs = os.path.join(out, "logs")
    profile = os.path.join(logs, "plugins", "profile")

    class Clobber(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                shutil.rmtree(profile)
                with open(profile, "w") as f:
                    f.write("not a folder")

    plain = _fit([], epochs=1)
    cb = tftrace.TraceCallback(logs, evaluate_steps=None)
    traced = _fit([cb, Clobber()], epochs=1)
    after = tftrace.TraceCallback(os.path.join(out, "after"), fit_steps=(1, 2), evaluate_steps=None)
    _fit([after], epochs=1)  # the profiler stopped before the export failed: it is free again
    return {"runs": cb.runs, "weights_equal": _same(_state(plain), _state(traced)), "after": after.runs}


class _Block(torch.nn.Module):
    """A residual block: a module with modules inside."""

    def __init__(self, width: int):
        super().__init__()
        self.fc, self.act = torch.nn.Linear(width, width), torch.nn.ReLU()

    def forward(self, x):
        return x + self.act(self.fc(x))


class _Net(torch.nn.Module):
    """A small module tree: stem, two blocks in a Sequential, head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Linear(8, 16)
        self.blocks = torch.nn.Sequential(_Block(16), _Block(16))
        self.head = torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.blocks(torch.relu(self.stem(x))))


def part_loop(out: str) -> dict:
    """A raw torch training loop (no Keras) in tftrace.trace() with tftrace.step() marks, its model a
    small module tree; each module's call is a range named as `named_modules()` names it."""
    torch.manual_seed(0)
    net = _Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = (torch.from_numpy(a) for a in _data())
    with tftrace.trace(os.path.join(out, "logs"), label="torch-loop") as t:
        for i in range(6):
            with tftrace.step("train", i):
                with tftrace.region("load batch"):
                    xb, yb = x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(net(xb), yb)
                loss.backward()
                opt.step()
    return {"runs": [t.run_dir], "profiler": t.session.profiler.name if t.session.profiler else None,
            "modules": [name for name, _ in net.named_modules()]}


def part_stock(out: str) -> dict:
    """The same module tree's loop recorded by torch.profiler alone, as users record it: with_stack=True
    (modules and Python functions in the trace), and without (neither)."""
    torch.manual_seed(0)
    net = _Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = (torch.from_numpy(a) for a in _data())
    runs = []
    for stack in (True, False):
        folder = os.path.join(out, "with_stack" if stack else "plain")
        os.makedirs(folder)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=stack) as prof:
            for i in range(5):
                opt.zero_grad()
                torch.nn.functional.mse_loss(net(x[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8]).backward()
                opt.step()
                prof.step()
        prof.export_chrome_trace(os.path.join(folder, "host.pt.trace.json"))
        runs.append(folder)
    return {"runs": runs}


def part_cnn(out: str) -> dict:
    """Keras on torch: a small CNN's fit (two convolutions, two dense layers) in a TraceCallback window."""
    keras = _keras()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((16, 16, 3)), keras.layers.Conv2D(8, 3, activation="relu", name="conv_a"),
                              keras.layers.MaxPooling2D(name="pool"),
                              keras.layers.Conv2D(8, 3, activation="relu", name="conv_b"),
                              keras.layers.Flatten(name="flat"), keras.layers.Dense(16, activation="relu", name="fc"),
                              keras.layers.Dense(4, name="logits")], name="cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random((192, 16, 16, 3)).astype("float32"), rng.integers(0, 4, 192)
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), evaluate_steps=None)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    return {"runs": cb.runs}


def part_keras_loop(out: str) -> dict:
    """A Keras model called directly in the user's own loop, in tftrace.trace(model=...)."""
    model = _model()
    keras_to_numpy = _keras().ops.convert_to_numpy
    x, _y = _data()
    plain = [keras_to_numpy(model(x[i * 8:(i + 1) * 8], training=False)) for i in range(4)]
    with tftrace.trace(os.path.join(out, "logs"), label="keras-loop", model=model) as t:
        traced = []
        for i in range(4):
            with tftrace.step("predict", i):
                traced.append(keras_to_numpy(model(x[i * 8:(i + 1) * 8], training=False)))
    return {"runs": [t.run_dir], "outputs_equal": _same(plain, traced),
            "layer_calls_put_back": not any("call" in vars(layer) for layer in [model, *model.layers])}


def part_confirm(out: str) -> dict:
    """confirm=True on torch: after fit's window, the input alone and the step alone are timed, and the
    weights (and Adam's slots) end as without it. server_port is not there on torch: a warning."""
    plain = _fit([], epochs=1)
    plain_random = (torch.get_rng_state().numpy().copy(), np.random.get_state()[1].copy())
    cb = tftrace.TraceCallback(os.path.join(out, "logs"), evaluate_steps=None, confirm=True, server_port=6123)
    traced = _fit([cb], epochs=1)
    traced_random = (torch.get_rng_state().numpy().copy(), np.random.get_state()[1].copy())
    return {"runs": cb.runs, "experiments": [e.to_dict() for e in cb.experiments],
            "weights_equal": _same(_state(plain), _state(traced)), "n_state": len(_state(plain)),
            "random_equal": _same(list(plain_random), list(traced_random))}


PARTS = {"fit": part_fit, "confirm": part_confirm, "predict": part_predict, "keras_loop": part_keras_loop,
         "cut": part_cut, "broken": part_broken, "unsaved": part_unsaved, "cnn": part_cnn, "loop": part_loop,
         "stock": part_stock}


def main(out: str, parts: list[str]) -> None:
    results = {}
    for name in parts or [p for p in PARTS if p not in ("loop", "stock")]:
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
    results["imported"] = sorted({m.split(".")[0] for m in sys.modules} & {"tensorflow", "tf_keras", "jax", "keras"})
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
