"""The profiler's own time by source, on hand-built traces: the stack sampler's ticks, PyTorch's and
TensorFlow's events, and the rest of each backend's recording measured against untraced turns (or,
where a device paces the steps, the priced sources scaled down to what the turns show)."""

from __future__ import annotations

import dataclasses

import pytest

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


def _measured_run(untraced, steps=6, slow=None, tf=True, events=15):
    """Steps of 100 us, 120 us apart (a turn of 120 us), each one tf.function call (10 us priced)
    around a 10 us op and `events` short executor events; `slow`: that step lasts 5 ms (a retrace);
    `untraced`: the sidecar's figure."""
    out, at = [], 0
    for i in range(steps):
        dur = 5000 if i == slow else 100
        out += [("python", "train", at, dur, {"_r": 1, "step_num": i}),
                ("tf_Compute/1", "model/dense/MatMul:MatMul", at + 10, 10)]
        out += [("tf_Compute/2", "ExecutorState::Process", at + 30 + k, 0.5) for k in range(events)]
        if tf:
            out.append(("python", "EagerLocalExecute: __inference_train_step_41", at + 5, 30))
        at += dur + 20
    return analyze_trace(tiny_trace(out, sidecar={"untraced": untraced} if untraced is not None else {}), "t")


def _rest(run):
    from tftrace.analysis.profiler_cost import TF_REST
    return [n for n in run.notes if n.startswith(TF_REST)]


def test_the_rest_of_tensorflows_recording_is_measured_against_the_untraced_turns_median():
    from tftrace.analysis.profiler_cost import PS_PER_TF_FUNCTION_CALL, TF_REST
    # Untraced, a turn takes 90 us: of the traced 120 us, 10 are the priced call and 20 the rest.
    run = _measured_run({"ms_per_step": 0.095, "steps": 40, "median_turn_ms": 0.09, "turns": 39})
    assert [s.profiler_ps for s in run.steps.steps] == [PS_PER_TF_FUNCTION_CALL + 20_000_000] * 6
    (note,) = _rest(run)
    assert "~0.020 ms" in note and "the median of the same call's 39 turns after the window, untraced" in note, note
    assert any(o.owner == f"Profiler {TF_REST}" for o in run.owners)
    (pace,) = [n for n in run.notes if n.startswith("untraced, ")]
    assert "less the profiler's time (estimated, and measured against these steps' median" in pace, pace
    # A retrace in the window is the program's: the median turn is the steady one.
    slow = _measured_run({"ms_per_step": 0.095, "steps": 40, "median_turn_ms": 0.09, "turns": 39}, steps=7, slow=3)
    assert [s.profiler_ps for s in slow.steps.steps] == [PS_PER_TF_FUNCTION_CALL + 20_000_000] * 7
    assert slow.steps.steps[3].dur_ps - slow.steps.steps[3].profiler_ps > 4_900_000_000
    # However fast the untraced turns, the calls and the rest take no more than 2 us an event the
    # step recorded (here 18: 36 us), nor more than the estimates may: 60% of host overhead.
    fast = {"ms_per_step": 0.005, "steps": 40, "median_turn_ms": 0.005, "turns": 39}
    assert [s.profiler_ps for s in _measured_run(fast).steps.steps] == [36_000_000] * 6
    assert [s.profiler_ps for s in _measured_run(fast, events=100).steps.steps] == [round(0.6 * 90_000_000)] * 6


@pytest.mark.parametrize("untraced,tf", [
    ({"ms_per_step": 0.095, "steps": 40, "median_turn_ms": 0.09, "turns": 39}, False),  # no backend's call in it
    ({"ms_per_step": 0.095, "steps": 40}, True),  # an older capture: its stretch's mean only
    ({"ms_per_step": 0.095, "steps": 10, "median_turn_ms": 0.09, "turns": 9}, True),  # too few turns
    ({"ms_per_step": 0.12, "steps": 40, "median_turn_ms": 0.115, "turns": 39}, True),  # untraced no faster
    ({"ms_per_step": 0.095, "steps": 40, "median_turn_ms": "0.09", "turns": 39}, True),
    ({"ms_per_step": 0.095, "steps": 40, "median_turn_ms": 0.09, "turns": True}, True),
    (None, True)])
def test_no_rest_is_measured_without_a_sound_untraced_median_or_on_other_backends(untraced, tf):
    assert not _rest(_measured_run(untraced, tf=tf))


def _torch_measured(tmp_path, untraced):
    """_torch_run's four 200 us steps, 250 us apart (no backward), with the sidecar's untraced figure."""
    import json
    path = _torch_run(tmp_path, backward_in=set())
    (tmp_path / "tftrace_run.json").write_text(json.dumps({"untraced": untraced}))
    return path


def test_the_rest_of_pytorchs_recording_is_measured_against_the_untraced_turns_median(tmp_path):
    """A turn of 250 us less the 40 priced events (10 us) against an untraced median of 200 us: 40 us a
    step are the rest of PyTorch's recording, and the steps judged are the untraced ones."""
    from tftrace.analysis.profiler_rest import TORCH_REST
    from tftrace.api import analyze
    (run,) = analyze(_torch_measured(tmp_path, {"ms_per_step": 0.21, "steps": 40, "median_turn_ms": 0.2,
                                                "turns": 39})).runs
    (note,) = [n for n in run.notes if n.startswith(TORCH_REST)]
    assert "~0.040 ms" in note and "the median of the same call's 39 turns after the window, untraced" in note, note
    assert [s.profiler_ps for s in run.steps.steps] == [10_000_000 + 40_000_000] * 4
    assert any(o.owner == f"Profiler {TORCH_REST}" for o in run.owners)


def test_priced_sources_a_paced_device_partly_hid_are_scaled_down_to_the_untraced_turns():
    """A JAX loop: five jitted calls of 190 us, 200 us apart, the host blocked in each while its device
    works; the capture's hooks timed 40 us a step, but the window runs only 10 us a step slower than
    the untraced steps (198 us a turn against 188): the hooks' host work was mostly hidden beside the
    busy device, so a quarter of it is the profiler's."""
    from tftrace.analysis.profiler_cost import HOOKS
    from tftrace.analysis.profiler_rest import SCALED
    events = [("python", "PjitFunction(train_step)", 200 * i, 190) for i in range(5)]
    sidecar = {"capture_cost": {"hooks_ms": 0.2, "hooks_steps": 5},
               "untraced": {"ms_per_step": 0.188, "steps": 40, "median_turn_ms": 0.05, "turns": 39}}
    run = analyze_trace(tiny_trace(events, sidecar=sidecar), "t")
    (note,) = [n for n in run.notes if n.startswith(HOOKS)]
    assert f"{SCALED} 25% of it" in note, note
    assert run.steps.profiler_ps == 10_000_000, run.steps.profiler_ps
