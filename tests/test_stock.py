"""Traces captured the ways users capture them (no tftrace markers): verdicts, projections and
diffs checked against the same work timed without the profiler (sample_traces/ground_truth.json)."""

from __future__ import annotations

import json
import os

import pytest

from conftest import PUBLIC, sample
from tftrace.api import analyze, diff

TRUTH = json.load(open(sample("ground_truth.json")))["stock"]
PREDICT_LOOPS = ["predict_light", "predict_heavy", "trace_nosteps"]


def _run(variant):
    return analyze(sample("stock", variant)).runs[0]


@pytest.mark.parametrize("variant", PREDICT_LOOPS)
def test_stock_predict_loops_are_host_overhead_bound_with_predicts_per_call_work_on_top(variant):
    truth = TRUTH[variant]
    assert truth["predict_ms"] > 3 * truth["call_ms"]  # the independent measurement: predict's overhead
    run = _run(variant)
    assert run.mode == "predict" and run.mode_source == "Keras function names"
    assert run.steps.count == 8 and run.steps.source == "function 'one_step_on_data_distributed'"
    # One step per iteration: its time is what the loop costs per image, not the step function's.
    per_iteration = (sum(s.dur_ps + s.idle_ps for s in run.steps.steps) / 8) / 1e9
    assert per_iteration == pytest.approx(truth["iteration_ms"], rel=0.35)
    assert run.verdict.bound == "host_overhead" and run.breakdown.idle < 0.2
    top = run.bottlenecks[0]
    assert top.kind == "per_call_overhead" and "model.predict" in top.title and "per call" in top.evidence
    assert "MakeIterator" in top.evidence and "model's own ops take" in top.evidence
    assert "model(x, training=False)" in top.recommendation and "tf.function" in top.recommendation
    assert not [b for b in run.bottlenecks if "callbacks" in b.evidence + b.recommendation]


@pytest.mark.parametrize("variant", PREDICT_LOOPS)
def test_removing_predicts_per_call_work_projects_the_compiled_call_plus_loading(variant):
    """The fix leads with predict_on_batch (a compiled call): the step it projects, as a share of
    the captured step, against the compiled call plus the loading over the iteration, timed together
    without the profiler (`compiled_call`)."""
    timed = TRUTH[variant]["compiled_call"]
    truth = (timed["predict_on_batch_ms"] + timed["load_ms"]) / timed["iteration_ms"]
    top = _run(variant).bottlenecks[0]
    projected = top.step_if_removed_ps / top.step_ps
    assert truth / 1.5 <= projected <= truth * 1.5, (projected, truth)
    assert top.projection_basis == "removed" and "predict_on_batch" in top.recommendation


def test_loading_between_predicts_is_named_as_time_outside_tensorflow():
    run = _run("predict_light")
    idle = next(b for b in run.bottlenecks if b.kind == "idle")
    assert "outside TensorFlow" in idle.evidence and "loading data" in idle.evidence
    per_gap = sum(s.idle_ps for s in run.steps.steps) / 7 / 1e9
    assert per_gap == pytest.approx(TRUTH["predict_light"]["load_ms"], rel=0.5)


def test_diff_of_light_and_heavy_stock_loops_follows_the_timed_change():
    truth_change = (TRUTH["predict_heavy"]["iteration_ms"] / TRUTH["predict_light"]["iteration_ms"] - 1) * 100
    result = diff(sample("stock", "predict_light"), sample("stock", "predict_heavy"))
    assert abs(result.step_time.delta_pct - truth_change) <= 15
    assert "host overhead dominates" in result.summary or not result.step_time.significant


def test_stock_tensorboard_callback_fit_is_input_bound_like_the_timed_generator():
    truth = TRUTH["fit_tensorboard"]
    assert truth["generator_ms_per_batch"] > truth["train_step_ms"]
    run = _run("fit_tensorboard")
    assert run.mode == "train" and run.steps.count == 6 and "Profiled batch" in run.steps.source
    assert run.verdict.bound == "input"
    top = run.bottlenecks[0]
    assert top.kind == "input" and ("Generator" in top.title or "PyFunc" in top.title)
    assert 0 < top.step_if_removed_ps < top.step_ps


def test_every_share_column_sums_to_at_most_one_stated_total_on_a_gpu_trace():
    run = analyze(os.path.join(PUBLIC, "tensorflow__profiler"), top=None).runs[0]
    assert run.device_op_ps > 0 and run.host_op_ps > 0
    total = run.host_op_ps + run.device_op_ps
    assert sum(o.share for o in run.ops) == pytest.approx(1.0, abs=1e-3)
    for o in run.ops:  # host and device rows are shares of the same total
        assert o.share == pytest.approx(o.self_ps / total, abs=1e-6)
    assert {o.device for o in run.ops} == {"host", "GPU"}
    for rows in (run.layers, run.categories):
        assert sum(r.share for r in rows) <= 1.0 + 1e-6
        for r in rows:
            assert r.share == pytest.approx(r.self_ps / run.device_op_ps, abs=1e-6)
    assert sum(s.share for s in run.input_pipeline.stages) <= 1.0 + 1e-6
    assert sum(b.share for b in run.bottlenecks if b.kind not in ("category", "layer", "op")) <= 1.0 + 1e-6


def test_op_tables_filter_host_or_device_ops_and_keep_one_total():
    path = os.path.join(PUBLIC, "tensorflow__profiler")
    everything = analyze(path, top=None).runs[0]
    for side in ("host", "device"):
        run = analyze(path, top=None, ops=side).runs[0]
        assert run.ops and all((o.device == "host") == (side == "host") for o in run.ops)
        key = lambda o: (o.name, o.type, o.layer, o.device, o.eager)  # noqa: E731
        shares = {key(o): o.share for o in everything.ops}
        assert all(shares[key(o)] == o.share for o in run.ops)
