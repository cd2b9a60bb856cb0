"""The cost figures in every front end: the text headline (achieved FLOP/s and MFU), the CSV
roofline table, the HTML roofline chart (also what the TensorBoard tab serves), and diff's
FLOP rates."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from conftest import run_cli, sample
from tftrace.api import analyze, diff
from tftrace.render.diff import render_diff
from tftrace.render.html import render_html
from tftrace.render.text import render_text

KERAS = sample("gpu_jax", "keras_compute")
JAX = sample("gpu_jax", "jax_compute")


@pytest.fixture(scope="module")
def report():
    return analyze(KERAS)


def test_the_text_headline_gives_work_achieved_flops_and_mfu(report):
    text = render_text(report)
    line = " ".join(text[text.index("work:"):text.index("Verdict")].split())
    run = report.runs[0]
    assert "356 GFLOP a step (from XLA's optimized HLO" in line
    assert f"MFU {run.mfu * 100:.1f}% of the GPU peak, 1.07 PFLOP/s" in line
    assert f"({run.roofline.precision_mfu * 100:.1f}% at tf32)" in line
    assert "TFLOP/s achieved" in line


def test_a_run_with_no_counted_work_has_no_work_line():
    assert "work:" not in render_text(analyze(sample("zoo", "tiny_batch")))


def test_the_roofline_table_in_csv(tmp_path):
    proc = run_cli("analyze", KERAS, "--format", "csv", "--table", "roofline", "--no-tensorboard", check=True)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert rows and {r["scope"] for r in rows} >= {"op", "owner", "layer"}
    top = rows[0]
    assert float(top["flops"]) > 0 and float(top["flops_per_s"]) > 0 and top["bound"] == "compute"
    assert float(top["intensity"]) == pytest.approx(float(top["flops"]) / float(top["bytes_accessed"]), rel=1e-3)


def test_json_has_the_issues_keys(tmp_path):
    proc = run_cli("analyze", KERAS, "--format", "json", "--no-tensorboard", check=True)
    run = json.loads(proc.stdout)["runs"][0]
    assert run["flops_per_step"] > 0 and 0 < run["mfu"] < 1
    assert all("flops" in o and "bytes_accessed" in o for o in run["ops"])
    assert all("flops_per_step" in layer for layer in run["layers"])
    device = run["per_device"][0]
    assert device["peak_flops_per_s"] > device["precision_peak_flops_per_s"] > 0 and device["peak_bytes_per_s"] > 0
    assert run["roofline"]["rows"] and run["roofline"]["rule"]


def test_the_html_report_draws_the_roofline(report):
    html = render_html(report)
    chart = html[html.index('data-chart="roofline"'):]
    chart = chart[:chart.index("</svg>")]
    marks = re.findall(r'<g class="mark (op|owner|layer|module)">', chart)
    rows = [r for r in report.runs[0].roofline.rows if r.intensity and r.flops_per_s]
    assert len(marks) == len(rows) and set(marks) >= {"op", "owner", "layer"}
    assert chart.count('class="roof"') == 1 and chart.count('class="roof precision"') == 1  # XProf's and tf32's
    assert 'data-table="roofline"' in html


def test_the_tensorboard_tab_serves_the_roofline(copy_of):
    from tftrace.tensorboard.results import Results
    from tftrace.tensorboard.sessions import find_sessions, lookup
    logdir = copy_of(KERAS)
    name = next(iter(find_sessions(logdir)))
    code, page = Results().report_page(lookup(logdir, name))
    assert code == 200 and 'data-chart="roofline"' in page and "MFU" in page


def test_diff_compares_flop_rates():
    d = diff(KERAS, JAX)
    step = d.rates[0]
    base, cand = analyze(KERAS).runs[0], analyze(JAX).runs[0]
    assert step.scope == "step" and step.baseline_share == base.mfu and step.candidate_share == cand.mfu
    assert step.ratio == pytest.approx(cand.roofline.flops_per_s / base.roofline.flops_per_s, rel=1e-3)
    assert any(r.scope == "op" and r.status == "removed" for r in d.rates)
    assert "FLOP rates" in render_diff(d, "text", width=160) and "FLOP rates" in render_diff(d, "markdown")
    assert 'data-table="rates"' in render_diff(d, "html")
    assert d.to_dict()["rates"][0]["scope"] == "step"
