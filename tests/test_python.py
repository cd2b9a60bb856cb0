"""Python time per function: from the Python tracer's events in a public trace, and from stack
samples of every thread taken during real Keras runs (`python=True`)."""

from __future__ import annotations

import os

import pytest

from conftest import PUBLIC, run_cli, sample
from tftrace.analysis.python import code_owner
from tftrace.api import analyze

JAX_WITH_PYTHON_TRACER = os.path.join(PUBLIC, "AMD-AGI__TraceLens", "tests", "traces", "mi300", "jax08_attention")


def test_python_tracer_events_in_a_trace_become_the_python_table():
    run = analyze(JAX_WITH_PYTHON_TRACER, top=None).runs[0]
    py = run.python
    assert "tracer" in py.source and py.total_ps > 0
    rows = {r.function: r for r in py.rows}
    block = rows["transformer_block"]
    assert block.file == "generate_attention_trace.py" and block.line == 29 and block.thread == "main"
    assert block.total_ps > block.self_ps > 0  # it calls attention, gelu...
    assert rows["attention"].total_ps <= block.total_ps
    assert sum(r.share for r in py.rows) <= 1.0 + 1e-6  # self time of all Python time, each function once
    assert py.flame and all(0 <= n.start and n.start + n.width <= 1 + 1e-6 for n in py.flame)


def test_python_table_in_every_format():
    for fmt in ("text", "markdown", "html", "json", "csv"):
        extra = ("--table", "python") if fmt == "csv" else ()
        out = run_cli("analyze", JAX_WITH_PYTHON_TRACER, "--format", fmt, "--no-tensorboard", *extra, check=True).stdout
        assert "transformer_block" in out.replace("\\_", "_"), fmt  # Markdown escapes the underscore


def test_runs_without_python_data_have_an_empty_python_table():
    run = analyze(sample("augment", "flatten")).runs[0]
    assert run.python.rows == () and run.python.source == ""


@pytest.mark.parametrize("path,owner", [
    ("/home/me/project/train.py", "user"), ("/usr/lib/python3/dist-packages/numpy/core/x.py", "numpy"),
    ("/root/.venv/lib/python3.11/site-packages/keras/src/trainers/trainer.py", "keras"),
    ("/usr/lib/python3.11/threading.py", "python"), ("<frozen importlib._bootstrap>", "python"),
    ("ufunc_api.py", "unknown"),
])
def test_code_is_told_apart_from_libraries(path, owner):
    assert code_owner(path) == owner
