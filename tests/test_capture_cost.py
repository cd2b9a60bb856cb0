"""What each captured step costs, recorded by the capture beside its run (sidecar `cost`, `host_peaks`):
TensorFlow's op statistics per layer and phase, XLA's cost analysis on JAX, FlopCounterMode per layer on
torch, each set against counts worked out by hand (tests/cost_model.py); the CPU's measured peaks; the
model's state and the fit itself unchanged by the counting; a step that cannot be counted leaves the
capture as it was. TensorFlow runs here; JAX and torch in child processes (tests/cost_capture_run.py)
where TensorFlow (and on torch, JAX) cannot be imported."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import ROOT, child_results
from cost_model import BATCH, analytic, cnn, data

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import tftrace  # noqa: E402
from tftrace.api import analyze  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402

RUNNER = os.path.join(ROOT, "tests", "cost_capture_run.py")


def sidecar(run: str) -> dict:
    with open(os.path.join(run, "tftrace_run.json")) as f:
        return json.load(f)


def state(model) -> list[bytes]:
    variables = list(model.variables) + list(model.optimizer.variables) + list(model.metrics_variables)
    return [v.numpy().tobytes() for v in variables] + [repr(np.random.get_state()).encode()]


class Record(keras.callbacks.Callback):
    """The model's state as the fit ends, before and after TraceCallback's end hook (which counts)."""

    def on_train_end(self, logs=None):
        self.at_end = state(self.model)


def fit(model, callbacks, x=None, y=None, **kwargs):
    if x is None:
        x, y = data()
    np.random.seed(1)
    model.fit(x, y, batch_size=BATCH, epochs=1, validation_data=(x[:64], y[:64]), verbose=0, callbacks=callbacks,
              **kwargs)
    return model


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Keras 3 on TensorFlow (CPU): a fit with its validation pass, then a predict, through one callback."""
    log_dir = str(tmp_path_factory.mktemp("cost") / "logs")
    plain = state(fit(cnn(keras), []))
    before, after = Record(), Record()
    cb = tftrace.TraceCallback(log_dir)
    model = fit(cnn(keras), [before, cb, after])
    model.predict(data()[0], batch_size=BATCH, verbose=0, callbacks=[cb])
    runs = {sidecar(r)["label"]: r for r in cb.runs}
    assert set(runs) == {"fit_epoch1", "evaluate", "predict"}, runs
    return {"runs": runs, "plain": plain, "before": before.at_end, "after": after.at_end}


def within(value, expected, tolerance=0.05) -> bool:
    return abs(value - expected) <= tolerance * expected


def test_each_dense_and_conv2d_layers_flops_per_step_are_within_5_percent_of_the_analytic_count(captured):
    expected = analytic(bias=True)
    for label, step in (("fit_epoch1", "train"), ("evaluate", "test"), ("predict", "predict")):
        cost = sidecar(captured["runs"][label])["cost"]
        assert cost["step"] == step and cost["batch_size"] == BATCH and cost["batches_per_step"] == 1
        assert cost["batch_shapes"] == ([[BATCH, 12, 12, 3]] if step == "predict" else [[BATCH, 12, 12, 3], [BATCH]])
        assert cost["source"].startswith("TensorFlow's op statistics"), cost["source"]
        assert "analytic" not in cost and "partial" not in cost
        for name, (forward, backward) in expected.items():
            counted = cost["layers"][name]
            assert within(counted["forward"], forward), (label, name, counted, forward)
            if step == "train":  # TensorFlow prunes the first layer's input gradient: no one needs it
                assert within(counted["backward"], backward), (label, name, counted, backward)
                assert within(counted["forward"] + counted["backward"], forward + backward)
            else:
                assert counted["backward"] == 0, (label, name, counted)
        parts = sum(sum(v.values()) for v in cost["layers"].values()) + sum(cost.get("other", {}).values())
        assert cost["step_flops"] == pytest.approx(parts)
    train = sidecar(captured["runs"]["fit_epoch1"])["cost"]
    # Adam's update: a dozen elementwise ops over each weight; the loss's few ops per example.
    weights = sum(int(np.prod(w.shape)) for w in cnn(keras).trainable_weights)
    assert 5 * weights < train["other"]["optimizer"] < 30 * weights, train["other"]
    assert 0 < train["other"]["loss"] < 100 * BATCH


