"""Capture with real Keras: TraceCallback on fit/evaluate/predict, tftrace.trace(), failure cases."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import ROOT
from tbserver import _get, _stop, _wait_until, free_port

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import tftrace  # noqa: E402
from tftrace.api import analyze  # noqa: E402
from tftrace.render import render  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402


def small_model(name="small"):
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, activation="relu", name="conv"),
                              keras.layers.Flatten(name="flatten"), keras.layers.Dense(5, name="out")], name=name)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def data(n=96):
    rng = np.random.default_rng(0)
    return rng.random((n, 8, 8, 3)).astype("float32"), rng.integers(0, 5, n)


def runs_in(log_dir):
    return sorted(glob.glob(os.path.join(log_dir, "plugins", "profile", "*")))


def capture_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [w for w in caught if issubclass(w.category, CaptureWarning)]


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """One fit (with validation), one evaluate and one predict, all through one callback."""
    log_dir = str(tmp_path_factory.mktemp("capture") / "logs")
    x, y = data()
    model = small_model()
    cb = tftrace.TraceCallback(log_dir)
    model.fit(x, y, batch_size=8, epochs=2, validation_data=(x[:32], y[:32]), verbose=0, callbacks=[cb])
    model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[cb])
    model.predict(x, batch_size=8, verbose=0, callbacks=[cb])
    return log_dir, cb


def test_each_window_is_its_own_named_run_with_a_trace_and_a_sidecar(captured):
    log_dir, cb = captured
    names = [os.path.basename(r) for r in runs_in(log_dir)]
    assert sorted(os.path.basename(r) for r in cb.runs) == names
    assert [n for n in names if n.endswith("_fit_epoch1")] and [n for n in names if n.endswith("_predict")]
    assert len([n for n in names if n.endswith("_evaluate")]) >= 1
    assert not [n for n in names if "epoch2" in n]  # default: the first epoch only
    for run in runs_in(log_dir):
        assert glob.glob(os.path.join(run, "*.xplane.pb"))
        meta = json.load(open(os.path.join(run, "tftrace_run.json")))
        assert meta["layer_names"] == ["conv", "flatten", "out"]
        assert meta["layer_params"]["out"] == 4 * 6 * 6 * 5 + 5
        assert meta["tensorflow_version"] == tf.__version__ and meta["keras_version"] == keras.__version__
        assert meta["mode"] in ("fit", "evaluate", "predict") and meta["steps"]


def test_every_captured_step_is_found_with_its_number(captured):
    log_dir, _cb = captured
    for run in runs_in(log_dir):
        meta = json.load(open(os.path.join(run, "tftrace_run.json")))
        report = analyze(run).runs[0]
        marker = {"fit": "train", "evaluate": "test", "predict": "predict"}[meta["mode"]]
        assert report.steps.source == f"marker '{marker}'"
        assert [s.number for s in report.steps.steps] == meta["steps"]
        assert report.mode == {"fit": "train", "evaluate": "evaluate", "predict": "predict"}[meta["mode"]]
        assert {r.layer for r in report.layers} <= {"conv", "flatten", "out"}


def test_a_default_window_of_short_steps_holds_more_than_five_and_a_chosen_one_exactly_its_own(captured, tmp_path):
    """The steps after the profiler starts run slower: five of a few ms would time its start-up. A
    default window goes on until 100 ms, here up to half of each call's 12 steps."""
    log_dir, _cb = captured
    sidecars = [json.load(open(os.path.join(r, "tftrace_run.json"))) for r in runs_in(log_dir)]
    steps = {meta["label"]: meta["steps"] for meta in sidecars}
    assert steps["fit_epoch1"] == [2, 3, 4, 5, 6, 7], steps
    assert steps["predict"] == [2, 3, 4, 5, 6, 7], steps
    chosen = tftrace.TraceCallback(str(tmp_path), fit_steps=(2, 4), evaluate_steps=None, predict_steps=None)
    x, y = data()
    small_model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[chosen])
    assert json.load(open(os.path.join(chosen.runs[0], "tftrace_run.json")))["steps"] == [2, 3, 4]


def test_xprof_measures_steps_on_a_trace_callback_training_trace(captured, tmp_path):
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data
    log_dir, _cb = captured
    fit_run = [r for r in runs_in(log_dir) if r.endswith("_fit_epoch1")][0]
    src = glob.glob(os.path.join(fit_run, "*.xplane.pb"))[0]
    copy = tmp_path / os.path.basename(src)
    shutil.copy(src, copy)
    data_json, _ = xspace_to_tool_data([str(copy)], "input_pipeline_analyzer", {})
    props = json.loads(data_json)[1]["p"]
    assert "No step time measured" not in json.dumps(props)
    assert "input-bound" in props["input_conclusion"]
    assert float(props["steptime_ms_average"]) > 0


