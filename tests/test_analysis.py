"""Steps, breakdown, verdicts and bottlenecks: on the sample traces and on tiny hand-built traces."""

from __future__ import annotations

import json

import pytest

from conftest import sample
from tftrace.analysis.run import analyze_trace
from tftrace.api import analyze
from tiny import tiny_trace

GROUND_TRUTH = json.load(open(sample("ground_truth.json")))


def _run(*parts):
    return analyze(sample(*parts), top=None).runs[0]


@pytest.mark.parametrize("head", ["flatten", "gap"])
def test_scenario1_both_heads_are_input_bound_with_the_generator_named(head):
    truth = GROUND_TRUTH["augment"][head]
    assert truth["fit_ms_per_step"] > 2 * truth["train_step_ms"]  # the independent measurement agrees
    run = _run("augment", head)
    assert run.mode == "train" and run.steps.count == 6 and run.steps.source == "marker 'train'"
    assert run.verdict.bound == "input" and "input-bound" in run.verdict.text
    top = run.bottlenecks[0]
    assert top.kind == "input" and top.rank == 1
    assert "Generator" in top.title or "PyFunc" in top.title
    assert "generator" in top.recommendation.lower() and "AUTOTUNE" in top.recommendation
    assert run.input_pipeline.slowest in ("Generator", "PyFunc (op in tf.data)")


def test_scenario1_parameters_fell_25x_but_step_time_did_not():
    flatten, gap = _run("augment", "flatten"), _run("augment", "gap")
    params = {r.layer: r.params for r in flatten.layers}
    assert params["head_dense"] > 25 * {r.layer: r.params for r in gap.layers}["head_dense"]
    assert gap.steps.mean_ps == pytest.approx(flatten.steps.mean_ps, rel=0.25)


def test_scenario2_light_model_is_host_overhead_bound_with_per_call_predict_named():
    truth = GROUND_TRUTH["predict_loop"]
    assert truth["heavy"]["params"] > 7 * truth["light"]["params"]
    assert truth["light"]["predict_ms"] > 5 * truth["light"]["call_ms"]
    run = _run("predict_loop", "light")
    assert run.mode == "predict" and run.steps.count == 6
    assert run.verdict.bound == "host_overhead"
    assert run.breakdown.compute < 0.1
    top = run.bottlenecks[0]
    assert top.kind == "per_call_overhead" and "model.predict" in top.title
    assert "MakeIterator" in top.evidence and "predict_on_batch" in top.recommendation


def test_scenario2_heavy_model_predicts_at_about_the_same_speed():
    light, heavy = _run("predict_loop", "light"), _run("predict_loop", "heavy")
    assert heavy.steps.median_ps == pytest.approx(light.steps.median_ps, rel=0.3)
    assert heavy.verdict.bound == "host_overhead"


@pytest.mark.parametrize("variant", ["plain", "dropout"])
def test_scenario3_dropout_costs_nothing_at_inference(variant):
    run = _run("dropout", variant)
    assert run.eager and run.steps.count == 15
    dropout = sum(c.self_ps for c in run.categories if c.category == "dropout")
    total = sum(c.self_ps for c in run.categories)
    assert dropout <= 0.01 * total
    assert any(b.kind == "eager" for b in run.bottlenecks)


def test_scenario3_eager_ops_are_attributed_to_layers_where_call_order_allows():
    run = _run("dropout", "dropout")
    layers = {r.layer for r in run.layers}
    assert {"conv", "dense1", "dense2", "logits"} <= layers
    assert not {"dropout1", "dropout2"} & layers


def test_breakdown_parts_sum_to_one_and_steps_carry_them():
    for parts in (("augment", "flatten"), ("predict_loop", "light"), ("dropout", "plain")):
        run = _run(*parts)
        b = run.breakdown
        assert b.input + b.compute + b.host_overhead + b.idle == pytest.approx(1.0, abs=1e-3)
        for s in run.steps.steps:
            assert s.input_ps + s.compute_ps + s.host_overhead_ps == s.dur_ps


# -- tiny hand-built traces ---------------------------------------------------------------------
def test_no_steps_and_no_ops_is_analysed_and_says_so():
    run = analyze_trace(tiny_trace([("python", "some_python_work", 0, 100)]), "t")
    assert run.steps.count == 0 and "window" in run.steps.source and run.steps.note
    assert run.breakdown.host_overhead == pytest.approx(1.0)


def test_single_step_is_measured_and_noted():
    run = analyze_trace(tiny_trace([
        ("python", "train", 0, 100, {"_r": 1, "step_num": 7}),
        ("tf_Compute/1", "model/dense/MatMul:MatMul", 10, 50),
        ("tf_Compute/1", "IteratorGetNext:IteratorGetNext", 60, 20),
    ]), "t")
    assert run.steps.count == 1 and run.steps.steps[0].number == 7
    assert run.breakdown.compute == pytest.approx(0.5) and run.breakdown.input == pytest.approx(0.2)
    assert any("one step" in n for n in run.notes)


def test_parallel_threads_are_not_double_counted_and_input_wins_overlaps():
    run = analyze_trace(tiny_trace([
        ("python", "train", 0, 100, {"_r": 1, "step_num": 0}),
        ("tf_Compute/1", "model/a/MatMul:MatMul", 0, 60),
        ("tf_Compute/2", "model/b/MatMul:MatMul", 0, 60),  # parallel: same 60 us
        ("tf_Compute/3", "IteratorGetNext:IteratorGetNext", 40, 40),  # overlaps compute for 20 us
        ("python", "train", 150, 50, {"_r": 1, "step_num": 1}),
    ]), "t")
    s0 = run.steps.steps[0]
    assert (s0.input_ps, s0.compute_ps, s0.host_overhead_ps) == (40_000_000, 40_000_000, 20_000_000)
    assert run.steps.steps[1].idle_ps == 50_000_000
    assert run.breakdown.idle == pytest.approx(50 / 200)


