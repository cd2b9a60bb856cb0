"""`tftrace diff --format html|markdown`: the diff as a self-contained page and as a comment."""

from __future__ import annotations

import dataclasses
import re

import pytest

import tftrace
from conftest import run_cli, sample
from test_html import HOSTILE_ATTR, HOSTILE_SCRIPT, chart, parse
from tftrace.render.diff import render_diff

FLATTEN, GAP = sample("augment", "flatten"), sample("augment", "gap")
HOSTILE = HOSTILE_SCRIPT + HOSTILE_ATTR
DIFF_CHARTS = ("distribution", "breakdown", "categories-delta", "layers-delta", "ops-delta")
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "main", "footer", "div", "span", "p",
                "code", "dl", "dt", "dd", "small", "h3", "h4", "ul", "li", "i", "table", "thead", "tbody", "tr", "th",
                "td", "wbr", "svg", "g", "rect", "line", "text"}


@pytest.fixture(scope="module")
def head_swap():
    return tftrace.diff(FLATTEN, GAP, fail_if_slower=5)


def hostile_diff(d):
    """A real diff whose labels and first op, layer and category carry markup."""
    return dataclasses.replace(
        d, baseline=HOSTILE, notes=(HOSTILE,), baseline_verdict=HOSTILE,
        ops=(dataclasses.replace(d.ops[0], name=HOSTILE, type=HOSTILE_ATTR),) + d.ops[1:],
        layers=(dataclasses.replace(d.layers[0], name=HOSTILE_ATTR + HOSTILE_SCRIPT),) + d.layers[1:],
        categories=(dataclasses.replace(d.categories[0], name=HOSTILE),) + d.categories[1:])


def test_page_has_summary_distributions_breakdown_and_deltas(head_swap):
    page = render_diff(head_swap, "html")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    text = " ".join(" ".join(parse(page).text).split())
    assert head_swap.summary in text and head_swap.gate.reason in text
    assert head_swap.baseline_verdict in text and head_swap.candidate_verdict in text
    for kind in DIFF_CHARTS:
        assert page.count(f'data-chart="{kind}"') == 1, kind
    dist = chart(page, "distribution")
    assert dist.count('<rect class="dot"') == len(head_swap.baseline_step_times) + len(head_swap.candidate_step_times)
    assert dist.count('class="median"') == 2
    assert chart(page, "breakdown").count('<rect class="seg') == sum(
        (d.baseline_ps > 0) + (d.candidate_ps > 0) for d in head_swap.breakdown.values())
    assert chart(page, "ops-delta").count('<g class="bar"') == len(head_swap.ops)
    assert chart(page, "categories-delta").count('<g class="bar"') == len(head_swap.categories)
    for table in ("breakdown", "categories", "layers", "ops"):
        assert f'data-table="{table}"' in page
    # Slower rows go right in red, faster ones left in green, in the order the analysis ranked.
    cats = re.findall(r'<g class="bar"[^>]*><title>([^<]*?): ', chart(page, "categories-delta"))
    assert cats == [r.name for r in head_swap.categories]
    assert 'data-gate="passed"' in page


def test_self_contained_and_hostile_names_stay_text(head_swap):
    for needle in ("http://", "https://", "<link", "@import", "url(", "src=", "<script"):
        assert needle not in render_diff(head_swap, "html").lower(), needle
    page = render_diff(hostile_diff(head_swap), "html")
    parsed = parse(page)
    assert set(parsed.tags) <= ALLOWED_TAGS, set(parsed.tags) - ALLOWED_TAGS
    assert not [a for a in parsed.attrs if a.startswith("on")]
    assert "<script" not in page and "<img" not in page
    assert page.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 5
    assert HOSTILE in "".join(parsed.text)


def test_cli_writes_html_and_markdown(tmp_path):
    out = tmp_path / "diff.html"
    run_cli("diff", FLATTEN, GAP, "--format", "html", "-o", str(out), check=True)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'data-chart="distribution"' in page
    md = run_cli("diff", FLATTEN, GAP, "--format", "markdown", check=True).stdout
    assert md.startswith("# tftrace diff") and "## Step time breakdown (per step)" in md
    assert "- baseline step times (ms): " in md and "- candidate verdict: " in md and "Speed gate" not in md


def test_markdown_keeps_hostile_names_from_breaking_the_comment(head_swap):
    md = render_diff(hostile_diff(head_swap), "markdown")
    assert "<script" not in md and "<img" not in md and "&lt;script&gt;" in md
    tables = re.findall(r"((?:^\|.*\n)+)", md, re.M)
    assert len(tables) == 7  # findings, breakdown, memory, owners, categories, layers, ops
    for table in tables:  # a name's `|` is escaped: every row keeps its table's column count
        cells = {len(re.findall(r"(?<!\\)\|", row)) for row in table.splitlines()}
        assert len(cells) == 1, table
    assert md.startswith("# tftrace diff\n\n✅ **Speed gate")


def test_html_is_deterministic(head_swap):
    assert render_diff(head_swap, "html") == render_diff(head_swap, "html")
