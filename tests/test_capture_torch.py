"""Capture on Keras 3's torch backend and raw torch loops, with TensorFlow and JAX unimportable: TraceCallback
on fit (with its validation pass) and predict, tftrace.trace() around a torch loop, interrupts, a profiler
that cannot start, a trace that cannot be written.

The captures run in child processes (tests/torch_capture_run.py: Keras on torch, on the CPU, with a finder
that refuses `import tensorflow` and `import jax`); the tests read the Kineto JSON they wrote directly,
and through `tftrace analyze` (tftrace/read/kineto.py).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from conftest import ROOT, child_results

if importlib.util.find_spec("torch") is None or importlib.util.find_spec("keras") is None:
    pytest.skip("needs torch and keras (pip install tftrace[torch] keras)", allow_module_level=True)

from tftrace.capture import backend  # noqa: E402

SCRIPT = os.path.join(ROOT, "tests", "torch_capture_run.py")
_ENV = {"KERAS_BACKEND": "torch", "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}


def _child(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, SCRIPT, *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, **_ENV})


def _results(out: str, *parts: str) -> dict:
    return child_results(_child(out, *parts), out)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Keras on torch: fit, predict, cut windows, a profiler that cannot start."""
    return _results(str(tmp_path_factory.mktemp("torch_capture")))


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """A raw torch loop in a process that imports no Keras: in tftrace.trace(), and under torch.profiler
    alone (with_stack on and off)."""
    return _results(str(tmp_path_factory.mktemp("torch_loop")), "loop", "stock")


def _sidecar(run: str) -> dict:
    with open(os.path.join(run, "tftrace_run.json")) as f:
        return json.load(f)


def _trace_file(run: str) -> str:
    (path,) = glob.glob(os.path.join(run, "*.pt.trace.json"))
    return path


def _events(run: str) -> list[dict]:
    with open(_trace_file(run)) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _annotations(run: str) -> Counter:
    """The record_function ranges of the trace (steps, layers, regions, callbacks), by name."""
    return Counter(e["name"] for e in _events(run) if e.get("cat") == "user_annotation")


def _steps(run: str) -> list[int]:
    return sorted(int(m.group(1)) for name, n in _annotations(run).items()
                  for m in [re.fullmatch(r"ProfilerStep#(\d+)", name)] if m for _ in range(n))


def test_neither_tensorflow_nor_jax_is_imported_and_no_capture_warned(captured, loop):
    assert captured["imported"] == ["keras"]  # "tensorflow", "jax" not in sys.modules
    assert loop["imported"] == []  # torch alone: not even Keras
    for part in ("fit", "predict"):
        assert captured[part]["warnings"] == [], (part, captured[part]["warnings"])
    assert loop["loop"]["warnings"] == [] and loop["loop"]["profiler"] == "torch"


def test_capture_adds_no_framework_where_tensorflow_and_jax_are_installed(tmp_path):
    """Without the finder: Keras 3.15 imports JAX itself when it is installed (its Orbax callback); the
    capture adds no module of TensorFlow's or JAX's to what Keras brought."""
    code = ("import sys, numpy as np, keras, tftrace\n"
            "def fw(): return {m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'jax', 'jaxlib')}\n"
            "before = fw()\n"
            "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)]); m.compile('sgd', 'mse')\n"
            "cb = tftrace.TraceCallback('LOGS', fit_steps=(1, 2), evaluate_steps=None)\n"
            "m.fit(np.ones((32, 4), 'float32'), np.ones((32, 2), 'float32'), batch_size=8, verbose=0, callbacks=[cb])\n"
            "print(len(cb.runs), sorted(fw() - before), 'tensorflow' in sys.modules)\n")
    proc = _child(code=code.replace("LOGS", str(tmp_path / "logs")))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "1 [] False"


def test_weights_and_predictions_are_identical_with_and_without_the_callback(captured):
    fit, predict = captured["fit"], captured["predict"]
    assert fit["weights_equal"] and fit["n_state"] > 6  # weights and Adam's slots, byte for byte
    assert fit["layer_calls_put_back"]  # the layer ranges are gone once the windows closed
    assert predict["weights_equal"] and predict["predictions_equal"]


def _default_window(steps: list) -> list:
    """`steps` when they are a default window: 2, 3, ... and at least five of them."""
    assert len(steps) >= 5 and steps == list(range(2, 2 + len(steps))), steps
    return steps


