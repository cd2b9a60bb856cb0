"""The text report reads at any width: no line wider, wrapped lines indented inside their block,
no table cell over two lines."""

from __future__ import annotations

import functools
import os
import re

import pytest

from conftest import BROKEN, PUBLIC, SAMPLE_RUNS, public_traces, run_cli, sample
from tftrace.api import analyze as _analyze
from tftrace.render import render
from tftrace.render.fmt import tail
from tftrace.render.wrap import breaks

PATHS = [sample(*p) for p in SAMPLE_RUNS] + [p for p in public_traces() if p != BROKEN]
FLATTEN = sample("augment", "flatten")
UNWRAPPED = 100_000  # wide enough that no line wraps: each line is one logical line
# Lines whose continuation must sit under the text after their label, not just inside the block.
_LABEL = re.compile(r"\s*(\d+\. |evidence: |fix: |Verdict \(\w+\): )")

analyze = functools.lru_cache(maxsize=None)(_analyze)  # each trace analysed once for all widths


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


def _logical_lines(text: str) -> list[str]:
    """The lines outside tables (a table: its header, its ── rule, its rows up to a blank line)."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i + 1].strip().startswith("──"):
            i += 2
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _check_wrapping(narrow: list[str], wide: list[str], width: int) -> None:
    """Each wide line must come out as one or more narrow lines with the same text; every
    continuation indented deeper than its first line, and under the label's text where it has one."""
    at = 0
    for line in wide:
        want = "".join(line.split())
        first = narrow[at]
        assert _indent(first) == _indent(line), (first, line)
        label = _LABEL.match(line)
        hang = label.end() if label else _indent(line) + 1
        got = "".join(first.split())
        at += 1
        while len(got) < len(want):
            cont = narrow[at]
            assert _indent(cont) >= hang, f"continuation at column {_indent(cont)}, its text at {hang}:\n{first}\n{cont}"
            got += "".join(cont.split())
            at += 1
        assert got == want, (got, want)
    assert at == len(narrow)


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("path", PATHS, ids=lambda p: os.path.relpath(p, os.path.dirname(PUBLIC))[-50:])
def test_wrapped_lines_fit_and_stay_inside_their_block(path, width):
    report = analyze(path)
    text = render(report, "text", width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    _check_wrapping(_logical_lines(text), _logical_lines(render(report, "text", width=UNWRAPPED)), width)
    for rows in _tables(text):
        assert max(len(r) for r in rows) <= 2, "\n".join(max(rows, key=len))


def test_the_wrapping_check_can_fail():
    wide = ["  1. A title that is long", "     evidence: some numbers that go on"]
    _check_wrapping(["  1. A title", "     that is long", "     evidence: some", "               numbers that go on"],
                    wide, 20)
    for at_zero in (["  1. A title", "that is long", *wide[1:]],
                    [wide[0], "     evidence: some", "     numbers that go on"]):  # under the label, not its text
        with pytest.raises(AssertionError):
            _check_wrapping(at_zero, wide, 20)


def test_breaks_cut_at_spaces_and_fold_long_words():
    text = "share of step time: 61.3%; /a/path/longer/than/a/line/of/twenty ok"
    cuts = breaks(text, 24, 20)
    lines = [text[a:b] for a, b in cuts]
    assert lines[0] == "share of step time:" and all(len(x) <= 24 for x in lines[:1]) and all(len(x) <= 20 for x in lines[1:])
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert breaks("", 20, 20) == [] and breaks("short", 20, 20) == [(0, 5)]


@pytest.mark.parametrize("columns,limit", [("80", 80), ("", 100)])
def test_the_command_wraps_to_columns_or_100_in_a_pipe(columns, limit):
    out = run_cli("analyze", FLATTEN, "--no-tensorboard", env={"COLUMNS": columns}, check=True).stdout
    widest = max(len(line) for line in out.splitlines())
    assert limit - 10 < widest <= limit, widest


def test_the_command_wraps_to_the_terminal():
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import termios
    from conftest import ROOT
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 90, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.Popen([sys.executable, "-m", "tftrace", "analyze", FLATTEN, "--no-tensorboard"], stdout=slave,
                            stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=300) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode())  # a terminal gets colours
    widest = max(len(line) for line in text.replace("\r", "").splitlines())
    assert 80 < widest <= 90, widest
