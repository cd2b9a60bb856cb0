"""Measured what-ifs: with confirm=True, TraceCallback applies the fix of each top finding that can
be applied to a copy of the model (here: compiling without a planted metric), times it, and the
report shows the measured step beside the projection; a fix measured to gain nothing ranks below
the fixes that pay; the user's model and training are untouched. How near a measured fix comes to
its twin timed without tftrace is measured in benchmarks/bench_whatif.py (a timing, not a test),
and checked on the zoo's committed captures (tests/test_zoo_projections.py)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from conftest import sample

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import tftrace  # noqa: E402

pytestmark = pytest.mark.slow


def auc_model(metric: bool = True):
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256, activation="relu", name="h1"),
                              keras.layers.Dense(1, activation="sigmoid", name="out")])
    metrics = [keras.metrics.AUC(num_thresholds=60000, name="auc")] if metric else []
    model.compile("adam", "binary_crossentropy", metrics=metrics)
    return model


def data(n=2048, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 64), dtype=np.float32), (rng.random((n, 1)) > 0.5).astype(np.float32)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A fit whose AUC metric (60,000 thresholds) costs most of each step, captured with confirm."""
    log_dir = tmp_path_factory.mktemp("whatif")
    keras.utils.set_random_seed(0)
    model = auc_model()
    x, y = data()
    cb = tftrace.TraceCallback(str(log_dir), fit_steps=(3, 10), evaluate_steps=None, predict_steps=None, confirm=True)
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, callbacks=[cb])
    return log_dir, x[:64], y[:64]


def test_the_planted_metric_is_removed_from_a_copy_and_timed(planted):
    log_dir, x, y = planted
    run = tftrace.analyze(str(log_dir)).runs[0]
    exp = json.load(open(next(log_dir.rglob("tftrace_experiment.json"))))
    timed = {w["id"]: w for w in exp["whatifs"]}
    assert "metric/auc" in timed and "error" not in timed["metric/auc"], exp["whatifs"]
    w = timed["metric/auc"]
    assert w["fixed_ms"] < w["baseline_ms"]
    metric = next(b for b in run.bottlenecks if b.id == "metric/auc")
    assert metric.measured_step_ps is not None and metric.measured_step_ps < metric.step_ps
    from tftrace.render import render
    text = " ".join(render(tftrace.analyze(str(log_dir)), "text").split())  # wrapped to the terminal's width
    assert "measured with the fix applied" in text


def test_a_fix_measured_to_gain_nothing_ranks_below_the_fixes_that_pay(tmp_path):
    """The float64 zoo trace: its lead finding projects a gain; confirm measured none (a what-if
    written beside a copy of the run), so another finding leads and the measured one drops."""
    run_dir = tmp_path / "run"
    shutil.copytree(sample("zoo", "float64"), run_dir)
    before = tftrace.analyze(str(run_dir)).runs[0].bottlenecks
    lead = before[0]
    assert lead.projection_basis != "none" and lead.step_if_removed_ps < lead.step_ps, lead
    experiment = {"kind": "step", "mode": "fit", "batches": 8, "skipped": [], "error": "",
                  "whatifs": [{"id": lead.id, "fix": "its fix", "baseline_ms": 12.0, "fixed_ms": 12.3, "steps": 8}]}
    folder = next(p.parent for p in run_dir.rglob("*.xplane.pb"))
    (folder / "tftrace_experiment.json").write_text(json.dumps(experiment))
    after = tftrace.analyze(str(run_dir)).runs[0].bottlenecks
    measured = next(b for b in after if b.id == lead.id)
    assert measured.measured_step_ps == measured.step_ps  # cost more: saves nothing
    assert after[0].id != lead.id and after.index(measured) > 0


def test_training_is_untouched_by_the_what_ifs(tmp_path):
    """The same fit with and without confirm: the same history and weights, bit for bit, although
    copies of the model were built, compiled and trained in between."""
    def fit(confirm: bool, folder):
        keras.utils.set_random_seed(7)
        model = auc_model()
        x, y = data(640, seed=1)
        cb = tftrace.TraceCallback(str(folder), fit_steps=(2, 6), evaluate_steps=None, predict_steps=None,
                                   confirm=confirm)
        hist = model.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[cb]).history
        return hist, [w.tobytes() for w in model.get_weights()], int(model.optimizer.iterations.numpy())

    plain, confirmed = fit(False, tmp_path / "a"), fit(True, tmp_path / "b")
    exp = json.load(open(next((tmp_path / "b").rglob("tftrace_experiment.json"))))
    assert exp.get("whatifs"), "no what-if ran: the test would show nothing"
    assert confirmed == plain


def test_a_custom_metric_and_loss_never_registered_still_copy():
    """A metric class and a loss function the user never registered for deserialising (most
    custom ones): the copies find them in the live model, so the fix is timed, not an error."""
    from tftrace.capture import timed_fixes

    class Spread(keras.metrics.Metric):  # unregistered, as in most user code
        def __init__(self, name="spread", **kw):
            super().__init__(name=name, **kw)
            self.total = self.add_variable((), initializer="zeros", name="total")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(keras.ops.std(y_pred))

        def result(self):
            return self.total

    def squared(y_true, y_pred):
        return keras.ops.mean((y_true - y_pred) ** 2)

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, name="h")])
    model.compile("adam", squared, metrics=[Spread()])
    x, y = data(64)
    model.fit(x[:, :8], np.repeat(y, 4, axis=1), batch_size=16, epochs=1, verbose=0)
    plan = {"id": "metric/spread", "fix": "compiled without the metric spread", "compile": {"metrics": "drop:spread"}}
    out = timed_fixes.run(model, (x[:16, :8], np.repeat(y[:16], 4, axis=1)), [plan], 4)
    assert len(out) == 1 and "error" not in out[0] and out[0]["fixed_ms"] > 0, out


@pytest.mark.parametrize("functional", [False, True])
def test_a_layer_at_half_its_width_is_timed_and_the_output_layer_is_not(functional):
    """The layer's fix (half its units) on a copy: the layer after it is built for the new width
    (no saved build shapes); the layer that makes the model's output keeps its width, the task's."""
    from tftrace.capture import timed_fixes
    if functional:
        inputs = keras.Input((64,))
        outputs = keras.layers.Dense(8, name="out")(keras.layers.Dense(256, name="h1")(inputs))
        model = keras.Model(inputs, outputs)
    else:
        model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256, name="h1"),
                                  keras.layers.Dense(8, name="out")])
    model.compile("adam", "mse")
    x, y = data(64)
    model.fit(x, np.repeat(y, 8, axis=1), batch_size=16, epochs=1, verbose=0)
    assert timed_fixes._narrower(model, "out") is None
    plan = {**timed_fixes._narrower(model, "h1"), "id": "layer/h1"}
    out = timed_fixes.run(model, (x[:16], np.repeat(y[:16], 8, axis=1)), [plan], 4)
    assert "error" not in out[0] and "256 -> 128" in out[0]["fix"], out
