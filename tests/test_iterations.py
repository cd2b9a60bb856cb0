"""Steps as the user's iterations (framework work joins its call), device work linked to the step
that launched it, and the mode read from the trace alone: on tiny hand-built traces."""

from __future__ import annotations

import pytest

from tftrace.analysis.profiler_cost import PS_PER_TF_EAGER_OP
from tftrace.analysis.run import analyze_trace
from tiny import tiny_trace

GPU = ("/device:GPU:0", "Stream #7(Compute)")
COPY = ("/device:GPU:0", "Stream #8(MemcpyH2D)")


def test_framework_work_around_each_call_joins_it_and_only_quiet_time_is_idle():
    # Per iteration: 10 us of pipeline building, the 5 us call, 3 us of cleanup, then 10 us of the
    # user's own Python (no events) before the next iteration.
    events = []
    for i in range(3):
        t = i * 30
        events += [("python", "EagerLocalExecute: MakeIterator", t, 6),
                   ("python", "EagerLocalExecute: MapDataset", t + 7, 3),  # a 1 us Python gap before it
                   ("python", "one_step_on_data_distributed", t + 11, 5),
                   ("tf_Compute/1", "model/dense/MatMul:MatMul", t + 12, 3),
                   ("python", "EagerLocalExecute: DeleteIterator", t + 17, 3)]
    run = analyze_trace(tiny_trace(events), "t")
    steps = run.steps.steps
    assert run.steps.count == 3 and [s.dur_ps for s in steps] == [20_000_000] * 3
    assert [s.idle_ps for s in steps] == [0, 10_000_000, 10_000_000]
    # The breakdown judges the steps less the profiler: its events for the three eager ops a step.
    assert [s.profiler_ps for s in steps] == [3 * PS_PER_TF_EAGER_OP] * 3
    assert steps[1].compute_ps == 3_000_000 and run.breakdown.idle == pytest.approx(20 / (80 - 3 * 8.4), abs=1e-6)
    assert run.mode == "predict" and run.mode_source == "Keras function names"
    assert run.bottlenecks[0].kind == "per_call_overhead"


def test_a_short_python_gap_before_the_first_call_is_not_a_boundary():
    events = [("python", "EagerLocalExecute: MakeIterator", 0, 4), ("python", "one_step_on_data_distributed", 5, 5),
              ("python", "one_step_on_data_distributed", 30, 5)]
    run = analyze_trace(tiny_trace(events), "t")
    assert run.steps.steps[0].start_ps == 0  # the 1 us gap is shorter than the 20 us boundary
    assert run.steps.steps[0].dur_ps == 10_000_000 and run.steps.steps[1].idle_ps == 20_000_000


def test_device_work_joins_the_step_that_launched_it_by_correlation_id():
    # The host step returns at 10 us; the kernel it launched runs from 12 to 40 us; the next
    # step's kernel is launched at 50 us.
    events = [("python", "train", 0, 10, {"_r": 1, "step_num": 0}),
              ("python", "cuLaunchKernel", 2, 1, {"correlation_id": 101}),
              ("python", "cuLaunchKernel", 4, 1, {"correlation_id": 102}),
              ("python", "train", 50, 10, {"_r": 1, "step_num": 1}),
              ("python", "cuLaunchKernel", 52, 1, {"correlation_id": 103}),
              (COPY, "MemcpyH2D", 5, 5, {"correlation_id": 102}),
              (GPU, "model/dense/MatMul:MatMul", 12, 28, {"correlation_id": 101}),
              (GPU, "model/dense/MatMul:MatMul", 54, 10, {"correlation_id": 103})]
    run = analyze_trace(tiny_trace(events), "t")
    first, second = run.steps.steps
    assert first.dur_ps == 40_000_000 and second.dur_ps == 14_000_000  # to the last kernel, not the host return
    assert first.compute_ps == 28_000_000 and first.input_ps == 5_000_000 and first.copy_ps == 5_000_000
    assert first.host_overhead_ps == 7_000_000 and first.device_busy_ps == 33_000_000
    assert second.idle_ps == 10_000_000


def test_a_kernel_whose_launch_is_outside_every_step_counts_for_none():
    events = [("python", "train", 0, 10, {"_r": 1, "step_num": 0}),
              ("python", "cuLaunchKernel", 20, 1, {"correlation_id": 5}),
              (GPU, "model/dense/MatMul:MatMul", 4, 4, {"correlation_id": 5})]
    run = analyze_trace(tiny_trace(events), "t")
    assert run.steps.steps[0].compute_ps == 0 and run.steps.steps[0].dur_ps == 10_000_000


@pytest.mark.parametrize("ops,mode", [
    (["model/dense/MatMul:MatMul", "gradient_tape/model/dense/MatMul:MatMul", "adam/Sub:Sub"], "train"),
    (["model/dense/MatMul:MatMul", "compile_loss/sparse_categorical_crossentropy/Sum:Sum"], "evaluate"),
    (["model/dense/MatMul:MatMul"], "evaluate"),  # Keras 3's fit/evaluate function with no loss: not a guess of train
])
def test_keras3_fit_and_evaluate_share_a_function_and_the_ops_tell_them_apart(ops, mode):
    events = [("python", "multi_step_on_iterator", 0, 10), ("python", "multi_step_on_iterator", 20, 10)]
    events += [("tf_Compute/1", op, 1 + i, 1) for i, op in enumerate(ops)]
    run = analyze_trace(tiny_trace(events), "t")
    assert run.mode == mode and run.mode_source == "Keras function names and the ops inside them"


def test_a_custom_training_loop_is_train_from_its_gradients():
    events = [("python", "train_step", 0, 10, {"_r": 1, "step_num": 0}),
              ("tf_Compute/1", "gradient_tape/model/dense/MatMul:MatMul", 1, 5)]
    run = analyze_trace(tiny_trace(events), "t")
    assert run.mode == "train" and run.mode_source.startswith("ops")
