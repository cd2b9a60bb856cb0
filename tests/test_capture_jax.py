"""Capture on Keras 3's JAX backend and raw JAX loops, with TensorFlow unimportable: TraceCallback on fit,
evaluate and predict, tftrace.trace() around a jitted loop, confirm, interrupts, many captures in a row.

The captures run once, in a child process (tests/jax_capture_run.py: Keras on JAX, on the CPU, with a
finder that refuses `import tensorflow`); the tests read what it wrote and analyse it here.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest

from conftest import ROOT, child_results

if importlib.util.find_spec("jax") is None or importlib.util.find_spec("keras") is None:
    pytest.skip("needs jax and keras (pip install tftrace[jax])", allow_module_level=True)

from tftrace.api import analyze  # noqa: E402
from tftrace.capture import backend  # noqa: E402

SCRIPT = os.path.join(ROOT, "tests", "jax_capture_run.py")
_ENV = {"KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}


def _child(*args: str, env: dict | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, SCRIPT, *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, **_ENV, **(env or {})})


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("jax_capture"))
    return out, child_results(_child(out), out)


def _runs(results, part: str) -> list[str]:
    return results[part]["runs"]


def _sidecar(run: str) -> dict:
    with open(os.path.join(run, "tftrace_run.json")) as f:
        return json.load(f)


def _names(run: str) -> set[str]:
    from tftrace.read.loader import load
    trace = load(run)
    return {trace.names[i] for i in set(trace.events["name"].tolist())}


def test_no_tensorflow_was_imported_and_no_capture_warned(captured):
    _out, results = captured
    assert results["tensorflow_imported"] == []
    for part in ("fit", "plain", "predict", "data", "loop", "tracer_off", "cycles"):
        assert results[part]["warnings"] == [], (part, results[part]["warnings"])


def test_fit_with_the_callback_and_confirm_leaves_the_same_weights_as_without(captured):
    _out, results = captured
    assert results["fit"]["weights_equal"] and results["fit"]["n_state"] > 6  # weights and Adam's slots
    assert results["predict"]["weights_equal"]


def test_each_window_is_a_run_whose_marked_steps_and_mode_the_analysis_finds(captured):
    _out, results = captured
    fit, evaluate = _runs(results, "fit")
    assert fit.endswith("_fit_epoch1") and evaluate.endswith("_evaluate")  # fit's validation pass too
    expected = {fit: "train", evaluate: "evaluate", _runs(results, "predict")[0]: "predict",
                _runs(results, "loop")[0]: "train"}
    for run, mode in expected.items():
        assert glob.glob(os.path.join(run, "*.xplane.pb"))
        report = analyze(run).to_dict()["runs"][0]
        assert report["steps"]["source"].startswith("marker"), (run, report["steps"]["source"])
        assert report["steps"]["count"] == len(_sidecar(run)["steps"]) > 0
        assert report["mode"] == mode
        assert report["verdict"]["bound"] in ("input", "compute", "host_overhead", "idle")
        assert report["verdict"]["text"]


def test_a_plain_fit_keeps_keras_async_dispatch_and_no_finding_blames_the_capture(captured):
    """Keras 3 turns its asynchronous dispatch of end hooks off for a whole fit when one callback
    overrides a batch-end hook; TraceCallback does not, so the host never waits for each step's logs
    on its account, and the report names no sync, hook or profiler work the capture caused."""
    _out, results = captured
    plain = results["plain"]
    assert plain["async"] == {"train": True, "test": True}
    assert plain["weights_equal"]
    fit = plain["runs"][0]
    report = analyze(fit).to_dict()["runs"][0]
    # A default window: from step 2, at least five (short ones: until 100 ms, at most half the epoch).
    marked = _sidecar(fit)["steps"]
    assert report["steps"]["count"] == len(marked) >= 5 and marked == list(range(2, 2 + len(marked))), marked
    # Work dispatched before the window is waited for before the trace starts (else its first steps
    # run that backlog), and the window's own before it stops; both the profiler's, in its cost.
    cost = _sidecar(fit)["capture_cost"]
    assert cost["paced"] and cost["start_drain_ms"] >= 0 and cost["drain_ms"] >= 0, cost
    said = " ".join(b["title"] + " " + b["evidence"] for b in report["bottlenecks"]).lower()
    for blamed in ("convert_to_numpy", "logs back", "profiler", "tftrace", "traincallback", "tracecallback"):
        assert blamed not in said, (blamed, said)


def test_the_profilers_own_time_in_a_plain_fits_steps_is_left_out_of_the_steps_judged(captured):
    """A tiny model's sub-ms steps on XLA:CPU: the op events the profiler records for each thunk,
    and tftrace's own hooks (timed by the capture), are the profiler's: each step judged is the
    traced one less them, the owners name them, and a note for each says what it cost."""
    import numpy as np
    from tftrace.analysis.profiler_cost import HOOKS, OP_EVENTS, PS_PER_OP_EVENT, SAMPLER
    from tftrace.api import explore
    _out, results = captured
    fit = results["plain"]["runs"][0]
    cost = _sidecar(fit)["capture_cost"]
    assert cost["hooks_steps"] >= 5 and 0 < cost["hooks_ms"] / cost["hooks_steps"] < 0.5, cost
    a = explore(fit)
    own, tl, trace = a.profiler, a.timeline, a.trace
    sources = {s.owner: s for s in own.sources}
    # The Python tracer is off by default; the sampler's ticks are named where they reach 1% of the steps.
    assert set(sources) - {SAMPLER} == {OP_EVENTS, HOOKS}, sources
    hooks, per = sources[HOOKS].step_ps, round(cost["hooks_ms"] * 1e9 / cost["hooks_steps"])
    # Each step's share, unless the step's host overhead left less room beside the op events' estimate.
    room = tl.overhead - sources[OP_EVENTS].step_ps
    assert ((hooks == per) | (hooks == np.maximum(room, 0))).all() and (hooks <= tl.overhead).all(), (hooks, per, room)
    starts = trace.events["start_ps"][np.flatnonzero(trace.named([c for c, op in trace.ops.items() if op.kind == "xla"]))]
    events = np.array([((starts >= s) & (starts < s + d)).sum() for s, d in zip(tl.start, tl.dur)])
    assert events.mean() >= 5 and (sources[OP_EVENTS].step_ps <= events * PS_PER_OP_EVENT).all(), events
    report = a.report
    assert report.steps.mean_less_profiler_ps == pytest.approx(report.steps.mean_ps - own.step_ps.mean(), abs=2)
    assert {o.owner for o in report.owners} >= {f"Profiler {OP_EVENTS}", f"Profiler {HOOKS}"}
    for owner in (OP_EVENTS, HOOKS):
        assert any(n.startswith(f"{owner}: ~") and "left out of the steps judged" in n for n in report.notes), report.notes


def test_paced_steps_hold_all_the_device_work_of_the_window(captured):
    """Paced, each marked step holds the device work of the one before it; the last waits for its
    own too, so the marked steps hold as many steps' work as there are markers: no XLA:CPU op of
    the window runs past the last marker (it would, in the profiler's stop, otherwise)."""
    import numpy as np
    from tftrace.api import explore
    _out, results = captured
    a = explore(results["plain"]["runs"][0])
    trace, tl = a.trace, a.timeline
    rows = np.flatnonzero(trace.named([c for c, op in trace.ops.items() if op.kind == "xla"]))
    ends = trace.events["start_ps"][rows] + trace.events["dur_ps"][rows]
    first, last = tl.start[0], tl.start[-1] + tl.dur[-1]
    inside = ends[(ends > first)]
    assert len(inside) and inside.max() <= last, (inside.max() - last) / 1e6


def test_the_steps_after_the_window_are_timed_untraced_once_the_device_ran_them(captured):
    """The rest of the epoch after the window, timed with no profiler running and nothing per batch:
    from the profiler's stop to the last batch's end hook, where the host waits once for the device
    it ran ahead of (else the figure would time the dispatch); the validation pass's set-up is not
    in it. The report sets the traced steps against it."""
    _out, results = captured
    fit, validation = results["plain"]["runs"][:2]
    meta = _sidecar(fit)
    untraced, last = meta["untraced"], meta["steps"][-1]
    assert untraced["steps"] == 96 // 8 - last - 1 and untraced["ms_per_step"] > 0, untraced
    assert "untraced" not in _sidecar(validation)  # fit's validation pass: its length is unknown as it runs
    steps = analyze(fit).to_dict()["runs"][0]["steps"]
    turns = [a["dur_ms"] + b["idle_ms"] for a, b in zip(steps["steps"], steps["steps"][1:])]
    assert 0.2 <= untraced["ms_per_step"] / (sum(turns) / len(turns)) <= 5, (untraced, turns)
    assert steps["untraced_steps"] == untraced["steps"]


def test_a_stock_capture_whose_host_ran_ahead_gets_steps_paced_by_xla_cpu(captured):
    """jax.profiler around a loop that never waits: the markers time only the dispatch (~0.01 ms);
    the steps are the module's runs on XLA's threads, as long as the loop's untraced steps."""
    _out, results = captured
    ahead = results["ahead"]
    report = analyze(ahead["runs"][0]).runs[0]
    assert "paced by XLA:CPU's module runs" in report.steps.source and report.steps.count == 10
    assert "the host ran ahead of XLA:CPU" in report.steps.note
    assert 0.6 <= report.steps.median_ps / 1e9 / ahead["untraced_ms"] <= 1.6, (report.steps.median_ps, ahead)
    assert report.verdict.bound == "compute"


def test_the_sidecar_says_backend_versions_layers_and_dtype_policy(captured):
    _out, results = captured
    meta = _sidecar(_runs(results, "fit")[0])
    assert meta["backend"] == "jax" and meta["profiler"] == "jax"
    assert meta["jax_version"] and meta["jaxlib_version"] and meta["keras_version"]
    assert "tensorflow_version" not in meta
    assert meta["layer_names"] == ["hidden", "drop", "out"] and meta["layer_params"]["hidden"] == 8 * 16 + 16
    assert meta["dtype_policy"] == "float32" and meta["layers"][0]["dtype_policy"] == "float32"
    assert meta["mode"] == "fit" and meta["steps"][:5] == [2, 3, 4, 5, 6]
    assert _sidecar(_runs(results, "loop")[0])["regions"] == ["load batch"]


def test_other_callbacks_hooks_are_marked_as_on_tensorflow(captured):
    _out, results = captured
    from tftrace.model.names import CALLBACK_MARK
    assert CALLBACK_MARK + "Other.on_train_batch_end" in _names(_runs(results, "fit")[0])


def test_confirm_times_input_and_step_alone_and_predicts_alternatives(captured):
    _out, results = captured
    fit, predict = results["fit"]["experiments"], results["predict"]["experiments"]
    assert len(fit) == 1 and len(predict) == 1  # fit's validation pass is covered by fit's own
    for exp in fit + predict:
        assert not exp["error"] and not exp["skipped"], exp
        assert exp["input_alone_ms"] is not None and exp["step_alone_ms"] > 0 and exp["statement"]
    with open(os.path.join(_runs(results, "predict")[0], "tftrace_experiment.json")) as f:
        raw = json.load(f)
    assert all(raw[k + "_ms"] > 0 for k in ("predict", "predict_on_batch", "direct_call", "function_call"))
    assert raw["correct"] == {"predict_on_batch": True, "direct_call": True, "function_call": True}


def test_confirm_s_untraced_step_is_the_device_s_where_the_host_runs_ahead(captured):
    """Its steps outside the window were the gaps between batch begins: on JAX those time the
    dispatch (0.5 ms for a 19 ms CNN step), and "the step alone takes 2995% of the measured step"."""
    _out, results = captured
    got = results["confirm_ahead"]
    (exp,) = got["experiments"]
    assert exp["measured_by"] == "untraced" and not exp["error"], exp
    assert 0.5 <= exp["step_measured_ms"] / got["epoch_ms"] <= 2, (exp["step_measured_ms"], got["epoch_ms"])


def test_confirm_reads_a_pydataset_again_and_skips_a_generator_saying_why(captured):
    _out, results = captured
    (read,) = results["data"]["pydataset"]["experiments"]
    assert not read["skipped"] and read["input_alone_ms"] is not None and read["step_alone_ms"] > 0
    (skipped,) = results["data"]["generator"]["experiments"]
    assert skipped["skipped"] and "generator cannot be read twice" in skipped["skipped"][0]
    assert len(results["data"]["generator"]["runs"]) == 1  # the trace is there all the same


def test_jax_python_tracer_is_off_by_default_and_on_when_asked(captured):
    """JAX's own default is on; tftrace's captures turn it off (it makes a Python-heavy step several
    times longer) unless `python_tracer=True`."""
    _out, results = captured
    on, off = _names(_runs(results, "loop")[0]), _names(_runs(results, "tracer_off")[0])
    assert any(n.startswith("$") for n in on)  # `$file.py:LINE function`
    assert not any(n.startswith("$") for n in off) and {"train", "load batch"} <= off
    # The stack sampler (python=True) works beside JAX's tracer.
    assert os.path.exists(os.path.join(_runs(results, "loop")[0], "tftrace_python.json.gz"))


def test_an_exception_or_ctrl_c_inside_a_window_keeps_it_and_frees_the_profiler(captured):
    _out, results = captured
    cut = results["cut"]
    for name, raised in (("valueerror", "ValueError"), ("sigint", "KeyboardInterrupt")):
        assert cut[name]["raised"] == raised
        (run,) = cut[name]["runs"]
        assert _sidecar(run)["cut_short"]["by"] == raised and glob.glob(os.path.join(run, "*.xplane.pb"))
    assert len(cut["after"]["runs"]) == 1


def test_many_captures_in_a_row_with_threads_running(captured):
    """keras-team/keras#20450 turns JAX profiling off below Python 3.12 for segfaults; 20 windows here
    while two threads run Python and jitted work (on 3.11 too) all end with their trace."""
    _out, results = captured
    runs = _runs(results, "cycles")
    assert len(runs) == 20 and all(glob.glob(os.path.join(r, "*.xplane.pb")) for r in runs)


def test_other_keras_backends_warn_once_and_run_on():
    code = ("import warnings, numpy as np, keras, tftrace\n"
            "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])\n"
            "cb = tftrace.TraceCallback('logs_never_written')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    for _ in range(2):\n"
            "        out = m.predict(np.ones((8, 4), 'float32'), verbose=0, callbacks=[cb])\n"
            "print(out.shape, len(w), cb.runs)\n"
            "print(w[0].message)\n")
    proc = _child(code=code, env={"KERAS_BACKEND": "numpy"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, message = proc.stdout.strip().splitlines()[-2:]
    assert first == "(8, 2) 1 []"
    assert message.startswith("tftrace: capture is not available on Keras' numpy backend")
    assert not os.path.exists(os.path.join(ROOT, "logs_never_written"))


def test_import_tftrace_imports_no_framework():
    code = ("import sys, tftrace\n"
            "tftrace.trace('logs', backend='jax'), tftrace.step, tftrace.region  # frameworks come when a window opens\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'tensorflow', 'keras', 'jax', 'jaxlib'}))\n")
    proc = _child(code=code)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr[-2000:] + proc.stdout


# -- which profiler: pure, with stand-in modules --------------------------------------------------------
def _keras(name: str):
    return types.SimpleNamespace(backend=types.SimpleNamespace(backend=lambda: name))


@pytest.fixture
def modules(monkeypatch):
    for name in ("keras", "tensorflow", "jax"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    def put(**mods):
        for name, module in mods.items():
            monkeypatch.setitem(sys.modules, name, module)
    return put


def test_keras_backend_decides_then_the_framework_imported(modules):
    modules(keras=_keras("jax"), tensorflow=types.ModuleType("tensorflow"))
    assert backend.choose() == "jax"
    modules(keras=_keras("tensorflow"), jax=types.ModuleType("jax"))
    assert backend.choose() == "tensorflow"


def test_jax_alone_is_jax_and_both_without_keras_is_tensorflow(modules, monkeypatch):
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    modules(jax=types.ModuleType("jax"))
    assert backend.choose() == "jax"
    modules(tensorflow=types.ModuleType("tensorflow"))
    assert backend.choose() == "tensorflow"
    modules(keras=_keras("numpy"))  # a backend without our profiler: the frameworks imported decide
    assert backend.choose() == "tensorflow"


def test_an_explicit_backend_wins_and_a_bad_name_is_a_clear_error(modules):
    import tftrace
    from tftrace.model.errors import TftraceError
    modules(keras=_keras("tensorflow"))
    assert backend.choose("jax") == "jax"
    with pytest.raises(TftraceError, match="backend must be 'tensorflow', 'jax' or 'torch', not 'numpy'"):
        tftrace.trace("logs", backend="numpy")
