"""The text report reads at 100 columns: no line wider, no table cell over two lines."""

from __future__ import annotations

import os

import pytest

from conftest import BROKEN, PUBLIC, SAMPLE_RUNS, public_traces, sample
from tftrace.api import analyze
from tftrace.render import render
from tftrace.render.fmt import tail

PATHS = [sample(*p) for p in SAMPLE_RUNS] + [p for p in public_traces() if p != BROKEN]


def _tables(text: str):
    """Each table's rows, as lists of printed lines: a row starts with text in its first six
    columns; a line blank there continues the row above."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.strip().startswith("──"):
            continue
        rows: list[list[str]] = []
        for row_line in lines[i + 1:]:
            if not row_line.strip():
                break
            if row_line[:6].strip():
                rows.append([row_line])
            else:
                rows[-1].append(row_line)
        yield rows


@pytest.mark.parametrize("path", PATHS, ids=lambda p: os.path.relpath(p, os.path.dirname(PUBLIC))[-50:])
def test_text_report_fits_100_columns_with_no_cell_over_two_lines(path):
    report = analyze(path)
    text = render(report, "text")
    assert max(len(line) for line in text.splitlines()) <= 100
    tables = list(_tables(text))
    assert tables or not report.runs[0].ops, "no table printed"
    for rows in tables:
        assert rows and max(len(r) for r in rows) <= 2, "\n".join(max(rows, key=len))


def test_long_names_keep_their_meaningful_tail():
    name = "StatefulPartitionedCall/flatten_model_1/head_dense_1/Relu"
    assert tail(name, 25) == "…/head_dense_1/Relu" and tail(name, 40) == "…/flatten_model_1/head_dense_1/Relu"
    assert tail("Iterator::Root::Prefetch::FlatMap[0]::Generator", 30) == "…::FlatMap[0]::Generator"
    assert tail("short", 40) == "short" and len(tail("x" * 80, 20)) == 20
