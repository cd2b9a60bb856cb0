"""`tftrace diff --fail-if-slower PCT`: the CI speed gate's decision, exit codes and evidence."""

from __future__ import annotations

import json
import math

import pytest

import tftrace
from conftest import run_cli, sample
from tftrace.analysis.compare.gate import parse_limit, speed_gate
from tftrace.api import analyze
from tftrace.model.diff_report import StepTimeDelta
from tftrace.model.errors import TftraceError

FLATTEN, GAP = sample("augment", "flatten"), sample("augment", "gap")
PLAIN, DROPOUT = sample("dropout", "plain"), sample("dropout", "dropout")


def _saved(tmp_path, path: str, name: str, scale: float = 1.0) -> str:
    """A saved JSON report of a real run; with `scale`, every step time (and the mean and
    median) multiplied by it: the same run made uniformly slower, a slowdown that is certainly
    significant. Only step times change: the gate judges nothing else."""
    data = analyze(path).to_dict()
    steps = data["runs"][0]["steps"]
    for key in ("mean_ps", "median_ps"):
        steps[key] = round(steps[key] * scale)
    for row in steps["steps"]:
        row["dur_ps"] = round(row["dur_ps"] * scale)
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return str(out)


def _gate_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_significant_slowdown_above_the_limit_exits_1_with_the_reason_and_json_decision(tmp_path):
    slower = _saved(tmp_path, FLATTEN, "flatten_x2", scale=2.0)
    proc = run_cli("diff", FLATTEN, slower, "--fail-if-slower", "10", "-f", "json")
    assert proc.returncode == 1, proc.stderr
    line = _gate_line(proc)
    assert line.startswith("tftrace: speed gate failed: ") and "+100.0%" in line and "10% limit" in line
    gate = json.loads(proc.stdout)["gate"]
    assert gate["failed"] is True and gate["fail_if_slower_pct"] == 10.0 and gate["reason"] in line
    assert json.loads(proc.stdout)["step_time"]["significant"] is True


def test_a_real_pair_that_is_significantly_slower_fails(tmp_path):
    """Two different real runs (a 15-step predict loop, 8 ms a step, then a 6-step training
    window, 18 ms a step): a real, large, significant slowdown."""
    proc = run_cli("diff", PLAIN, FLATTEN, "--fail-if-slower", "25%")
    assert proc.returncode == 1
    assert "significant (Mann-Whitney U" in _gate_line(proc) and proc.stdout.startswith("Baseline")


def test_a_significant_slowdown_within_the_limit_passes(tmp_path):
    d = tftrace.diff(FLATTEN, _saved(tmp_path, FLATTEN, "flatten_x2", scale=2.0), fail_if_slower=150)
    assert d.step_time.significant and not d.gate.failed
    assert "within the 150% limit" in d.gate.reason


def test_a_large_change_that_is_not_significant_passes():
    """The Flatten -> GAP head swap: +15% median step time, but within step-to-step noise."""
    proc = run_cli("diff", FLATTEN, GAP, "--fail-if-slower", "5", "-f", "markdown")
    assert proc.returncode == 0
    line = _gate_line(proc)
    assert line.startswith("tftrace: speed gate passed: ") and "not a significant change" in line
    assert "✅ **Speed gate (--fail-if-slower 5%) passed" in proc.stdout


def test_a_small_change_passes():
    d = tftrace.diff(PLAIN, DROPOUT, fail_if_slower=5)
    assert abs(d.step_time.delta_pct) < 5 and not d.gate.failed


def test_self_diff_passes_even_with_a_zero_limit():
    proc = run_cli("diff", FLATTEN, FLATTEN, "--fail-if-slower", "0")
    assert proc.returncode == 0 and "+0.0%" in _gate_line(proc)


def test_a_saved_json_baseline_works_and_its_steps_feed_the_test(tmp_path):
    saved = tmp_path / "baseline.json"
    run_cli("analyze", PLAIN, "-f", "json", "-o", str(saved), "--no-tensorboard", check=True)
    assert len(json.loads(saved.read_text())["runs"][0]["steps"]["steps"]) == 15
    same = tftrace.diff(str(saved), PLAIN, fail_if_slower=5)
    assert same.step_time.delta_pct == 0 and not same.gate.failed
    assert "15 vs 15 steps" in same.step_time.test and not math.isnan(same.step_time.p_value)
    proc = run_cli("diff", str(saved), FLATTEN, "--fail-if-slower", "10", "-f", "json")
    assert proc.returncode == 1 and "15 vs 6 steps" in _gate_line(proc)
    assert "saved report" in json.loads(proc.stdout)["notes"][0]


def test_without_the_option_there_is_no_gate_and_exit_is_0():
    proc = run_cli("diff", FLATTEN, GAP, "-f", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["gate"] is None and proc.stderr == ""


@pytest.mark.parametrize("bad", ["abc", "-3", "nan", "inf", ""])
def test_a_bad_limit_is_a_one_line_error(bad):
    proc = run_cli("diff", FLATTEN, GAP, f"--fail-if-slower={bad}")
    assert proc.returncode == 2 and "--fail-if-slower" in _gate_line(proc)


def test_limits_and_decisions():
    assert parse_limit("5") == parse_limit("5%") == parse_limit(" 5.0 ") == 5.0
    with pytest.raises(TftraceError):
        parse_limit("five")
    few = StepTimeDelta(10, 30, 200.0, False, "too few steps to judge (3 vs 3; ...)", float("nan"), 3, 3)
    assert not speed_gate(few, 5).failed and "not a significant change" in speed_gate(few, 5).reason
    faster = StepTimeDelta(30, 10, -66.7, True, "Mann-Whitney U", 0.01, 9, 9)
    assert not speed_gate(faster, 0).failed and "faster" in speed_gate(faster, 0).reason
    at_limit = StepTimeDelta(100, 110, 10.0, True, "Mann-Whitney U", 0.01, 9, 9)
    assert not speed_gate(at_limit, 10).failed and speed_gate(at_limit, 9.9).failed