def test_tensorboard_profile_plugin_lists_the_captured_runs(captured, tmp_path):
    log_dir, _cb = captured
    port = free_port()
    log_path = str(tmp_path / "tb.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", log_dir, "--host",
                                 "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                                cwd=ROOT, start_new_session=True)
    try:
        listed = _wait_until(lambda: _get(port, "/data/plugin/profile/runs"), proc, log_path, "profile runs")
        assert sorted(listed) == sorted(os.path.basename(r) for r in runs_in(log_dir))
    finally:
        _stop(proc)


def test_trace_context_manager_and_step_mark_any_loop(tmp_path):
    model = small_model("loop")
    x, _y = data(12)
    with tftrace.trace(str(tmp_path), label="loop", model=model) as t:
        for i in range(4):
            with tftrace.step("predict", i):
                with tftrace.region("prepare"):
                    batch = x[i:i + 3] * 1.0
                model(batch, training=False)
    report = analyze(t.run_dir).runs[0]
    assert "prepare" in json.load(open(os.path.join(t.run_dir, "tftrace_run.json")))["regions"]
    assert os.path.basename(t.run_dir).endswith("_loop")
    assert [s.number for s in report.steps.steps] == [0, 1, 2, 3] and report.eager

    @tftrace.trace(str(tmp_path / "deco"), label="deco")
    def work():
        return model.predict(x, verbose=0)
    work()
    assert len(runs_in(str(tmp_path / "deco"))) == 1


def test_a_short_fit_still_gets_a_window(tmp_path):
    x, y = data(24)
    cb = tftrace.TraceCallback(str(tmp_path))
    small_model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])  # 3 steps
    assert len(cb.runs) == 1 and cb.runs[0].endswith("_fit_epoch1")
    assert analyze(cb.runs[0]).runs[0].steps.count >= 1


def test_steps_per_execution_above_one_is_captured(tmp_path):
    x, y = data(192)
    model = small_model()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=3)
    cb = tftrace.TraceCallback(str(tmp_path), fit_steps=(3, 8), evaluate_steps=None, predict_steps=None)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    report = analyze(cb.runs[0]).runs[0]
    assert report.steps.count >= 2 and all(s.number % 3 == 0 for s in report.steps.steps)
    # The steps after the window count as its markers do, a call of 3 batches a step: batches 9-23
    # are 5 calls, the last one's end hook ends the stretch, and 3 turns lie between the others'.
    untraced = json.load(open(os.path.join(cb.runs[0], "tftrace_run.json")))["untraced"]
    assert (untraced["steps"], untraced["turns"]) == (5, 3), untraced


def test_a_default_window_with_several_steps_a_call_skips_the_call_that_compiles(tmp_path):
    """Calls of 3 steps: batches 0-2 overlap the default window (from step 2) but trace and compile;
    the window opens at the first call past its warm-up, and its limits count steps (half of 12)."""
    x, y = data(96)
    model = small_model()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=3)
    cb = tftrace.TraceCallback(str(tmp_path), evaluate_steps=None, predict_steps=None)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    assert json.load(open(os.path.join(cb.runs[0], "tftrace_run.json")))["steps"] == [3, 6]


# -- it never breaks the user's training ---------------------------------------------------------
def _fit_completes(cb, epochs=1, extra=()):
    x, y = data(64)
    history = small_model().fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=[cb, *extra])
    assert len(history.history["loss"]) == epochs
    return history


def test_another_profiler_already_running_warns_once_and_training_goes_on(tmp_path):
    tf.profiler.experimental.start(str(tmp_path / "theirs"))
    try:
        cb = tftrace.TraceCallback(str(tmp_path / "ours"))
        _, caught = capture_warnings(lambda: _fit_completes(cb, epochs=2))
        assert len(caught) == 1 and "could not start the profiler" in str(caught[0].message)
        assert cb.runs == []
    finally:
        tf.profiler.experimental.stop()  # the other session is still intact and stops normally


def test_the_stock_tensorboard_callback_profiling_too_does_not_break_training(tmp_path):
    stock = keras.callbacks.TensorBoard(str(tmp_path / "stock"), profile_batch=(2, 4))
    cb = tftrace.TraceCallback(str(tmp_path / "ours"), fit_steps=(1, 5))
    _, caught = capture_warnings(lambda: _fit_completes(cb, extra=(stock,)))
    assert len(caught) <= 1
    tf.profiler.experimental.start(str(tmp_path / "after"))  # nothing left running
    tf.profiler.experimental.stop()