def test_steps_cut_by_the_window_edges_are_clipped_not_dropped():
    # An op that started before the first step and one running past the last: only the part
    # inside the steps counts.
    run = analyze_trace(tiny_trace([
        ("tf_Compute/1", "model/a/MatMul:MatMul", -50, 80),
        ("python", "train", 0, 100, {"_r": 1, "step_num": 3}),
        ("python", "train", 100, 100, {"_r": 1, "step_num": 4}),
        ("tf_Compute/1", "model/a/Relu:Relu", 180, 100),
    ]), "t")
    assert [s.compute_ps for s in run.steps.steps] == [30_000_000, 20_000_000]


def test_keras3_profiled_batch_and_step_functions_are_step_sources():
    k3 = analyze_trace(tiny_trace([("python", "Profiled batch", 0, 10, {"step_num": 2}),
                                   ("python", "Profiled batch", 20, 10, {"step_num": 3})]), "t")
    assert k3.steps.count == 2 and "Profiled batch" in k3.steps.source
    fn = analyze_trace(tiny_trace([("python", "one_step_on_data_distributed", 0, 10),
                                   ("python", "one_step_on_data_distributed", 20, 10),
                                   ("python", "FunctionRun", 0, 10, {"_r": 1})]), "t")
    assert fn.steps.count == 2 and fn.steps.source == "function 'one_step_on_data_distributed'"


def test_xprof_thresholds_decide_input_bound():
    def run_with_input(us):
        return analyze_trace(tiny_trace([
            ("python", "train", 0, 100, {"_r": 1}),
            ("tf_Compute/1", "model/a/MatMul:MatMul", 0, 100 - us),
            ("tf_Compute/1", "IteratorGetNext:IteratorGetNext", 100 - us, us),
        ]), "t").verdict
    assert run_with_input(60).bound == "input" and "Highly" in run_with_input(60).text
    # Past XProf's 20% bar but smaller than compute: the larger part leads, input comes second.
    both = run_with_input(20)
    assert both.bound == "compute" and both.text.startswith("Compute-bound")
    assert "highly input-bound as well (20%" in both.text
    moderate = run_with_input(6)
    assert moderate.bound == "compute" and "moderately input-bound" in moderate.text
    assert "input" not in run_with_input(2).text.split(":")[1]


def test_named_user_regions_get_their_share_of_step_time():
    events = [("python", "train", 0, 100, {"_r": 1, "step_num": 0}),
              ("python", "load_image", 5, 40),
              ("tf_Compute/1", "model/a/MatMul:MatMul", 50, 30)]
    run = analyze_trace(tiny_trace(events, sidecar={"regions": ["load_image"]}), "t")
    region = [b for b in run.bottlenecks if b.kind == "user_region"]
    assert region and region[0].share == pytest.approx(0.4) and "load_image" in region[0].title
    other = [b for b in run.bottlenecks if b.kind == "host_overhead"]
    assert other and other[0].share == pytest.approx(0.3)


def test_scenario2_image_loading_is_measured_and_small_as_the_ground_truth_says():
    truth = GROUND_TRUTH["predict_loop"]["light"]
    assert truth["load_ms"] < 0.05 * truth["predict_ms"]
    run = _run("predict_loop", "light")
    assert not [b for b in run.bottlenecks if b.kind == "user_region"]  # under 3% of step time
    assert "tracing its dataset functions" in run.bottlenecks[0].evidence


def test_jax_tpu_trace_steps_are_the_repeated_xla_module_runs():
    from conftest import PUBLIC
    import os
    run = analyze(os.path.join(PUBLIC, "openxla__xprof", "xprof", "convert", "test_xplanes")).runs[0]
    assert run.steps.count == 100 and run.steps.source == "device module 'jit_f' (/device:TPU:0)"
    assert run.breakdown.compute > 0.9 and run.verdict.bound == "compute"
    assert run.categories[0].category == "transfer"  # the async copies dominate this inference test


def test_gpu_trace_matches_xprof_step_time_and_input_share():
    """XProf's overview of this trace (xprof 2.24): one step of 21.31 ms, 14.88 ms device compute,
    0.0 ms input, 6.43 ms 'all others'. A step is its longest span over the devices' step lines."""
    from conftest import PUBLIC
    import os
    run = analyze(os.path.join(PUBLIC, "tensorflow__profiler")).runs[0]
    assert run.steps.source.startswith("device step line") and run.steps.count == 1
    assert run.steps.mean_ps / 1e9 == pytest.approx(21.31, rel=0.05)
    assert abs(run.breakdown.input - 0.0) <= 0.05
    assert run.breakdown.compute == pytest.approx(14.88 / 21.31, abs=0.05)
    step = run.steps.steps[0]
    assert step.device_busy_ps >= step.compute_ps > 0 and step.copy_ps > 0
    # The device idles 30% of the step; the host waits for input for part of it, and says so.
    kinds = [b.kind for b in run.bottlenecks]
    assert "device_idle" in kinds and "input" in kinds
    wait = next(b for b in run.bottlenecks if b.kind == "input")
    assert "waits in IteratorGetNext" in wait.evidence and "Generator" in wait.title
    assert run.mode == "train"  # gradients and optimizer updates in its ops


