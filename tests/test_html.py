"""The HTML report: structure, self-containment and escaping, on real sample traces."""

from __future__ import annotations

import dataclasses
import html
import re
from html.parser import HTMLParser

import pytest

from conftest import run_cli, sample
from tftrace.api import analyze
from tftrace.render import render
from tftrace.model.report import Report, RunReport

HOSTILE_SCRIPT = "<script>window.__pwned=1</script>"
HOSTILE_ATTR = '"><img src=x onerror=alert(1)>'
CHART_KINDS = ("steps", "ops", "layers", "categories")
# Everything the renderer writes; a tag outside this set came from trace text.
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "main", "footer", "nav", "a", "section",
                "div", "span", "h2", "h3", "h4", "p", "code", "dl", "dt", "dd", "ol", "ul", "li", "small", "b",
                "strong", "i", "table", "thead", "tbody", "tr", "th", "td", "wbr", "svg", "g", "rect", "line",
                "text", "path", "circle"}  # path, circle: the memory timeline (inert shapes)


@pytest.fixture(scope="module")
def flatten() -> Report:
    return analyze(sample("augment", "flatten"))


def hostile_report(report: Report) -> Report:
    """A real report whose first op and first layer carry markup, as a user's names could."""
    run = report.runs[0]
    ops = (dataclasses.replace(run.ops[0], name=HOSTILE_SCRIPT + HOSTILE_ATTR, layer=HOSTILE_ATTR),) + run.ops[1:]
    layers = (dataclasses.replace(run.layers[0], layer=HOSTILE_ATTR + HOSTILE_SCRIPT),) + run.layers[1:]
    return dataclasses.replace(report, runs=(dataclasses.replace(run, ops=ops, layers=layers),))


class _Tags(HTMLParser):
    """Every start tag and attribute name, as a browser's tokenizer would see them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _value in attrs]

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


def chart(page: str, kind: str) -> str:
    m = re.search(rf'<svg class="chart[^"]*" data-chart="{kind}".*?</svg>', page, re.S)
    assert m, f"no {kind} chart"
    return m.group(0)


def test_page_leads_with_verdict_and_bottlenecks(flatten):
    run = flatten.runs[0]
    page = render(flatten, "html")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    text = " ".join(parse(page).text)
    assert run.verdict.text in text and run.path in text and run.name in text
    for b in run.bottlenecks:
        assert b.title in text
    verdict_at, first_chart = page.index('class="verdict"'), page.index("<svg")
    assert verdict_at < page.index('class="bottlenecks"') < first_chart < page.index("<table")


def test_one_chart_per_kind_and_a_bar_per_step(flatten):
    run = flatten.runs[0]
    page = render(flatten, "html")
    for kind in CHART_KINDS:
        assert page.count(f'data-chart="{kind}"') == 1, kind
    steps = chart(page, "steps")
    assert steps.count('<g class="step"') == len(run.steps.steps) == run.steps.count
    nonzero = sum(1 for s in run.steps.steps for p in ("input", "compute", "host_overhead", "idle")
                  if getattr(s, p + "_ps") > 0)
    assert steps.count('<rect class="seg') == nonzero
    assert "step time (ms)" in steps and ">step<" in steps
    assert chart(page, "ops").count('<g class="bar"') == len(run.ops)
    assert chart(page, "layers").count('<g class="bar"') == len(run.layers)
    assert chart(page, "categories").count('<g class="bar"') == len(run.categories)
    for kind in ("ops", "layers", "categories", "stages"):
        assert f'data-table="{kind}"' in page


def test_bars_keep_the_reports_order(flatten):
    """The renderer lays out what the analysis ranked; it does not sort again."""
    run = flatten.runs[0]
    titles = re.findall(r'<g class="bar"><title>([^<]*?): [0-9.,]+ ms', chart(render(flatten, "html"), "layers"))
    assert titles == [r.layer for r in run.layers]


@pytest.mark.parametrize("variant", [("predict_loop", "light"), ("dropout", "dropout")])
def test_other_samples_render_with_their_notes(variant):
    report = analyze(sample(*variant))
    run = report.runs[0]
    page = render(report, "html")
    assert chart(page, "steps").count('<g class="step"') == len(run.steps.steps)
    text = " ".join(parse(page).text)
    assert run.verdict.text in text
    for note in run.notes:
        assert note in text


def test_self_contained_no_external_resources(flatten):
    page = render(flatten, "html")
    for needle in ("http://", "https://", "<script", "<link", "@import", "url(", "src="):
        assert needle not in page.lower(), needle
    assert "<style>" in page


def test_hostile_op_and_layer_names_stay_text(flatten):
    page = render(hostile_report(flatten), "html")
    parsed = parse(page)
    assert set(parsed.tags) <= ALLOWED_TAGS, set(parsed.tags) - ALLOWED_TAGS
    assert not [a for a in parsed.attrs if a.startswith("on")]
    assert "<script" not in page and "<img" not in page
    escaped = "&lt;script&gt;window.__pwned=1&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
    ops_chart = chart(page, "ops")
    assert f"<title>{escaped} (" in ops_chart  # the SVG tooltip
    label = re.search(r'<text class="label"[^>]*>(.*?)</text>', ops_chart).group(1)  # may be shortened
    assert "<" not in label and '"' not in label and len(label) > 20
    assert (HOSTILE_SCRIPT + HOSTILE_ATTR).endswith(html.unescape(label).lstrip("…"))
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in chart(page, "layers")
    text = "".join(parsed.text)
    assert HOSTILE_SCRIPT + HOSTILE_ATTR in text  # the table cell, read back as text


def test_failed_run_shows_its_error(flatten):
    bad = RunReport(path="/logs/<b>x</b>", name="broken<run>", error='not an XSpace: "<xplane>" truncated')
    page = render(dataclasses.replace(flatten, runs=flatten.runs + (bad,)), "html")
    assert 'not an XSpace: &quot;&lt;xplane&gt;&quot; truncated' in page
    assert "broken&lt;run&gt;" in page and "/logs/&lt;b&gt;x&lt;/b&gt;" in page
    assert page.count('class="error"') == 1 and page.count('data-chart="steps"') == 1
    assert 'href="#run-2"' in page  # several runs get a run index


def test_output_is_deterministic_and_survives_the_json_round_trip(flatten):
    assert render(flatten, "html") == render(Report.from_dict(flatten.to_dict()), "html")


def test_cli_writes_the_html_file(tmp_path):
    out = tmp_path / "r.html"
    run_cli("analyze", sample("augment", "flatten"), "--format", "html", "--output", str(out), "--no-tensorboard",
            check=True)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'data-chart="steps"' in page