def test_unwritable_log_dir_warns_once_and_training_goes_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the log dir should go")
    cb = tftrace.TraceCallback(str(blocker / "logs"))
    _, caught = capture_warnings(lambda: _fit_completes(cb, epochs=2))
    assert len(caught) == 1 and "cannot write" in str(caught[0].message)
    assert blocker.read_text() == "a file where the log dir should go"


def test_training_that_raises_inside_a_window_keeps_the_capture_and_stops_the_profiler(tmp_path):
    x, y = data(64)

    def batches():
        for i in range(8):
            if i == 4:
                raise RuntimeError("bad batch")
            yield x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]

    cb = tftrace.TraceCallback(str(tmp_path), fit_steps=(2, 6))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Exception):
            small_model().fit(batches(), epochs=1, steps_per_epoch=8, verbose=0, callbacks=[cb])
    mine = [w for w in caught if issubclass(w.category, CaptureWarning)]
    assert len(mine) == 1 and "raised" in str(mine[0].message)
    assert len(cb.runs) == 1 and glob.glob(os.path.join(cb.runs[0], "*.xplane.pb"))
    tf.profiler.experimental.start(str(tmp_path / "after"))  # the profiler was stopped
    tf.profiler.experimental.stop()


def test_a_window_beyond_the_steps_that_run_warns_once(tmp_path):
    cb = tftrace.TraceCallback(str(tmp_path), fit_steps=(50, 60), evaluate_steps=None, predict_steps=None)
    _, caught = capture_warnings(lambda: _fit_completes(cb))
    assert len(caught) == 1 and "beyond the steps" in str(caught[0].message)
    assert cb.runs == []


def test_a_chosen_window_cut_by_the_epoch_end_keeps_what_it_captured(tmp_path):
    cb = tftrace.TraceCallback(str(tmp_path), fit_steps=(5, 20), evaluate_steps=None, predict_steps=None)
    _, caught = capture_warnings(lambda: _fit_completes(cb))  # 8 steps per epoch
    assert len(caught) == 1 and len(cb.runs) == 1
    assert [s.number for s in analyze(cb.runs[0]).runs[0].steps.steps] == [5, 6, 7]


def test_stock_keras3_tensorboard_traces_get_steps_where_xprof_finds_none(tmp_path):
    """keras.callbacks.TensorBoard(profile_batch=...) marks `Profiled batch` without `_r`:
    XProf reports "No step time measured"; tftrace measures each profiled batch."""
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data
    x, y = data(96)
    stock = keras.callbacks.TensorBoard(str(tmp_path / "logs"), profile_batch=(2, 5))
    small_model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[stock])
    (trace_file,) = glob.glob(str(tmp_path / "logs" / "train" / "plugins" / "profile" / "*" / "*.xplane.pb"))
    run = analyze(str(tmp_path / "logs")).runs[0]
    assert run.name.startswith("train/plugins/profile/")
    assert run.steps.count == 4 and "Profiled batch" in run.steps.source
    assert run.verdict.bound != "unknown" and run.breakdown.compute > 0
    copy = tmp_path / "copy.xplane.pb"
    shutil.copy(trace_file, copy)
    props = json.loads(xspace_to_tool_data([str(copy)], "input_pipeline_analyzer", {})[0])[1]["p"]
    assert "No step time measured" in props["input_conclusion"]


def test_unmarked_predict_loops_fall_back_to_step_functions_or_the_window(tmp_path):
    model = small_model("unmarked")
    x, _y = data(16)
    model.predict(x[:4], verbose=0)
    with tftrace.trace(str(tmp_path / "predict")) as t:
        for i in range(4):
            model.predict(x[i * 4:(i + 1) * 4], verbose=0)
    run = analyze(t.run_dir).runs[0]
    assert run.steps.source.startswith("function '") and run.steps.count == 4 and run.steps.note
    with tftrace.trace(str(tmp_path / "eager")) as t:
        for i in range(4):
            model(x[i * 4:(i + 1) * 4], training=False)
    run = analyze(t.run_dir).runs[0]
    assert run.steps.count == 0 and "window" in run.steps.source and run.eager
    assert run.breakdown.compute > 0 and run.verdict.bound in ("compute", "host_overhead")


