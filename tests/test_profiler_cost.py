"""The profiler's own time by source, on hand-built traces: the stack sampler's ticks."""

from __future__ import annotations

import dataclasses

from tiny import tiny_trace
from tftrace.analysis.profiler_cost import SAMPLER
from tftrace.analysis.run import analyze_trace

START_NS = 1_000_000_000


def _run(ticks_us, busy_ns):
    # Four 90 us steps 10 us apart, each mostly Python (host overhead) around a 20 us op.
    events = [e for i in range(4) for e in (("python", "train", 100 * i, 90, {"_r": 1, "step_num": i}),
                                            ("tf_Compute/1", "model/a/MatMul:MatMul", 100 * i + 60, 20))]
    samples = {"version": 1, "clock": "unix_ns", "interval_s": 0.00001, "sampler_busy_ns": busy_ns,
               "frames": [["train.py", 1, "loop"]], "stacks": [[0]], "threads": {"1": "MainThread"},
               "ticks": [START_NS + round(t * 1000) for t in ticks_us],
               "samples": [[i, 1, 0, 1] for i in range(len(ticks_us))]}
    trace = dataclasses.replace(tiny_trace(events), python_samples=samples, profile_start_ns={"tiny": START_NS})
    return analyze_trace(trace, "t")


def test_the_samplers_ticks_inside_steps_and_gaps_are_the_profilers():
    # Ticks at 5 and 205 us (steps 0 and 2), 95 us (the gap before step 1), and one after the steps.
    run = _run([5, 95, 205, 500], busy_ns=4 * 8_000)  # 8 us a tick
    rows = {r.number: r.profiler_ps for r in run.steps.steps}
    assert rows == {0: 8_000_000, 1: 0, 2: 8_000_000, 3: 0}, rows
    (note,) = [n for n in run.notes if n.startswith(SAMPLER)]
    assert "4 ticks in the window at ~8 us each, timed by the sampler" in note and "left out of the steps judged" in note
    # Its ticks have a note of their own: the capture's note does not count the sampler again.
    assert not any("the stack sampler" in n for n in run.notes if n.startswith("the capture's own time"))
    assert run.steps.mean_less_profiler_ps == run.steps.mean_ps - 4_000_000
    assert any(o.owner == f"Profiler {SAMPLER}" for o in run.owners)


def test_a_sampler_under_one_percent_of_the_steps_is_left_in_them():
    run = _run([5, 205], busy_ns=2 * 1_000)  # 1 us a tick: 0.5% of 400 us
    assert run.steps.profiler_ps == 0 and not [n for n in run.notes if n.startswith(SAMPLER)]
    (note,) = [n for n in run.notes if n.startswith("the capture's own time")]
    assert "the stack sampler" in note and "left in" in note


def _torch_run(tmp_path, backward_in):
    """Four 200 us ProfilerStep ranges of 40 one-us aten ops each, the steps in `backward_in` with
    autograd's backward nodes among their ops, as torch.profiler writes them."""
    import json
    events = []
    for i in range(4):
        at = 1000 + 250 * i
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                       "ts": at, "dur": 200})
        for k in range(40):
            name = "autograd::engine::evaluate_function: AddmmBackward0" if i in backward_in and k % 4 == 0 else "aten::add"
            events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": at + 2 + 4 * k, "dur": 1})
    path = tmp_path / "worker.1.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return str(path)


def test_pytorchs_events_in_a_step_that_trains_cost_more_than_in_one_that_does_not(tmp_path):
    from tftrace.analysis.profiler_cost import PS_PER_OP_EVENT, PS_PER_TRAINING_EVENT, TORCH_EVENTS
    from tftrace.api import explore
    a = explore(_torch_run(tmp_path, backward_in={1, 3}))
    (source,) = [s for s in a.profiler.sources if s.owner == TORCH_EVENTS]
    assert list(source.step_ps) == [40 * PS_PER_OP_EVENT, 40 * PS_PER_TRAINING_EVENT] * 2, source.step_ps
    assert "40 events a step at ~0.25-0.38 us each, estimated" == source.how


def _tf_calls_run(devices=False):
    """Four 100 us steps, each one tf.function call and five eager ops on the Python thread around a
    10 us op; with `devices`, a GPU stream beside them."""
    events = []
    for i in range(4):
        at = 120 * i
        events += [("python", "train", at, 100, {"_r": 1, "step_num": i}),
                   ("python", "EagerLocalExecute: __inference_train_step_41", at + 5, 30),
                   ("tf_Compute/1", "model/dense/MatMul:MatMul", at + 10, 10)]
        events += [("python", "EagerLocalExecute: AddV2", at + 40 + 10 * k, 4) for k in range(5)]
        if devices:
            events.append((("/device:GPU:0", "Stream #7(Compute)"), "gemm", at + 12, 5))
    return analyze_trace(tiny_trace(events), "t")


def test_tensorflows_tf_function_calls_and_eager_ops_are_each_priced_as_a_whole():
    from tftrace.analysis.profiler_cost import PS_PER_TF_EAGER_OP, PS_PER_TF_FUNCTION_CALL, TF_CALLS
    run = _tf_calls_run()
    want = PS_PER_TF_FUNCTION_CALL + 5 * PS_PER_TF_EAGER_OP  # 24 us of a step's 90 us host overhead
    assert [s.profiler_ps for s in run.steps.steps] == [want] * 4
    (note,) = [n for n in run.notes if n.startswith(TF_CALLS)]
    assert "1.0 tf.function calls and 5.0 eager ops a step at ~10 and ~2.8 us each, estimated" in note, note
    assert any(o.owner == f"Profiler {TF_CALLS}" for o in run.owners)
    # With a device the host's recording lengthens no step the device paces: none is estimated.
    assert not [n for n in _tf_calls_run(devices=True).notes if n.startswith(TF_CALLS)]


def test_a_run_eagerly_fits_eager_ops_are_the_profilers_in_part():
    """The zoo's run_eagerly capture (plain profiler start/stop around Keras fit, run_eagerly=True):
    every op an eager call, each with its EagerLocalExecute event."""
    import os
    from tftrace.analysis.profiler_cost import TF_CALLS
    from tftrace.api import analyze
    (run,) = analyze(os.path.join(os.path.dirname(__file__), "..", "sample_traces", "zoo", "run_eagerly")).runs
    (note,) = [n for n in run.notes if n.startswith(TF_CALLS)]
    assert "0.0 tf.function calls and 277.0 eager ops a step" in note, note
    assert run.verdict.bound == "host_overhead" and run.steps.profiler_ps > 0
