"""Keras 3 on JAX on the CPU: layers, phases, the loss and the optimizer named from the trace's HLO
metadata (XLA:CPU's thunks carry no scope path of their own), on a fit captured the plain way
(`jax.profiler.start_trace` / `stop_trace`), captured and analysed with TensorFlow unimportable."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

if importlib.util.find_spec("jax") is None or importlib.util.find_spec("keras") is None:
    pytest.skip("needs jax and keras (pip install tftrace[jax])", allow_module_level=True)

_BLOCK = """
import sys
class _NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras"):
            raise ImportError(f"No module named {name!r} (blocked by the test)")
sys.meta_path.insert(0, _NoTensorFlow())
"""
_CAPTURE = _BLOCK + """
import os, numpy as np, keras, jax
out = sys.argv[1]
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((32, 32, 3)),
                          keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="stem"),
                          keras.layers.MaxPooling2D(name="pool"),
                          keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="body"),
                          keras.layers.GlobalAveragePooling2D(name="gap"),
                          keras.layers.Dense(10, name="head")], name="cnn")
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = np.random.rand(256, 32, 32, 3).astype("float32")
y = np.random.randint(0, 10, 256)
model.fit(x, y, batch_size=32, epochs=1, verbose=0)            # compiles outside the capture
jax.profiler.start_trace(out)
model.fit(x, y, batch_size=32, epochs=1, verbose=0)
jax.profiler.stop_trace()
"""
_ANALYSE = _BLOCK + """
import json, tftrace
run = tftrace.analyze(sys.argv[1]).runs[0]
print(json.dumps({"layers": [l.layer for l in run.layers],
                  "phases": sorted({(o.layer, o.phase) for o in run.ops if o.layer}),
                  "categories": {c.category: c.share for c in run.categories},
                  "steps": run.steps.count,
                  "imported": sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "jax", "keras"))}))
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    logs = str(tmp_path_factory.mktemp("keras_jax_cpu"))
    proc = _run(_CAPTURE, logs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run(_ANALYSE, logs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_analysis_imports_no_framework(report):
    assert report["imported"] == []


def test_every_layer_with_compute_is_named_from_the_hlo(report):
    assert {"stem", "body", "pool", "head"} <= set(report["layers"]), report["layers"]


def test_forward_and_backward_phases_of_the_convolutions(report):
    phases = {tuple(p) for p in report["phases"]}
    for layer in ("stem", "body"):
        assert (layer, "forward") in phases and (layer, "backward") in phases, phases
    assert ("pool", "backward") in phases  # max-pool's gradient, which XLA expands without a scope


def test_categories_come_from_the_primitives_not_the_fusion_names(report):
    cats = report["categories"]
    # XLA:CPU runs convolutions as `ynn_fusion`s: their primitive says convolution, not matmul.
    # (max-pool's gradient holds about half the op time on XLA:CPU, so convolutions 0.2 give or take)
    assert cats.get("convolution", 0) > 0.15 and cats.get("convolution", 0) > cats.get("matmul", 0), cats
    assert "optimizer" in cats and "loss" in cats, cats