def test_no_finding_blames_the_capture_and_one_note_says_what_it_cost(captured):
    """A plain fit, evaluate and predict with no per-batch callback of the user's: no finding names
    TraceCallback's hooks, the profiler or a sync of the capture's; its own time is one note."""
    log_dir, _cb = captured
    for run in runs_in(log_dir):
        report = analyze(run).to_dict()["runs"][0]
        # What each finding says the cause is (its fix may well say "capture with TraceCallback").
        said = " ".join(b["title"] + " " + b["evidence"] for b in report["bottlenecks"]).lower()
        for blamed in ("tracecallback", "tftrace callback", "profiler", "logs back"):
            assert blamed not in said, (run, blamed, said)
        (note,) = [n for n in report["notes"] if n.startswith("the capture's own time")]
        assert "stopping it" in note and "owned by the profiler" in note
        meta = json.load(open(os.path.join(run, "tftrace_run.json")))
        cost = meta["capture_cost"]
        assert cost["stop_ms"] > 0 and "paced" not in cost  # TF: no pacing
        # tftrace's own hooks inside the steps, timed as they ran: microseconds a step.
        assert 1 <= cost["hooks_steps"] <= len(meta["steps"]) and 0 < cost["hooks_ms"] / cost["hooks_steps"] < 0.5, cost


def test_the_steps_after_each_window_are_timed_untraced_and_set_against_its_steps(captured):
    """After a window the rest of its call's stretch (to the epoch's last batch, before validation) is
    timed with no profiler running, a clock reading a batch, into the sidecar; the report compares."""
    log_dir, _cb = captured
    timed = {}
    for run in runs_in(log_dir):
        meta = json.load(open(os.path.join(run, "tftrace_run.json")))
        if "untraced" not in meta:  # fit's validation pass: its length is not known as it runs
            assert meta["label"] == "evaluate", run
            continue
        untraced, last = meta["untraced"], meta["steps"][-1]
        assert untraced["steps"] == 96 // 8 - last - 1 and untraced["ms_per_step"] > 0, (run, untraced)
        # Each turn of the loop from one end hook to the next, their median beside the mean.
        assert untraced["turns"] == untraced["steps"] - 2, untraced
        assert 0 < untraced["median_turn_ms"] < 10 * untraced["ms_per_step"], untraced
        report = analyze(run).to_dict()["runs"][0]
        steps = report["steps"]
        assert steps["untraced_steps"] == untraced["steps"]
        assert steps["untraced_ms"] == pytest.approx(untraced["ms_per_step"], abs=1e-3)
        # The same model's steps either side of the profiler stopping: not 5x apart (a stretch that
        # took in the validation pass's set-up, or the stop itself, would be).
        turns = [a["dur_ms"] + b["idle_ms"] for a, b in zip(steps["steps"], steps["steps"][1:])]
        assert 0.2 <= untraced["ms_per_step"] / (sum(turns) / len(turns)) <= 5, (untraced, turns)
        (note,) = [n for n in report["notes"] if n.startswith("untraced, ")]
        assert f"{untraced['steps']} steps after the window" in note
        timed[meta["label"]] = untraced["steps"]
        for fmt, said in (("markdown", "untraced after the window"), ("html", f"the {untraced['steps']} after the window")):
            assert said in render(analyze(run), fmt), fmt
    assert set(timed) == {"fit_epoch1", "predict"}, timed


def test_tf_keras_fit_and_predict_where_installed(tmp_path):
    tfk = pytest.importorskip("tf_keras")  # not in the test extra: it pulls `tensorflow` over tensorflow-cpu
    model = tfk.Sequential([tfk.Input((8, 8, 3)), tfk.layers.Conv2D(4, 3, name="conv"), tfk.layers.Flatten(),
                            tfk.layers.Dense(5, name="out")])
    model.compile("sgd", tfk.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = data(96)
    cb = tftrace.TraceCallback(str(tmp_path))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    model.predict(x, batch_size=8, verbose=0, callbacks=[cb])
    reports = {os.path.basename(r): analyze(r).runs[0] for r in cb.runs}
    assert len(reports) == 2
    assert cb._supports_tf_logs  # tf.keras keeps the batch logs as tensors for it: no sync per batch
    for name, run in reports.items():
        # a default window: steps 2-6 at least, short steps until 100 ms, at most half the 12 steps
        assert 5 <= run.steps.count <= 6 and run.steps.source in ("marker 'train'", "marker 'predict'")
        assert {r.layer for r in run.layers} <= {"conv", "out"}


def test_a_worker_of_a_multi_worker_cluster_is_warned_once_and_still_captured(tmp_path, monkeypatch):
    from tftrace.capture import session
    monkeypatch.setattr(session, "_multi_worker_warned", False)
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}')

    def capture(name):
        with tftrace.trace(str(tmp_path / name)) as t:
            tf.reduce_sum(tf.ones((4, 4)))
        return t.run_dir
    first, said = capture_warnings(lambda: capture("one"))
    assert first and len(said) == 1 and "multi-worker cluster" in str(said[0].message)
    second, said = capture_warnings(lambda: capture("two"))
    assert second and not said  # once per process
    monkeypatch.setattr(session, "_multi_worker_warned", False)
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}')
    assert not capture_warnings(lambda: capture("single"))[1]  # one worker: nothing to say