def test_each_window_is_a_run_folder_with_a_kineto_trace_and_its_marked_steps(captured):
    fit, evaluate = captured["fit"]["runs"]
    (predict,) = captured["predict"]["runs"]
    for run, label in ((fit, "fit_epoch1"), (evaluate, "evaluate"), (predict, "predict")):
        # <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>_<label>/<host>.pt.trace.json, as TF's and JAX's runs
        assert os.path.basename(os.path.dirname(run)) == "profile"
        assert re.fullmatch(r"\d{4}(_\d\d){5}_" + label, os.path.basename(run)), run
        assert _trace_file(run).endswith(".pt.trace.json")
        side = _sidecar(run)
        assert side["label"] == label and side["profiler"] == "torch" and side["backend"] == "torch"
        assert side["torch_version"] and "error" not in side and "tensorflow_version" not in side
        # one ProfilerStep range per marked step, numbered by the Keras batch: a default window, from
        # step 2, at least five steps (short ones until 100 ms, at most half the call)
        assert _steps(run) == side["steps"] == _default_window(side["steps"]), run
    assert _sidecar(fit)["mode"] == "fit" and _sidecar(predict)["mode"] == "predict"
    assert _sidecar(fit)["layer_names"] == ["hidden", "drop", "out"]


def test_tftrace_analyze_finds_each_windows_steps_mode_and_a_verdict(captured, loop):
    from tftrace.api import analyze
    fit, evaluate = captured["fit"]["runs"]
    (predict,) = captured["predict"]["runs"]
    (raw,) = loop["loop"]["runs"]
    for run, mode, steps in ((fit, "train", _sidecar(fit)["steps"]), (evaluate, "evaluate", _sidecar(evaluate)["steps"]),
                             (predict, "predict", _sidecar(predict)["steps"]), (raw, None, [0, 1, 2, 3, 4, 5])):
        (report,) = analyze(run).to_dict()["runs"]
        assert report["framework"] == "pytorch" and report["hosts"]
        assert [s["number"] for s in report["steps"]["steps"]] == steps, run
        assert report["steps"]["source"] == "marker 'ProfilerStep'"
        assert mode is None or report["mode"] == mode
        assert report["verdict"]["bound"] != "unknown" and report["ops"]


def test_the_profilers_op_events_and_hooks_are_left_out_of_the_steps_judged(captured):
    """torch.profiler records an event for every aten op (~0.25 us each, ~0.38 in a step that
    trains: analysis/profiler_cost); tftrace's hooks are timed as they ran: both the profiler's,
    each with a note, and the steps judged are the traced ones less them. After the window, the
    rest of the epoch is timed untraced."""
    import numpy as np
    from tftrace.analysis.profiler_cost import HOOKS, PS_PER_OP_EVENT, PS_PER_TRAINING_EVENT, TORCH_EVENTS
    from tftrace.api import explore
    fit = captured["fit"]["runs"][0]
    a = explore(fit)
    sources = {s.owner: s for s in a.profiler.sources}
    assert {TORCH_EVENTS, HOOKS} <= set(sources), sources
    codes = [c for c, op in a.trace.ops.items() if op.kind == "torch"]
    starts = a.trace.events["start_ps"][np.flatnonzero(a.trace.named(codes))]
    tl = a.timeline
    events = np.array([((starts >= s) & (starts < s + d)).sum() for s, d in zip(tl.start, tl.dur)])
    # fit's steps run autograd's backward: their events are priced as a training step's.
    taken = sources[TORCH_EVENTS].step_ps
    assert events.min() >= 20 and (taken <= events * PS_PER_TRAINING_EVENT).all(), events
    assert (taken > events * PS_PER_OP_EVENT).any(), (taken, events)
    report = a.report
    for owner in (TORCH_EVENTS, HOOKS):
        assert any(n.startswith(f"{owner}: ~") for n in report.notes), report.notes
    assert any(f"events a step at ~{PS_PER_TRAINING_EVENT / 1e6:.2f} us each" in n for n in report.notes), report.notes
    assert report.steps.median_less_profiler_ps < report.steps.median_ps
    meta = _sidecar(fit)
    assert meta["untraced"]["steps"] >= 3 and report.steps.untraced_steps == meta["untraced"]["steps"]


def test_tftrace_analyze_names_the_layers_from_their_ranges(captured):
    """Each op inside a layer's range (the sidecar's `layer_ranges`) is that layer's, in predict and
    in fit's forward pass; in fit's backward pass, the layer of the forward op that made it."""
    from tftrace.api import analyze
    (predict,) = captured["predict"]["runs"]
    fit = captured["fit"]["runs"][0]
    for run in (predict, fit):
        (report,) = analyze(run).to_dict()["runs"]
        assert {"hidden", "out"} <= {row["layer"] for row in report["layers"]}, (run, report["layers"])
        layer_ops = [o for o in report["ops"] if o["layer"] == "hidden"]
        assert layer_ops and all(o["type"].startswith(("aten::", "autograd::", "AddmmBackward", "MmBackward",
                                                       "ReluBackward")) for o in layer_ops), layer_ops
    (report,) = analyze(fit, top=None).runs
    assert {("hidden", "backward"), ("out", "backward")} <= {(o.layer, o.phase) for o in report.ops}