def test_the_host_peaks_are_measured_once_and_recorded_beside_every_run(captured):
    peaks = [sidecar(r)["host_peaks"] for r in captured["runs"].values()]
    assert all(p == peaks[0] for p in peaks)  # once a process
    (flops,) = peaks[0]["flops_per_s"].values()
    assert list(peaks[0]["flops_per_s"]) == ["float32"]
    assert 1e8 < flops < 1e14 and 1e8 < peaks[0]["bytes_per_s"] < 1e13, peaks[0]
    assert peaks[0]["how"].startswith("measured on this host: ") and "TensorFlow" in peaks[0]["how"]
    assert peaks[0]["threads"] >= 1


def test_counting_changes_nothing_the_fit_leaves(captured):
    assert captured["before"] == captured["after"]  # around TraceCallback's end hook, where it counts
    assert captured["plain"] == captured["after"]  # and as a fit without the callback


def test_the_runs_still_read_with_their_cost_recorded(captured):
    for run in captured["runs"].values():
        (report,) = analyze(run).runs
        assert [s.number for s in report.steps.steps] == sidecar(run)["steps"]


def test_a_tf_data_pipeline_with_an_open_batch_dimension_is_counted_on_keras_graph_with_its_shapes_fixed(tmp_path):
    """`.batch(16)` leaves the batch dimension open in the graph Keras traced: the copy fixes it; and
    two batches a call (steps_per_execution) make a step of twice the FLOPs, as the trace's markers do."""
    x, y = data()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).prefetch(2)
    assert dataset.element_spec[0].shape[0] is None
    model = cnn(keras)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=2)
    cb = tftrace.TraceCallback(str(tmp_path), evaluate_steps=None, predict_steps=None)
    model.fit(dataset, epochs=1, verbose=0, callbacks=[cb], shuffle=False)
    cost = sidecar(cb.runs[0])["cost"]
    assert "its shapes fixed for this batch" in cost["source"], cost["source"]
    assert cost["batch_size"] == BATCH and cost["batches_per_step"] == 2
    assert cost["batch_source"] == "the tf.data element spec of Keras' TFDatasetAdapter"
    for name, (forward, backward) in analytic(bias=True).items():
        assert within(cost["layers"][name]["forward"], 2 * forward), (name, cost["layers"][name])
        assert within(cost["layers"][name]["backward"], 2 * backward), (name, cost["layers"][name])


def test_tf_keras_steps_are_counted_on_a_fresh_trace_of_the_step(tmp_path):
    tfk = pytest.importorskip("tf_keras")  # not in the test extra: it pulls `tensorflow` over tensorflow-cpu
    tfk.utils.set_random_seed(0)
    model = tfk.Sequential([tfk.Input((12, 12, 3)), tfk.layers.Conv2D(8, 3, padding="same", name="conv_a"),
                            tfk.layers.Flatten(), tfk.layers.Dense(10, name="dense")])
    model.compile("sgd", tfk.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = data()
    cb = tftrace.TraceCallback(str(tmp_path), evaluate_steps=None)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[cb])
    model.predict(x, batch_size=BATCH, verbose=0, callbacks=[cb])
    conv = 2 * BATCH * 12 * 12 * 8 * 27 + BATCH * 12 * 12 * 8
    dense = 2 * BATCH * 12 * 12 * 8 * 10 + BATCH * 10
    for run, step in zip(cb.runs, ("train", "predict")):
        cost = sidecar(run)["cost"]
        assert cost["step"] == step and "the step traced again for this batch" in cost["source"], cost
        assert cost["batch_source"] == "the tf.data element spec of tf.keras' data handler"
        assert within(cost["layers"]["conv_a"]["forward"], conv) and within(cost["layers"]["dense"]["forward"], dense)
        if step == "train":
            assert within(cost["layers"]["dense"]["backward"], 2 * dense) and cost["other"]["optimizer"] > 0


