"""The verdict: the largest part of the step, unless an input pipeline that works beside the
model's ops sets the pace (it makes steps wait although the model's ops take longer)."""

from __future__ import annotations

from tftrace.analysis.findings.pipeline import maps_batches
from tftrace.analysis.verdict import paced, verdict
from tftrace.report import Breakdown

# A heavy tf.data map on 2 cores, as test_confirm's serial_map program traces: the step waits
# 39% for input while the pipeline's threads work through 99% of it; its ops take 42%.
CONTENDED = Breakdown(input=0.39, compute=0.42, host_overhead=0.18, idle=0.01)


def test_a_pipeline_working_through_the_step_sets_its_pace():
    v = verdict(CONTENDED, True, pipeline_busy=0.99)
    assert v.bound == "input"
    assert "works through 99%" in v.text and "will not make steps faster" in v.text


def test_a_pipeline_that_rests_leaves_the_largest_part_in_the_lead():
    assert verdict(CONTENDED, True, pipeline_busy=0.5).bound == "compute"
    assert verdict(CONTENDED, True).bound == "compute"  # not measured: the largest part


def test_the_pace_rule_needs_real_waiting_and_a_host_run():
    light_wait = Breakdown(input=0.15, compute=0.7, host_overhead=0.15)
    assert not paced(light_wait, False, 0.99)  # under XProf's highly-input bar
    assert not paced(CONTENDED, True, 0.99)  # with a device the parts are the device's
    assert verdict(CONTENDED, True, device=True, pipeline_busy=0.99).bound == "compute"


def test_a_map_over_whole_batches_is_told_from_one_per_element():
    assert maps_batches(["Iterator::Root::ParallelMapV2::BatchV2::TensorSlice"])
    assert maps_batches(["Iterator::Root::Prefetch::MapV2[0]::PaddedBatchV2"])
    assert not maps_batches(["Iterator::Root::Prefetch::BatchV2::ParallelMapV2::TensorSlice"])
    assert not maps_batches(["ParallelMapV2::BatchV2"])  # not an iterator's stage path