def _owners(run: str):
    from tftrace.api import analyze
    (report,) = analyze(run, top=None).runs
    return report, {(r.kind, r.name, r.phase) for r in report.owners}


def test_a_keras_cnn_fit_gives_each_conv_and_dense_layer_a_backward_pass_with_its_gradients(captured):
    """Autograd runs the backward pass outside every layer's call: each backward op is the layer of the
    forward op that made it (Kineto's fwdbwd flows and sequence numbers). A convolution's backward
    op makes the gradients of its weight and its input; a dense layer's, two matmuls a step."""
    (run,) = captured["cnn"]["runs"]
    report, owners = _owners(run)
    for layer in ("conv_a", "conv_b", "fc", "logits"):
        assert {("layer", layer, "forward"), ("layer", layer, "backward")} <= owners, (layer, owners)
    backward = [o for o in report.ops if o.phase == "backward"]
    for layer in ("conv_a", "conv_b"):
        assert any(o.layer == layer and o.type == "aten::convolution_backward" for o in backward), layer
    steps = report.steps.count
    for layer in ("fc", "logits"):  # the gradients of its kernel and of its input
        assert sum(o.count for o in backward if o.layer == layer and o.type == "aten::mm") >= 2 * steps, layer
    # the loss, its backward and the optimizer: named from the capture's ranges and autograd's links
    assert {("loss", "sparse_categorical_crossentropy", "forward"), ("loss", "sparse_categorical_crossentropy",
                                                                     "backward"), ("optimizer", "adam", "")} <= owners
    total = sum(r.op_ps for r in report.owners)
    outside = sum(r.op_ps for r in report.owners if r.kind == "step")
    assert outside < 0.10 * total, (outside, total)
    assert any(n.startswith("autograd's links: ") and "through fwdbwd flows" in n for n in report.notes)


def test_each_layer_call_is_a_named_range_and_other_callbacks_hooks_are_marked(captured):
    """Keras on torch leaves no layer name in torch's trace (ops are `aten::*`; `with_modules` is for
    TorchScript, `with_stack` names modules `nn.Module: Dense_0`); inside windows each layer's call is
    `record_function(layer.name)`."""
    fit, evaluate = captured["fit"]["runs"]
    (predict,) = captured["predict"]["runs"]
    for run in (fit, evaluate, predict):
        names = _annotations(run)
        steps = len(_default_window(_sidecar(run)["steps"]))
        assert all(names[layer] == steps for layer in ("tiny", "hidden", "drop", "out")), names
        assert _sidecar(run)["layer_ranges"] == ["tiny", "hidden", "drop", "out"]  # which ranges are layers
    assert _annotations(fit)["tftrace callback Other.on_train_batch_end"] == len(_sidecar(fit)["steps"])
    # the layers' ops run inside their ranges: a matmul (aten::addmm / aten::mm) of `hidden` in each step
    events = _events(predict)
    hidden = [e for e in events if e["name"] == "hidden"]
    ops = [e for e in events if e.get("cat") == "cpu_op" and e["name"] in ("aten::addmm", "aten::mm", "aten::matmul")]
    assert all(any(h["ts"] <= o["ts"] <= h["ts"] + h["dur"] for o in ops) for h in hidden)


def test_a_keras_model_in_the_users_own_loop_gets_its_steps_and_layer_ranges(captured):
    part = captured["keras_loop"]
    (run,) = part["runs"]
    assert part["warnings"] == [] and part["outputs_equal"] and part["layer_calls_put_back"]
    assert _steps(run) == [0, 1, 2, 3]
    names = _annotations(run)
    assert all(names[layer] == 4 for layer in ("tiny", "hidden", "drop", "out")), names
    assert _sidecar(run)["layer_names"] == ["hidden", "drop", "out"]
    assert _sidecar(run)["layer_ranges"] == ["tiny", "hidden", "drop", "out"]


def test_an_exception_or_ctrl_c_inside_a_window_keeps_it_and_frees_the_profiler(captured):
    cut = captured["cut"]
    for name, raised in (("valueerror", "ValueError"), ("sigint", "KeyboardInterrupt")):
        assert cut[name]["raised"] == raised
        (run,) = cut[name]["runs"]
        side = _sidecar(run)
        # batch 4 raised in a hook after ours: it counts as completed, and its range is in the trace
        assert side["cut_short"]["by"] == raised and side["cut_short"]["steps_completed"] == 3
        assert _steps(run) == side["steps"] == [2, 3, 4]
    (after,) = cut["after"]["runs"]
    assert _steps(after) == [1, 2]


