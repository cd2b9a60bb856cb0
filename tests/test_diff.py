"""`tftrace diff`: significance, breakdown and op deltas, matching, and bad input per side."""

from __future__ import annotations

import json
import math

import pytest

import tftrace
from conftest import BROKEN, run_cli, sample
from tftrace.analysis.compare.runs import op_key
from tftrace.analysis.compare.significance import compare_steps

FLATTEN, GAP = sample("augment", "flatten"), sample("augment", "gap")


def test_scenario1_head_swap_is_not_faster_because_input_dominates():
    d = tftrace.diff(FLATTEN, GAP, top=None)
    assert not d.step_time.significant and "Mann-Whitney" in d.step_time.test
    cats = {r.name: r for r in d.categories}
    assert cats["matmul"].delta_ps < 0 and cats["matmul"].candidate_ps < cats["matmul"].baseline_ps
    ops = {(r.name, r.type): r for r in d.ops}
    assert ops[("gap/Mean", "Mean")].status == "added"
    removed = [r for r in d.ops if r.status == "removed"]
    # TF times Flatten's reshape work as its shape ops (the Reshape kernel itself is too cheap to
    # be traced at the default host level): all of it is gone in the candidate.
    assert removed and all(r.name.startswith("flatten/") and r.category == "reshape" for r in removed)
    assert any(r.name.startswith("flatten/Reshape") for r in removed)
    assert "input dominates both runs" in d.summary and "not faster" in d.summary
    assert d.breakdown["compute"].candidate_ps < d.breakdown["compute"].baseline_ps


def test_scenario3_dropout_at_inference_is_no_significant_change():
    d = tftrace.diff(sample("dropout", "plain"), sample("dropout", "dropout"), top=None)
    assert not d.step_time.significant
    assert d.step_time.baseline_steps == d.step_time.candidate_steps == 15
    assert not any(r.name == "dropout" and r.status == "added" and r.candidate_ps > 0.01 * d.step_time.baseline_ps
                   for r in d.categories)
    assert d.summary.startswith("No significant change")


def test_a_run_against_itself_moves_nothing():
    d = tftrace.diff(FLATTEN, FLATTEN)
    assert not d.step_time.significant and d.step_time.delta_pct == 0
    assert d.ops == () and d.layers == () and d.categories == ()
    assert all(p.delta == 0 for p in d.breakdown.values())


def test_ops_match_across_model_prefixes_and_suffixes():
    assert op_key("StatefulPartitionedCall/functional_1/dense_1/MatMul") == op_key("functional_2/dense/MatMul")
    assert op_key("gradient_tape/functional_1/dense_1/MatMul") == "gradient_tape/dense/MatMul"
    assert op_key("adam/Sub_3") == op_key("StatefulPartitionedCall/adam/Sub_3") == "adam/Sub"


def test_significance_needs_enough_steps_and_detects_a_real_shift():
    few = compare_steps([1, 2, 3], [10, 11, 12])
    assert not few.significant and "too few steps" in few.test and math.isnan(few.p_value)
    shifted = compare_steps([10, 11, 12, 10, 11, 12], [20, 21, 22, 20, 21, 22])
    assert shifted.significant and shifted.p_value < 0.05
    same = compare_steps([10, 11, 12, 13, 14], [10, 11, 12, 13, 14])
    assert not same.significant


def test_cli_json_follows_the_contract_and_saved_reports_are_accepted(tmp_path):
    saved = tmp_path / "flatten.json"
    run_cli("analyze", FLATTEN, "-f", "json", "-o", str(saved), "--no-tensorboard", check=True)
    data = json.loads(run_cli("diff", str(saved), GAP, "-f", "json", check=True).stdout)
    for key in ("schema_version", "baseline", "candidate", "step_time", "breakdown", "ops", "layers",
                "categories", "summary"):
        assert key in data, key
    assert {"baseline_ms", "candidate_ms", "delta_pct", "significant"} <= set(data["step_time"])
    assert set(data["breakdown"]) == {"input", "compute", "host_overhead", "idle"}
    assert all({"baseline", "candidate", "delta"} <= set(v) for v in data["breakdown"].values())
    assert all({"category", "baseline_ms", "candidate_ms", "delta_ms"} <= set(c) for c in data["categories"])
    assert data["notes"] and "saved report" in data["notes"][0]


def test_cli_text_and_markdown():
    text = run_cli("diff", FLATTEN, GAP, check=True).stdout
    assert "No significant change" in text and "Categories (ms per step)" in text
    md = run_cli("diff", FLATTEN, GAP, "-f", "markdown", check=True).stdout
    assert md.startswith("# tftrace diff") and "| name | type |" in md


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_bad_input_names_the_side(side, tmp_path):
    bad = {"missing": str(tmp_path / "nope"), "broken": BROKEN}
    for label, path in bad.items():
        args = [path, GAP] if side == "baseline" else [GAP, path]
        proc = run_cli("diff", *args)
        assert proc.returncode == 2, label
        err = proc.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in proc.stderr, err
        assert err.startswith(f"tftrace: error: {side}: "), err
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    proc = run_cli("diff", GAP, str(junk)) if side == "candidate" else run_cli("diff", str(junk), GAP)
    assert proc.returncode == 2 and f"{side}: " in proc.stderr and "not valid JSON" in proc.stderr


def test_steps_are_compared_less_the_profilers_own_time_as_each_report_judges_them():
    """A stock H200 capture with JAX's Python tracer on: the diff's steps are the report's judged
    ones (the traced less the tracer's estimated cost), and a note says so."""
    path = sample("gpu_jax", "keras_run_eagerly")
    run = tftrace.analyze(path).runs[0]
    assert 0 < run.steps.median_less_profiler_ps < run.steps.median_ps
    d = tftrace.diff(path, path)
    assert d.step_time.baseline_ps == d.step_time.candidate_ps == run.steps.median_less_profiler_ps
    judged = [s.dur_ps - s.profiler_ps for s in run.steps.steps]
    assert [s.dur_ps for s in d.baseline_step_times] == judged
    assert any(n.startswith("steps compared less the profiler's own time") for n in d.notes), d.notes
