"""TensorBoard's own profiler (XProf) as an oracle: op self times and input share must agree."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import SAMPLE_RUNS, sample, sample_file
from tftrace.analysis.ops import op_stats
from tftrace.api import analyze
from tftrace.read.loader import load

xprof = pytest.importorskip("xprof.convert.raw_to_tool_data")


def _tool(path: str, tool: str, tmp_path) -> list:
    copy = tmp_path / os.path.basename(path)  # XProf writes cache files next to the trace
    shutil.copy(path, copy)
    data, _content_type = xprof.xspace_to_tool_data([str(copy)], tool, {})
    assert data, f"XProf produced no {tool}"
    return json.loads(data)


def _rows(table: dict) -> list[dict]:
    cols = [c["id"] for c in table["cols"]]
    return [dict(zip(cols, [c.get("v") for c in r["c"]])) for r in table["rows"]]


@pytest.mark.parametrize("scenario,variant", SAMPLE_RUNS)
def test_top_op_self_times_match_xprof_framework_op_stats(scenario, variant, tmp_path):
    xp = {(r["operation"], r["type"]): r["total_self_time"] for r in _rows(_tool(sample_file(scenario, variant),
          "framework_op_stats", tmp_path)[0]) if r["type"] != "IDLE" and r["total_self_time"] > 0}
    ours = [o for o in op_stats(load(sample(scenario, variant)), top=None).ops]
    graph_ops = [o for o in ours if not o.eager][:10]
    if not xp:
        # XProf attributes no time to eagerly executed ops; tftrace must, and does.
        assert sum(o.self_ps for o in ours if o.eager) > 0
        return
    checked = 0
    for op in graph_ops:
        key = (op.name, op.type if op.category != "input" or "::" not in op.name else "Dataset")
        assert key in xp, f"{key} missing in XProf's table"
        assert op.self_ps / 1e6 == pytest.approx(xp[key], rel=0.05), key
        checked += 1
    assert checked == min(10, len(graph_ops)) and checked >= 5


def test_xprof_sees_no_op_time_in_eager_traces_where_tftrace_does(tmp_path):
    rows = _rows(_tool(sample_file("dropout", "plain"), "framework_op_stats", tmp_path)[0])
    assert {r["type"] for r in rows} <= {"IDLE"} or sum(r["total_self_time"] for r in rows if r["type"] != "IDLE") == 0
    ours = op_stats(load(sample("dropout", "plain")), top=None)
    assert any(o.eager and o.category == "matmul" for o in ours.ops)


@pytest.mark.parametrize("scenario,variant", [("augment", "flatten"), ("augment", "gap")])
def test_input_share_and_verdict_match_xprof_input_pipeline_analyzer(scenario, variant, tmp_path):
    tables = _tool(sample_file(scenario, variant), "input_pipeline_analyzer", tmp_path)
    props = tables[1]["p"]
    xp_steps = {int(str(r["stepnum"]).split()[-1]): r for r in _rows(tables[1])}
    run = analyze(sample(scenario, variant)).runs[0]
    ours = {s.number: s for s in run.steps.steps}
    # XProf leaves out steps it deems cut by the window's edges; compare the steps both measured.
    common = sorted(set(xp_steps) & set(ours))
    assert len(common) >= 4 and len(common) >= len(xp_steps)
    xp_input = sum(xp_steps[n]["infeedTimeMs"] for n in common) / sum(xp_steps[n]["stepTimeMs"] for n in common)
    our_input = sum(ours[n].input_ps for n in common) / sum(ours[n].dur_ps for n in common)
    assert our_input == pytest.approx(xp_input, abs=0.05)
    for n in common:
        assert ours[n].dur_ps / 1e9 == pytest.approx(xp_steps[n]["stepTimeMs"], rel=0.01)
    assert run.breakdown.input == pytest.approx(xp_input, abs=0.05)
    xp_highly = "HIGHLY input-bound" in props["input_conclusion"]
    assert xp_highly and run.verdict.bound == "input" and run.verdict.text.startswith("Highly input-bound")
