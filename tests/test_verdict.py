"""The verdict: the largest part of the step, unless an input pipeline that works beside the
model's ops sets the pace: its work fills the cores, or the step waits for it though it works
through most of the step."""

from __future__ import annotations

from tftrace.analysis.findings.pipeline import maps_batches
from tftrace.analysis.pipeline_load import PipelineLoad
from tftrace.analysis.verdict import paced, verdict
from tftrace.model.report import Breakdown

MS = 10**9
# A heavy tf.data map on 2 cores, as test_confirm's serial_map program traces: the step (16.6 ms)
# waits 39% for input, its ops take 42%; the pipeline does 31 ms of CPU work a step.
CONTENDED = Breakdown(input=0.39, compute=0.42, host_overhead=0.18, idle=0.01)


def load(busy=0.99, cpu_ms=31.0, model_ms=10.0, cores=2, wall_ms=16.6) -> PipelineLoad:
    return PipelineLoad(busy, int(cpu_ms * MS), int(model_ms * MS), cores, int(wall_ms * MS))


def test_a_pipeline_whose_work_fills_the_cores_sets_the_pace():
    v = verdict(CONTENDED, True, load=load())
    assert v.bound == "input" and v.text.startswith("Highly input-bound")
    assert "93% of the 2 cores' time" in v.text and "(76% of the CPU work" in v.text
    # Waiting less than XProf's bar, it still sets the pace: no longer "highly" input-bound.
    light_wait = Breakdown(input=0.18, compute=0.51, host_overhead=0.30, idle=0.01)
    assert verdict(light_wait, True, load=load(busy=0.0)).text.startswith("Input-bound: ")


def test_a_pipeline_that_works_through_the_step_and_is_still_waited_for_sets_the_pace():
    v = verdict(CONTENDED, True, load=load(busy=0.99, cpu_ms=4.0))  # Python-heavy: little CPU work
    assert v.bound == "input" and "works through 99%" in v.text and "will not make steps faster" in v.text


def test_a_pipeline_that_rests_leaves_the_largest_part_in_the_lead():
    assert verdict(CONTENDED, True, load=load(busy=0.5, cpu_ms=4.0)).bound == "compute"
    assert verdict(CONTENDED, True).bound == "compute"  # no pipeline work on the host
    on_many_cores = load(cores=32)
    assert verdict(CONTENDED, True, load=on_many_cores).bound == "input"  # still waited for, working 99%
    assert verdict(CONTENDED, True, load=load(busy=0.6, cores=32)).bound == "compute"


def test_the_pace_rules_need_a_host_run():
    assert paced(CONTENDED, False, load()) == "cores"
    assert paced(CONTENDED, True, load()) == ""  # with a device the parts are the device's
    assert verdict(CONTENDED, True, device=True, load=load()).bound == "compute"
    light_wait = Breakdown(input=0.15, compute=0.7, host_overhead=0.15)
    assert paced(light_wait, False, load(cpu_ms=4.0)) == ""  # under XProf's bar, cores not filled


def test_a_map_over_whole_batches_is_told_from_one_per_element():
    assert maps_batches(["Iterator::Root::ParallelMapV2::BatchV2::TensorSlice"])
    assert maps_batches(["Iterator::Root::Prefetch::MapV2[0]::PaddedBatchV2"])
    assert not maps_batches(["Iterator::Root::Prefetch::BatchV2::ParallelMapV2::TensorSlice"])
    assert not maps_batches(["ParallelMapV2::BatchV2"])  # not an iterator's stage path


def test_steps_left_out_are_said_after_the_bound_whatever_the_sentence():
    """The verdict is composed with what it leaves out (a call's start-up step), never edited after."""
    why = "step 0 left out: a call's start-up, building its input iterator"
    for b, lead in ((CONTENDED, "Compute-bound"), (Breakdown(input=0.5, compute=0.3, host_overhead=0.2), "Highly input-bound")):
        plain, steady = verdict(b, True), verdict(b, True, steady=why)
        assert plain.bound == steady.bound and plain.text.startswith(lead + ": ")
        assert steady.text == plain.text.replace(lead + ":", f"{lead} in the steady state ({why}):", 1)
    assert verdict(CONTENDED, False, steady=why).text == "no step time could be measured in this trace"
