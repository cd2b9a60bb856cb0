"""The zoo of planted causes (sample_traces/zoo): each slow program's diagnosis names its cause
among the top three bottlenecks, with the cause's own fix and a projected step time within 2x
of the gain timed without the profiler (ground_truth.json, by sample_traces/capture_zoo.py)."""

from __future__ import annotations

import json
import os
import re

import pytest

from conftest import sample
from tftrace import analyze

TRUTH = json.load(open(sample("zoo", "ground_truth.json")))
# Issue 46's projection programs (set "projections") have their own tests: tests/test_zoo_projections.py.
PROGRAMS = sorted(k for k, v in TRUTH.items() if isinstance(v, dict) and v.get("set") != "projections")
_REPORTS: dict = {}
# Causes whose twin changes the model's own arithmetic (a layer made smaller): the trace says what
# the layer costs and, with FLOPs and peaks, how far from its roofline, not what a smaller model
# would cost, so the projection rests on the roofline or says it cannot say.
MODEL_ARITHMETIC = ("layer",)


def _run(name: str):
    if name not in _REPORTS:
        _REPORTS[name] = analyze(sample("zoo", name)).runs[0]
    return _REPORTS[name]


def test_the_zoo_holds_at_least_ten_causes_each_fixed_by_its_twin():
    assert len(PROGRAMS) >= 10
    assert len({TRUTH[p]["cause"] for p in PROGRAMS}) >= 8
    for name in PROGRAMS:
        assert TRUTH[name]["ratio"] < 0.8, name  # the fix really makes the step faster
    stock = [p for p in PROGRAMS if "tftrace" not in TRUTH[p]["how"] and "TraceCallback" not in TRUTH[p]["how"]]
    assert len(stock) >= 3  # captured the ways users capture: plain start/stop, Keras' TensorBoard callback


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_verdict_is_the_bound_the_program_is_in_truth(name):
    run = _run(name)
    assert run.verdict.bound == TRUTH[name]["bound"], (run.verdict.text, run.breakdown)


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_cause_is_named_in_the_top_three_with_a_true_projection(name):
    truth = TRUTH[name]
    run = _run(name)
    top = run.bottlenecks[:3]
    named = [b for b in top if b.kind == truth["cause"]]
    assert named, [(b.kind, b.title) for b in run.bottlenecks]
    b = named[0]
    words = b.title + " " + b.evidence + " " + b.recommendation
    for word in truth.get("names", []):
        assert word in words, (word, words)
    projected = b.step_if_removed_ps / b.step_ps
    if truth["cause"] in MODEL_ARITHMETIC:  # a smaller model is the user's call: never projected away
        assert b.projection_basis in ("roofline", "none") and b.projection_how, b
        return
    assert b.projection_basis not in ("", "none"), b
    assert 0.5 <= projected / truth["ratio"] <= 2.0, (projected, truth["ratio"])


@pytest.mark.parametrize("name", PROGRAMS)
def test_evidence_has_no_empty_item_and_causes_never_share_a_fix(name):
    run = _run(name)
    for b in run.bottlenecks:
        assert b.facts or b.kind == "straggler"
        assert all(f.label.strip() for f in b.facts)
        assert not re.search(r"(^|[;,]\s*|\(\s+)[;,)]|\(\s*[;,]|:\s*(;|$)", b.evidence), b.evidence  # no empty clause or value
    by_fix: dict = {}
    for b in run.bottlenecks:
        by_fix.setdefault(b.recommendation, set()).add(b.kind)
    assert all(len(kinds) == 1 for kinds in by_fix.values()), by_fix


def test_pipeline_advice_never_repeats_what_the_pipeline_does():
    records = next(b for b in _run("tfrecord_nocache").bottlenecks if b.kind == "input")
    assert "cache()" in records.recommendation
    assert "num_parallel_calls" not in records.recommendation and "prefetch(" not in records.recommendation
    assert "a parallel map" in records.evidence and "prefetch" in records.evidence


def test_fixes_name_the_mode_that_ran():
    eager = next(b for b in _run("run_eagerly").bottlenecks if b.kind == "eager")
    assert "run_eagerly=False" in eager.recommendation and "predict" not in eager.recommendation
    for name in ("retracing", "step_python"):
        run = _run(name)
        assert run.steps.source.startswith("function 'train_step'")
        assert not any("model.fit" in b.title + b.recommendation for b in run.bottlenecks)


def test_a_custom_loop_under_plain_start_stop_has_one_step_per_call():
    run = _run("step_python")
    assert run.steps.count == 10 and run.verdict.bound == "idle"
    assert "Python between calls" in run.verdict.text or "between calls" in run.verdict.text


def test_the_json_report_carries_structured_evidence(tmp_path):
    report = analyze(sample("zoo", "retracing"))
    b = report.to_dict()["runs"][0]["bottlenecks"][0]
    assert b["kind"] == "retracing" and {"label", "value", "unit"} <= set(b["facts"][0])
    assert type(report).from_dict(report.to_dict()) == report
    assert os.path.isdir(sample("zoo", "retracing"))
