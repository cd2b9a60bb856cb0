"""tftrace.explore(): one run's analyses piece by piece, each computed once, agreeing with the
report tftrace.analyze() makes of the same run."""

from __future__ import annotations

import pytest

import tftrace
from conftest import sample


@pytest.fixture(scope="module")
def run():
    return tftrace.explore(sample("gpu_jax", "keras_compute"))


def test_pieces_agree_with_the_report(run):
    report = tftrace.analyze(sample("gpu_jax", "keras_compute"), top=None).runs[0]
    assert run.steps.count == report.steps.count == 7
    assert run.breakdown == report.breakdown
    assert [(r.layer, r.self_ps) for r in run.layers] == [(r.layer, r.self_ps) for r in report.layers]
    assert [(r.category, r.self_ps) for r in run.categories] == [(r.category, r.self_ps) for r in report.categories]
    assert run.report.bottlenecks == report.bottlenecks and run.report.ops == report.ops
    assert run.findings == report.bottlenecks and run.python.rows


def test_each_piece_is_computed_once(run):
    assert run.ops is run.ops and run.timeline is run.timeline and run.python is run.python


def test_the_step_frame_has_a_row_per_step_and_its_parts(run):
    frame = run.step_frame()
    assert len(frame) == run.steps.count
    parts = frame[["input_ms", "compute_ms", "overhead_ms"]].sum(axis=1)
    assert (abs(parts - frame["duration_ms"]) < 1e-6).all()


def test_an_unknown_host_is_one_clear_error():
    with pytest.raises(tftrace.TftraceError, match="no host 'nope'"):
        tftrace.explore(sample("gpu_jax", "keras_compute"), host="nope")