def test_a_profiler_that_cannot_start_only_warns_and_training_goes_on(captured):
    broken = captured["broken"]
    assert broken["runs"] == [] and broken["weights_equal"]
    (message,) = broken["warnings"]
    assert message.startswith("tftrace: could not start the profiler (RuntimeError: Profiler is already enabled")


def test_a_trace_that_cannot_be_written_only_warns_and_frees_the_profiler(captured):
    unsaved = captured["unsaved"]
    assert unsaved["runs"] == [] and unsaved["weights_equal"] and len(unsaved["after"]) == 1
    (message,) = unsaved["warnings"]
    assert message.startswith("tftrace: could not save the fit_epoch1 profile (NotADirectoryError")


def test_confirm_times_the_input_alone_and_the_step_alone_on_torch_with_weights_unchanged(captured):
    """confirm=True on Keras' torch backend: after fit's window, the call's batches read again (a copy
    of its adapter that does not shuffle) and its own train step on one held batch, each timed; the
    weights, Adam's slots, and torch's and NumPy's random state end as after a fit without it."""
    part = captured["confirm"]
    assert len(part["runs"]) == 1 and part["weights_equal"] and part["n_state"] > 6 and part["random_equal"]
    (server,) = part["warnings"]  # confirm itself warns of nothing
    assert server.startswith("tftrace: could not start the profiler server on port 6123 (RuntimeError: "
                             "torch.profiler has no profiler server")
    (experiment,) = part["experiments"]
    assert not experiment["error"] and not experiment["skipped"], experiment
    assert experiment["input_alone_ms"] > 0 and experiment["step_alone_ms"] > 0 and experiment["batches"] >= 3
    assert experiment["measured_by"] == "untraced" and experiment["statement"]
    (run,) = part["runs"]
    with open(os.path.join(run, "tftrace_experiment.json")) as f:
        saved = json.load(f)
    # The report's figures are rounded to the hundredth of a millisecond; the file keeps the timing.
    assert saved["mode"] == "fit" and saved["step_alone_ms"] == pytest.approx(experiment["step_alone_ms"], abs=0.005)


def test_a_torch_loop_in_tftrace_trace_names_its_modules_as_owners_in_both_phases(loop):
    """tftrace.trace() on torch marks each module's call (`nn.Module: <name>`, named as
    `named_modules()` names it); the backward ops are the modules of the forward ops that made them."""
    (run,) = loop["loop"]["runs"]
    assert _sidecar(run)["module_ranges"] is True
    names = Counter(e["name"] for e in _events(run) if e["name"].startswith("nn.Module: "))  # torch's fast ranges
    assert all(names[f"nn.Module: {m}"] == 6 for m in ("_Net", "stem", "blocks", "blocks.0", "blocks.0.fc", "head")), names
    _report, owners = _owners(run)
    for module in ("stem", "blocks.0.fc", "blocks.1.fc", "head"):
        assert {("layer", module, "forward"), ("layer", module, "backward")} <= owners, (module, owners)
    assert {("loss", "mse_loss", "forward"), ("loss", "mse_loss", "backward"), ("optimizer", "sgd", "")} <= owners


def test_a_stock_trace_with_stack_names_its_modules_and_one_without_says_what_to_turn_on(loop):
    with_stack, plain = loop["stock"]["runs"]
    _report, owners = _owners(with_stack)
    for module in ("Linear_0", "Linear_1", "Linear_2", "Linear_3"):  # torch's own names: class and number
        assert {("layer", module, "forward"), ("layer", module, "backward")} <= owners, (module, owners)
    assert any(kind == "code" and name.startswith("part_stock (torch_capture_run.py:") for kind, name, _ in owners)
    report, owners = _owners(plain)
    assert not any(kind in ("layer", "code") for kind, _, _ in owners)
    assert {("step", "outside any layer", "forward"), ("step", "outside any layer", "backward")} <= owners
    assert any("names no module or Python function" in n and "with_stack=True" in n for n in report.notes)


def test_a_raw_torch_loop_gets_one_profiler_step_per_marked_step(loop):
    (run,) = loop["loop"]["runs"]
    assert os.path.basename(run).endswith("_torch-loop")
    assert _steps(run) == _sidecar(run)["steps"] == [0, 1, 2, 3, 4, 5]
    assert _annotations(run)["load batch"] == 6 and _sidecar(run)["regions"] == ["load batch"]
    assert any(e["name"] == "aten::mse_loss" for e in _events(run))


def test_torch_is_a_backend_by_name():
    assert backend.choose("torch") == "torch" and "torch" in backend.NAMES