def test_a_recurrent_layers_loop_is_counted_its_fixed_number_of_times(tmp_path):
    """Keras' LSTM runs a tf.while_loop over its 10 timesteps: its body counted 10 times (on a trace
    for the batch: the copy of Keras' graph cannot fix shapes past a loop)."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((10, 6))
    model = keras.Model(inputs, keras.layers.Dense(3, name="out")(keras.layers.LSTM(8, name="lstm")(inputs)))
    model.compile("adam", "mse")
    rng = np.random.default_rng(0)
    dataset = tf.data.Dataset.from_tensor_slices((rng.random((160, 10, 6), dtype=np.float32),
                                                  rng.random((160, 3), dtype=np.float32))).batch(BATCH)
    cb = tftrace.TraceCallback(str(tmp_path), evaluate_steps=None, predict_steps=None)
    model.fit(dataset, epochs=1, verbose=0, callbacks=[cb], shuffle=False)
    cost = sidecar(cb.runs[0])["cost"]
    assert "the step traced again for this batch" in cost["source"] and "analytic" not in cost, cost
    matmuls = BATCH * 10 * (2 * 4 * 8 * (6 + 8) + 4 * 8)  # 4 gates' matmuls and bias adds a timestep
    # ... and the gates' elementwise arithmetic besides, which TensorFlow counts too.
    assert matmuls <= cost["layers"]["lstm"]["forward"] <= 1.15 * matmuls, cost["layers"]["lstm"]
    assert 1.2 * matmuls <= cost["layers"]["lstm"]["backward"] <= 3 * matmuls, cost["layers"]["lstm"]


class NumpyScale(keras.layers.Layer):
    """Runs eagerly only: it reads its input back as NumPy (a graph cannot)."""

    def compute_output_shape(self, shape):
        return shape

    def call(self, x):
        return x * float(np.asarray(x.numpy()).std() > -1)


def _eager_fit(log_dir, countable: bool):
    keras.utils.set_random_seed(0)
    last = keras.layers.Dense(10, name="dense") if countable else NumpyScale(name="scale_2")
    model = keras.Sequential([keras.Input((12, 12, 3)), keras.layers.Flatten(), NumpyScale(name="scale"), last])
    model.compile("sgd", "mse", run_eagerly=True)
    x = data()[0]
    y = np.zeros((len(x), 10 if countable else 432), "float32")
    cb = tftrace.TraceCallback(str(log_dir), evaluate_steps=None, predict_steps=None) if log_dir else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[cb] if cb else [])
    said = [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]
    return model, cb, said


def test_a_step_that_cannot_be_traced_gets_analytic_counts_for_the_layers_that_have_them(tmp_path):
    plain, _cb, _said = _eager_fit(None, countable=True)
    model, cb, said = _eager_fit(tmp_path, countable=True)
    assert [w.numpy().tobytes() for w in model.weights] == [w.numpy().tobytes() for w in plain.weights]
    assert said == []
    cost = sidecar(cb.runs[0])["cost"]
    assert cost["analytic"] == ["dense"] and "could not be traced for counting" in cost["source"], cost
    assert cost["layers"]["dense"]["forward"] == 2 * BATCH * 432 * 10 + BATCH * 10
    assert analyze(cb.runs[0]).runs[0].steps.count >= 5


def test_a_step_nothing_can_count_leaves_the_cost_out_with_the_reason_and_one_warning(tmp_path):
    plain, _cb, _said = _eager_fit(None, countable=False)
    model, cb, said = _eager_fit(tmp_path, countable=False)
    assert len(said) == 1 and "could not be counted" in said[0], said
    side = sidecar(cb.runs[0])
    assert "cost" not in side and "could not be traced for counting" in side["cost_missing"]
    assert side["host_peaks"]["flops_per_s"]["float32"] > 0  # the host's figure does not depend on the step
    assert analyze(cb.runs[0]).runs[0].steps.count >= 5


def test_a_generator_whose_batch_size_is_not_known_leaves_the_cost_out_with_the_reason(tmp_path):
    x, y = data()

    def batches():
        while True:
            for i in range(0, len(x), BATCH):
                yield x[i:i + BATCH], y[i:i + BATCH]

    cb = tftrace.TraceCallback(str(tmp_path), evaluate_steps=None, predict_steps=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cnn(keras).fit(batches(), steps_per_epoch=10, epochs=1, verbose=0, callbacks=[cb])
    assert not [w for w in caught if issubclass(w.category, CaptureWarning)]
    side = sidecar(cb.runs[0])
    # Keras' spec of a generator's batches leaves the batch dimension open, and nothing fixes it.
    assert "cost" not in side and side["steps"], side
    assert side["cost_missing"] == \
        "the batch size is not fixed in the tf.data element spec of Keras' GeneratorDataAdapter"


def test_trace_with_a_model_counts_its_first_call_as_a_predict_step_after_the_window(tmp_path):
    model = cnn(keras)
    x = data()[0]
    with tftrace.trace(str(tmp_path), label="calls", model=model) as calls:
        for i in range(3):
            with tftrace.step("predict", i):
                model(x[i * BATCH:(i + 1) * BATCH], training=False)
    assert "call" not in vars(model)  # the watch is put back with the window
    cost = sidecar(calls.run_dir)["cost"]
    assert cost["step"] == "predict" and cost["batch_shapes"] == [[BATCH, 12, 12, 3]]
    assert "the block's first call of the model" in cost["source"]
    for name, (forward, _backward) in analytic(bias=True).items():
        assert within(cost["layers"][name]["forward"], forward) and cost["layers"][name]["backward"] == 0
    with tftrace.trace(str(tmp_path), label="training", model=model) as training:
        model(x[:BATCH], training=True)
    side = sidecar(training.run_dir)
    assert "cost" not in side and "training=True" in side["cost_missing"]
    with tftrace.trace(str(tmp_path), label="bare") as bare:
        tf.reduce_sum(tf.ones((4, 4)))
    side = sidecar(bare.run_dir)
    assert "cost" not in side and "cost_missing" not in side and side["host_peaks"]["flops_per_s"]["float32"] > 0


# -- JAX and torch, in child processes -------------------------------------------------------------------
def _child(backend: str, out: str, *parts: str) -> dict:
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"needs {backend}")
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
           "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, RUNNER, backend, out, *parts], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)
    return child_results(proc, out)


@pytest.fixture(scope="module")
def on_jax(tmp_path_factory):
    return _child("jax", str(tmp_path_factory.mktemp("cost_jax")))


@pytest.fixture(scope="module")
def on_torch(tmp_path_factory):
    return _child("torch", str(tmp_path_factory.mktemp("cost_torch")))


def test_jax_counts_the_whole_step_with_xlas_cost_analysis(on_jax):
    assert on_jax["imported"] == ["jax"]  # no TensorFlow for it
    runs = on_jax["counted"]["runs"]
    expected = analytic(bias=False, padding_aware=True)  # XLA counts a convolution's taps in bounds
    matmuls = {"train": sum(f + b for f, b in expected.values()), "test": sum(f for f, _b in expected.values())}
    matmuls["predict"] = matmuls["test"]
    # Beside the convolutions and matmuls: activations, dropout, the loss and Adam's update (a dozen
    # elementwise ops a weight), a few percent of an inference step and a sixth of a training step here.
    slack = {"train": 1.25, "test": 1.05, "predict": 1.05}
    for label, step in (("fit_epoch1", "train"), ("evaluate", "test"), ("predict", "predict")):
        cost = runs[label]["cost"]
        assert cost["step"] == step and cost["batch_size"] == BATCH and "layers" not in cost
        assert cost["source"].startswith("XLA's cost analysis of the trainer's jitted step"), cost["source"]
        assert matmuls[step] <= cost["step_flops"] <= slack[step] * matmuls[step], (label, cost, matmuls[step])
        assert runs[label]["host_peaks"]["flops_per_s"]["float32"] > 1e8 and "JAX" in runs[label]["host_peaks"]["how"]


def test_torch_counts_each_layers_forward_and_backward_as_flop_counter_mode_does(on_torch):
    assert on_torch["imported"] == ["torch"]  # neither TensorFlow nor JAX
    runs = on_torch["counted"]["runs"]
    expected = analytic(bias=False)  # FlopCounterMode counts the multiply-adds, not the bias adds
    for label, step in (("fit_epoch1", "train"), ("evaluate", "test"), ("predict", "predict")):
        cost = runs[label]["cost"]
        assert cost["step"] == step and cost["source"].startswith("torch.utils.flop_counter.FlopCounterMode")
        for name, (forward, backward) in expected.items():
            assert cost["layers"][name] == {"forward": forward, "backward": backward if step == "train" else 0.0}
        assert set(cost["layers"]) == set(expected)  # Flatten, Dropout: no matmul, no count
        assert cost["step_flops"] == sum(sum(v.values()) for v in cost["layers"].values())
        assert "PyTorch" in runs[label]["host_peaks"]["how"]


def test_torch_counts_one_example_times_the_batch_only_where_two_count_twice_one(on_torch):
    scaled = on_torch["counted"]["runs"]["fit_epoch1"]["cost"]["source"]
    assert f"counted on one example (two: twice one's) times {BATCH}" in scaled
    # A loss over every pair of examples: its matmul (BATCH x 10 by 10 x BATCH) grows with the batch's square.
    cost = on_torch["pairwise"]["runs"]["fit_epoch1"]["cost"]
    assert "counted on the batch" in cost["source"], cost["source"]
    pairs = 2 * BATCH * 10 * BATCH
    assert cost["other"]["loss"] == pairs + 2 * pairs  # its forward matmul, and its gradient's two
    for name, (forward, backward) in analytic(bias=False).items():
        assert cost["layers"][name] == {"forward": forward, "backward": backward}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_counting_changes_nothing_the_fit_leaves_on_jax_and_torch(backend, on_jax, on_torch):
    """Weights, optimizer and metric state, seed generators, NumPy's random state; on torch also each
    weight's gradient and torch's random state: as before TraceCallback's end hook, and as without it."""
    counted = (on_jax if backend == "jax" else on_torch)["counted"]
    assert counted["unchanged_by_count"] and counted["same_as_plain"] and counted["warnings"] == []


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_trace_with_a_model_counts_its_first_call_on_jax_and_torch(backend, on_jax, on_torch):
    part = (on_jax if backend == "jax" else on_torch)["trace"]
    assert part["outputs_equal"] and part["calls_put_back"] and part["warnings"] == []
    runs = part["runs"]
    cost = runs["calls"]["cost"]
    forward = {name: f for name, (f, _b) in analytic(bias=False, padding_aware=backend == "jax").items()}
    if backend == "jax":  # the whole forward pass: convolutions and matmuls, and a little elementwise work
        assert sum(forward.values()) <= cost["step_flops"] <= 1.05 * sum(forward.values()), cost
    else:
        assert {k: v["forward"] for k, v in cost["layers"].items()} == forward, cost
    assert cost["step"] == "predict" and cost["batch_size"] == BATCH
    assert runs["training"]["cost"] is None and "training=True" in runs["training"]["cost_missing"]
    assert runs["no_model"]["cost"] is None and runs["no_model"]["cost_missing"] is None
    assert all(r["host_peaks"]["flops_per_s"]["float32"] > 0 for r in runs.values())


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_step_the_counter_cannot_run_leaves_the_capture_and_the_fit_as_they_were(backend, on_jax, on_torch):
    part = (on_jax if backend == "jax" else on_torch)["uncountable"]
    (side,) = part["runs"].values()
    assert part["same_as_plain"] and side["steps"]
    assert side["cost"] is None and "could not be counted" in side["cost_missing"], side
    assert len(part["warnings"]) == 1 and "FLOPs could not be counted" in part["warnings"][0]
    assert side["host_peaks"]["flops_per_s"]["float32"] > 0
