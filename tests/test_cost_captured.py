"""TensorFlow on CPU: the trace holds no shapes, so FLOPs come from what the capture counted into
the sidecar (`cost`, per layer and phase) and the CPU's peak from what it measured
(`host_peaks`). A real TraceCallback capture of the zoo, its sidecar extended by hand with the
contract's figures (the analytic counts of its layers)."""

from __future__ import annotations

import glob
import json
import os

import pytest

from conftest import sample
from tftrace.api import analyze
from tftrace.model.report import Report

BATCH = 16  # sample_traces/capture_zoo.py: prog_heavy_layer


def _conv(h, w, cin, cout, k=3) -> float:
    return 2.0 * BATCH * h * w * cout * k * k * cin


# Forward FLOPs a step: stem 3->16 and wide_conv 16->192 (3x3, same padding, 32x32), logits 192->10.
FORWARD = {"stem": _conv(32, 32, 3, 16), "wide_conv": _conv(32, 32, 16, 192), "logits": 2.0 * BATCH * 192 * 10}
# Backward: the weights' gradient, and the input's for every layer but the first.
BACKWARD = {"stem": FORWARD["stem"], "wide_conv": 2 * FORWARD["wide_conv"], "logits": 2 * FORWARD["logits"]}
PEAK = 2.0e11  # FLOP/s, as a capture would measure it on this host


def _extend(run: str, peaks: bool = True) -> None:
    path = glob.glob(os.path.join(run, "**", "tftrace_run.json"), recursive=True)[0]
    with open(path) as f:
        sidecar = json.load(f)
    sidecar["cost"] = {"source": "TensorFlow's op statistics (flops) on the step's graph", "step": "train",
                       "batch_size": BATCH, "step_flops": sum(FORWARD.values()) + sum(BACKWARD.values()) + 1e6,
                       "layers": {name: {"forward": FORWARD[name], "backward": BACKWARD[name]} for name in FORWARD},
                       "other": {"loss": 5e5, "optimizer": 5e5}}
    if peaks:
        sidecar["host_peaks"] = {"flops_per_s": {"float32": PEAK, "float64": PEAK / 2}, "bytes_per_s": 2.0e10,
                                 "how": "measured on this host: a 1024x1024 float32 matmul and a 256 MB copy",
                                 "threads": 2}
    with open(path, "w") as f:
        json.dump(sidecar, f)


def test_layers_get_the_captures_flops_per_step_and_the_run_its_mfu(copy_of):
    run_dir = copy_of(sample("zoo", "heavy_layer"))
    _extend(run_dir)
    report = analyze(run_dir, top=None)
    assert Report.from_dict(report.to_dict()) == report
    run = report.runs[0]
    layers = {layer.layer: layer.flops_per_step for layer in run.layers}
    for name in FORWARD:
        assert layers[name] == pytest.approx(FORWARD[name] + BACKWARD[name], rel=0.05)
    assert layers.get("gap") is None  # the capture counted nothing for it: nothing is made up
    assert run.flops_per_step == pytest.approx(sum(FORWARD.values()) + sum(BACKWARD.values()) + 1e6)
    assert all(o.flops is None for o in run.ops)  # no shapes in the trace: nothing per op
    roof = run.roofline
    assert roof.device == "CPU" and roof.peak_flops_per_s == PEAK and "measured on this host" in roof.source
    assert roof.counted_by.startswith("the capture: TensorFlow's op statistics")
    step_s = run.steps.mean_ps / 1e12
    assert roof.flops_per_s == pytest.approx(run.flops_per_step / step_s)
    assert run.mfu == pytest.approx(run.flops_per_step / step_s / PEAK, rel=1e-4)
    rows = {(r.name, r.phase): r for r in roof.rows}
    wide = rows[("wide_conv", "forward")]
    assert wide.scope == "layer" and wide.flops == pytest.approx(FORWARD["wide_conv"] * run.steps.count)
    assert wide.flops_per_s and 0 < wide.roofline and wide.precision == "fp32"


def test_without_measured_peaks_the_rate_is_given_and_mfu_is_none(copy_of):
    run_dir = copy_of(sample("zoo", "heavy_layer"))
    _extend(run_dir, peaks=False)
    run = analyze(run_dir).runs[0]
    assert run.flops_per_step > 0 and run.roofline.flops_per_s > 0
    assert run.mfu is None and run.roofline.peak_flops_per_s is None and "no peak known" in run.roofline.source


def test_a_count_of_another_kind_of_step_is_not_used(copy_of):
    run_dir = copy_of(sample("zoo", "heavy_layer"))  # a fit: train steps
    _extend(run_dir)
    path = glob.glob(os.path.join(run_dir, "**", "tftrace_run.json"), recursive=True)[0]
    with open(path) as f:
        sidecar = json.load(f)
    sidecar["cost"]["step"] = "predict"
    with open(path, "w") as f:
        json.dump(sidecar, f)
    run = analyze(run_dir).runs[0]
    assert run.mode == "train" and run.flops_per_step is None and run.mfu is None
    assert "predict step's FLOPs" in run.roofline.note and all(layer.flops_per_step is None for layer in run.layers)


def test_a_step_the_capture_could_not_count_is_said_so(copy_of):
    run_dir = copy_of(sample("zoo", "heavy_layer"))
    path = glob.glob(os.path.join(run_dir, "**", "tftrace_run.json"), recursive=True)[0]
    with open(path) as f:
        sidecar = json.load(f)
    sidecar["cost_missing"] = "the model runs on 2 replicas (a distribution strategy): not counted yet"
    with open(path, "w") as f:
        json.dump(sidecar, f)
    run = analyze(run_dir).runs[0]
    assert run.flops_per_step is None and "could not count the step's FLOPs: the model runs on 2" in run.roofline.note


def test_a_malformed_cost_record_is_ignored_not_trusted(copy_of):
    run_dir = copy_of(sample("zoo", "heavy_layer"))
    path = glob.glob(os.path.join(run_dir, "**", "tftrace_run.json"), recursive=True)[0]
    with open(path) as f:
        sidecar = json.load(f)
    sidecar["cost"] = {"step_flops": "many", "layers": {"stem": {"forward": -1}, "logits": [1, 2]}}
    sidecar["host_peaks"] = {"flops_per_s": "fast"}
    with open(path, "w") as f:
        json.dump(sidecar, f)
    run = analyze(run_dir).runs[0]
    assert run.flops_per_step is None and run.mfu is None and not run.error
