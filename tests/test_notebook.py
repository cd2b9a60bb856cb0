"""Notebooks: `%%tftrace` in a real IPython kernel shows the report below the cell; reports and
diffs render themselves as scoped HTML."""

from __future__ import annotations

import html
import re

import pytest

from conftest import sample
from test_html import parse
from tftrace.api import analyze, diff
from tftrace.render.html_page import SCOPE, scope_css
from tftrace.render.html_style import CSS

SETUP = """\
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np
import keras
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)])
x = np.ones((8, 16), "float32")
model.predict(x, verbose=0)  # build and trace the predict function outside the capture
%load_ext tftrace
"""
CAPTURE = """\
%%tftrace {logdir} --label predict-loop
for _ in range(6):
    model.predict(x, verbose=0)
"""


RAISING = """\
%%tftrace {logdir}
model.predict(x, verbose=0)
raise ValueError("bad batch")
"""


def _the_raising_cell_keeps_its_window_cut_short(outputs, logdir) -> None:
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ValueError"  # the cell's own traceback, once
    said = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stderr")
    assert "the cell raised ValueError" in said and "cut short" in said
    assert "cut short by ValueError" in analyze(str(logdir)).runs[0].cut_short


def _rules(scoped: str) -> list[str]:
    """Every selector of a scoped stylesheet, @media blocks opened."""
    body = re.sub(r"@media[^{]*\{", "", scoped)
    return [s.strip() for head in re.findall(r"([^{}]+)\{[^{}]*\}", body) for s in head.split(",")]


def _text(markup: str) -> str:
    return " ".join(" ".join(parse(markup).text).split())


@pytest.mark.slow
def test_cell_magic_in_a_real_kernel_shows_the_report_with_its_verdict(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    logdir = tmp_path / "logs"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(CAPTURE.format(logdir=logdir)),
                nbformat.v4.new_code_cell(RAISING.format(logdir=tmp_path / "raised"))]
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    _the_raising_cell_keeps_its_window_cut_short(nb.cells[2].outputs, tmp_path / "raised")
    outputs = nb.cells[1].outputs
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    shown = [o.data["text/html"] for o in outputs if o.output_type == "display_data" and "text/html" in o.data]
    assert len(shown) == 1, outputs
    page = shown[0]
    # The verdict the report holds (read back from the run the cell wrote) is in the cell's output.
    report = analyze(str(logdir))
    run = report.runs[0]
    assert run.verdict.text and run.mode == "predict"
    assert run.verdict.text.replace("`", "") in _text(page)
    assert "-bound" in page and 'data-chart="steps"' in page and 'data-chart="timeline"' in page
    assert page.startswith(f'<div class="{SCOPE}">') and "<html" not in page and "<body" not in page
    plain = [o.data["text/plain"] for o in outputs if o.output_type == "display_data"][0]
    assert run.verdict.text in plain and "tftrace analyze" in plain


def test_report_and_diff_render_as_scoped_html():
    report = analyze(sample("dropout", "plain"))
    page = report._repr_html_()
    assert page.startswith(f'<div class="{SCOPE}"><style>') and page.endswith("</div>")
    assert report.runs[0].verdict.text in html.unescape(page)
    d = diff(sample("dropout", "plain"), sample("dropout", "dropout"))
    diff_page = d._repr_html_()
    assert diff_page.startswith(f'<div class="{SCOPE}">') and d.summary in _text(diff_page)
    for markup in (page, diff_page):
        style = re.search(r"<style>(.*?)</style>", markup, re.S).group(1)
        selectors = _rules(style)
        assert len(selectors) > 50
        outside = [s for s in selectors if not s.startswith(f".{SCOPE}")]
        assert not outside, outside  # nothing styles the notebook around the report


def test_scope_css_keeps_every_rule_and_maps_page_selectors_to_the_container():
    scoped = scope_css(CSS, ".x")
    assert scoped.count("{") == CSS.count("{")
    assert ".x { margin: 0; background: var(--bg)" in scoped  # `body`
    assert ".x { --sans:" in scoped  # `:root`
    assert ".x * { box-sizing: border-box; }" in scoped
    assert "@media (max-width: 640px) {\n.x .wrap" in scoped
