"""Owners: every microsecond of a step given to something in the program, on every trace the
repository holds; findings lead with owners, never with a bucket; the table in every format."""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

from conftest import ROOT, sample
import tftrace
from tftrace.api import find_runs
from tftrace.render.csv import render_csv
from tftrace.render.html import render_html
from tftrace.render.markdown import render_markdown
from tftrace.render.text import render_text

_ROOTS = [os.path.join(ROOT, "sample_traces"), os.path.join(ROOT, "tests", "data", "public")]
RUNS = sorted(r.path for root in _ROOTS for r in find_runs(root) if "_corrupt" not in r.path)
_REPORTS: dict = {}


def _report(path: str):
    if path not in _REPORTS:
        _REPORTS[path] = tftrace.analyze(path, top=None).runs[0]
    return _REPORTS[path]


def _name(path: str) -> str:
    return os.path.relpath(path, ROOT)


@pytest.mark.parametrize("path", RUNS, ids=_name)
def test_the_owners_share_every_step_whole(path):
    run = _report(path)
    if not run.steps.steps:
        return
    assert run.owners, "no owners"
    assert abs(sum(r.share for r in run.owners) - 1) < 1e-3, [(r.label, r.share) for r in run.owners]
    assert all(0 <= r.share <= 1 and r.per_step_ps >= 0 for r in run.owners)
    assert [r.per_step_ps for r in run.owners] == sorted((r.per_step_ps for r in run.owners), reverse=True)


_BUCKETS = ("Op category", "No single cause", "__inference_", "EagerLocalExecute", "Python and framework time")


@pytest.mark.parametrize("path", RUNS, ids=_name)
def test_the_leading_finding_names_an_owner_not_a_bucket(path):
    run = _report(path)
    for b in run.bottlenecks:
        assert b.share <= 1.0 + 1e-9, (b.title, b.share)
    if not run.bottlenecks:
        return
    lead = run.bottlenecks[0]
    assert lead.kind != "category"
    text = lead.title + " " + lead.recommendation
    assert not any(word in text for word in _BUCKETS), text
    if lead.kind == "stall":
        assert "(" in lead.title, lead.title  # what runs in the slow steps is named


def test_a_callback_that_saves_every_few_steps_owns_most_of_the_step():
    run = _report(sample("zoo", "checkpoint"))
    top = run.owners[0]
    assert (top.kind, top.name) == ("callback", "ModelCheckpoint.on_train_batch_end")
    assert top.part == "host_overhead"
    adam = next(r for r in run.owners if r.kind == "optimizer")
    assert adam.name == "adam" and adam.runs > 0 and adam.what


def test_keras_on_jax_on_the_cpu_gets_its_layers_and_phases_from_the_hlo():
    run = _report(sample("jax_zoo", "keras_fit"))
    layers = {(r.name, r.phase) for r in run.owners if r.kind == "layer"}
    assert {("conv2d", "forward"), ("conv2d", "backward"), ("pool", "backward")} <= layers
    assert any(r.kind == "optimizer" for r in run.owners)
    assert any(b.kind == "layer" for b in run.bottlenecks)


def test_a_raw_jax_loop_names_the_python_that_makes_its_ops():
    run = _report(sample("jax_zoo", "jax_compute"))
    code = [r for r in run.owners if r.kind == "code"]
    assert code and code[0].name.startswith("loss_fn (") and code[0].name.endswith(")")
    assert run.bottlenecks[0].kind == "code" and "loss_fn" in run.bottlenecks[0].title


def test_host_time_inside_a_graph_step_is_owned_by_the_ops_it_dispatches():
    run = _report(sample("augment", "flatten"))
    finding = next(b for b in run.bottlenecks if b.kind == "host_overhead")
    assert "op runs per step" in finding.title and "Optimizer adam" in finding.title
    assert "__inference" not in finding.title + finding.evidence


def test_the_owners_table_is_in_every_format():
    report = tftrace.analyze(sample("zoo", "checkpoint"))
    assert "ModelCheckpoint.on_train_batch_end" in render_text(report)
    assert "### Owners" in render_markdown(report)
    assert 'data-table="owners"' in render_html(report)
    rows = list(csv.DictReader(io.StringIO(render_csv(report, table="owners"))))
    assert rows and {"kind", "name", "phase", "per_step_ms", "share", "runs", "part"} <= set(rows[0])
    data = json.loads(json.dumps(report.to_dict()))
    owners = data["runs"][0]["owners"]
    assert owners[0]["name"] == "ModelCheckpoint.on_train_batch_end" and "per_step_ms" in owners[0]
    assert tftrace.model.report.Report.from_dict(data) == report


def test_diff_compares_owners():
    diff = tftrace.diff(sample("augment", "flatten"), sample("augment", "gap"))
    assert any(r.name == "Optimizer adam" for r in diff.owners)
    assert "owners" in diff.to_dict() and "owner" in diff.to_dict()["owners"][0]


def test_explore_gives_the_same_owners_as_analyze():
    ex = tftrace.explore(sample("zoo", "checkpoint"))
    assert ex.owners == tftrace.analyze(sample("zoo", "checkpoint"), top=None).runs[0].owners
    frame = ex.owner_frame()
    assert list(frame["owner"])[0] == "Callback ModelCheckpoint.on_train_batch_end"


def _without_sidecar(tmp_path, *parts):
    """A copy of a sample's run with no tftrace sidecar: as a plain profiler capture reads."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(sample(*parts), run)
    for f in run.rglob("tftrace_*.json*"):
        f.unlink()
    return str(run)


def test_abs_and_square_are_a_guessed_penalty_only_where_something_outside_the_layers_is_differentiated(tmp_path):
    """Without a sidecar, Abs or Square outside every scope are read as a weight penalty only
    where the step also differentiates work outside every layer and the loss (a penalty's
    gradient); a pairwise metric's Abs and Sum stay with its other ops."""
    from tftrace import analyze
    penalised = analyze(_without_sidecar(tmp_path / "a", "zoo", "regularizer_l2"), top=None).runs[0]
    assert any(o.kind == "regularizer" for o in penalised.owners), [(o.kind, o.name) for o in penalised.owners]
    metric = analyze(_without_sidecar(tmp_path / "b", "zoo", "pairwise_metric"), top=None).runs[0]
    assert not any(o.kind == "regularizer" for o in metric.owners), [(o.kind, o.name) for o in metric.owners]
    assert metric.bottlenecks[0].id == "step/outside-any-layer", [b.id for b in metric.bottlenecks]
