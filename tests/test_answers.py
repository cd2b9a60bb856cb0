"""`tftrace findings`, `explain` and `whatif`: the same ids as the report, explanations about what
their finding is about and within their caps, what-ifs by the combination rule, big answers spilled."""

from __future__ import annotations

import json
import os

import pytest

from conftest import run_cli, sample
from test_contract import assert_valid
from tftrace import api
from tftrace.analysis.answers import explain as explain_mod
from tftrace.analysis.answers.whatif import what_if
from tftrace.model.errors import UnknownFinding
from tftrace.model.report import Bottleneck, Breakdown, RunReport

ZOO = {name: sample("zoo", name) for name in ("slow_callback", "heavy_layer", "checkpoint", "generator", "heavy_map")}


@pytest.fixture(scope="module")
def reports():
    return {name: api.report_of(path) for name, path in ZOO.items()}


def test_findings_lists_the_reports_ids_in_rank_order():
    report = json.loads(run_cli("analyze", ZOO["generator"], "-f", "json", "--no-tensorboard", check=True).stdout)
    found = json.loads(run_cli("findings", ZOO["generator"], "-f", "json", check=True).stdout)
    assert_valid("findings", found)
    rows = found["runs"][0]["findings"]
    assert [f["id"] for f in rows] == [b["id"] for b in report["runs"][0]["bottlenecks"]]
    assert [f["rank"] for f in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["id"] == "input/python" and rows[0]["step_if_removed_ms"] < rows[0]["step_ms"]
    text = run_cli("findings", ZOO["generator"], check=True).stdout
    assert "1. input/python" in text and "fix:" in text


def test_explain_a_layer_gives_its_ops_owners_and_compute_heavy_steps(reports):
    e = api.explain(reports["heavy_layer"], "layer/wide_conv")
    assert_valid("explain", json.loads(json.dumps(e.to_dict())))
    assert e.finding.id == "layer/wide_conv"
    assert e.ops and all(o.layer == "wide_conv" for o in e.ops)
    assert {o.kind for o in e.owners} == {"layer"} and {o.name for o in e.owners} == {"wide_conv"}
    computes = [s.compute_ps for s in e.steps]
    assert computes == sorted(computes, reverse=True)
    names = e.timeline.names
    assert names and all("wide_conv" in n for n in names)
    assert all(ev.name_id < len(names) for lane in e.timeline.lanes for ev in lane.events)


def test_explain_a_callback_and_a_stall_name_the_hook_and_the_long_steps(reports):
    e = api.explain(reports["slow_callback"], "callback/batchstats.on_train_batch_end")
    assert [o.name for o in e.owners] == ["BatchStats.on_train_batch_end"] and e.ops == ()
    assert e.timeline.names == ("tftrace callback BatchStats.on_train_batch_end",)
    stall = api.explain(reports["checkpoint"], "stall/checkpoint-modelcheckpoint")
    assert [o.name for o in stall.owners] == ["ModelCheckpoint.on_train_batch_end"]
    durations = sorted(s.dur_ps for s in reports["checkpoint"].runs[0].steps.steps)
    median = durations[len(durations) // 2]
    assert stall.steps and all(s.dur_ps >= 2 * median for s in stall.steps)


def test_explain_stays_within_its_caps_and_says_what_it_left_out(reports):
    e = api.explain(reports["heavy_map"], "input/map_ops")
    assert all(o.category in ("input", "transfer") for o in e.ops)
    assert len(e.ops) == explain_mod.MAX_OPS and e.left_out.ops > 0
    assert len(e.owners) <= explain_mod.MAX_OWNERS and len(e.steps) <= explain_mod.MAX_STEPS
    assert sum(len(lane.events) for lane in e.timeline.lanes) <= explain_mod.MAX_EVENTS
    assert len(json.dumps(e.to_dict())) < 60_000


def test_an_unknown_id_is_an_error_that_lists_the_known_ones(reports):
    with pytest.raises(UnknownFinding, match="layer/wide_conv"):
        api.explain(reports["heavy_layer"], "layer/nope")


def _run(step: int, parts: dict, *findings: Bottleneck) -> RunReport:
    return RunReport("p", "r", breakdown=Breakdown(**parts), bottlenecks=findings)


MS = 10**9  # ps


def _b(rank: int, fid: str, part: str, saves: int, **kw) -> Bottleneck:
    """A finding of a 100 ms step whose fix saves `saves` ms (times in ms here, ps in the model)."""
    kw = {k: v * MS if k.endswith("_ps") and v is not None else v for k, v in kw.items()}
    return Bottleneck(rank, fid.split("/")[0], fid, 0.1, "", "", (100 - saves) * MS, 100 * MS, id=fid, part=part, **kw)


def _ms(w) -> list:
    return [f.counted_ps / MS for f in w.fixes]


def test_whatif_adds_fixes_in_different_parts_and_caps_those_in_one():
    run = _run(100, dict(input=0.3, compute=0.5, host_overhead=0.2),
               _b(1, "input/x", "input", 30), _b(2, "layer/a", "compute", 40), _b(3, "layer/b", "compute", 30),
               _b(4, "host_overhead/d", "host_overhead", 10))
    assert what_if(run, ["input/x", "host_overhead/d"]).step_after_ps == 60 * MS
    both = what_if(run, ["layer/a", "layer/b"])
    assert both.step_after_ps == 50 * MS  # 40 + 30 asked, the compute part holds 50
    assert _ms(both) == [40, 10] and "left" in both.fixes[1].note
    assert what_if(run, ["layer/b"]).step_after_ps == 70 * MS  # alone, a fix keeps its own projection


def test_whatif_takes_a_cross_part_projection_from_the_other_parts_once():
    """A pipeline fix projected past its part (it frees the cores the model shares) draws the excess
    from the other parts, so their fixes cannot count that time again."""
    run = _run(100, dict(input=0.2, compute=0.5, host_overhead=0.3),
               _b(1, "input/map", "input", 60), _b(2, "host_overhead/d", "host_overhead", 30))
    w = what_if(run, ["input/map", "host_overhead/d"])
    assert _ms(w) == [60, 30 - 40 * 30 / 80]
    assert w.step_after_ps == (100 - 60 - 15) * MS


def test_whatif_floor_basis_none_measured_and_after_first():
    run = _run(100, dict(input=0.6, compute=0.4),
               _b(1, "input/x", "input", 50, floor_ps=60, projection_basis="overlap"),
               _b(2, "layer/a", "compute", 0, after_first=True, step_once_first_fixed_ps=20),
               _b(3, "layer/c", "compute", 30, projection_basis="none"),
               _b(4, "input/y", "input", 10, measured_step_ps=80))
    w = what_if(run, ["input/x", "layer/a"])
    assert _ms(w) == [50, 30]  # layer/a: 50 (the step once input/x is fixed) less 20
    assert w.step_after_ps == 60 * MS and w.floor_ps == 60 * MS and any("floor" in r for r in w.rests_on)
    none = what_if(run, ["layer/c"])
    assert none.unknown == ("layer/c",) and none.step_after_ps == 100 * MS and _ms(none) == [0]
    assert what_if(run, ["input/y"]).step_after_ps == 80 * MS  # the measured step, not the projection
    assert "measured" in what_if(run, ["input/y"]).rests_on[0]
    assert "overlap" in w.rests_on[0]


def test_whatif_of_one_real_finding_is_its_projection(reports):
    run = reports["checkpoint"].runs[0]
    first = run.bottlenecks[0]
    w = api.whatif(reports["checkpoint"], [first.id])
    assert w.step_after_ps == first.step_if_removed_ps and w.fixes[0].basis == first.projection_basis
    second = next(b for b in run.bottlenecks[1:] if b.projection_basis != "none")  # a fix that saves something
    proc = run_cli("whatif", ZOO["checkpoint"], "--fix", first.id, "--fix", second.id, "-f", "json", check=True)
    data = json.loads(proc.stdout)
    assert_valid("whatif", data)
    assert data["step_after_ms"] < first.step_if_removed_ps / 1e9


def test_an_answer_past_the_limit_goes_to_a_file_whose_path_is_printed():
    full = run_cli("explain", ZOO["heavy_layer"], "layer/wide_conv", "-f", "json", check=True).stdout
    proc = run_cli("explain", ZOO["heavy_layer"], "layer/wide_conv", "-f", "json", "--max-bytes", "1000", check=True)
    spilled = json.loads(proc.stdout)
    assert_valid("spilled", spilled)
    path = spilled["file"]["path"]
    assert os.path.isfile(path) and spilled["file"]["bytes"] == len(full.encode()) and spilled["file"]["limit"] == 1000
    with open(path, encoding="utf-8") as f:
        assert f.read() == full
    again = run_cli("explain", ZOO["heavy_layer"], "layer/wide_conv", "-f", "json", "--max-bytes", "1000", check=True)
    assert json.loads(again.stdout)["file"]["path"] == path  # named by content: the same answer, the same file
