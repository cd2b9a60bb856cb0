"""Every projection on every trace the repository holds (samples, zoos, the H200 runs, every public
trace) is a figure that can happen: no share above 100%, every finding says what its projection
rests on, no step of zero or above the step, none below its own floor, an overlap never below the
longer of its two sides, the model's own arithmetic never projected away, and no lead finding that
names a library's or a framework's frame as the user's function."""

from __future__ import annotations

import os
import re

import pytest

from conftest import BROKEN, SAMPLES, public_traces
from tftrace import analyze
from tftrace.model.report import PROJECTION_BASES

_LIBRARY_FILES = ("contextlib.py", "threading.py", "functools.py", "profiler.py")
ARITHMETIC = ("layer", "loss", "code")  # the model's own work: priced by the roofline, or not at all


def _runs() -> list[str]:
    runs = set()
    for folder, _dirs, files in os.walk(SAMPLES):
        if any(f.endswith(".xplane.pb") for f in files):
            runs.add(folder)
    return sorted(os.path.relpath(r, SAMPLES) for r in runs) + [p for p in public_traces() if p != BROKEN]


RUNS = _runs()
_CACHE: dict = {}


def _report(path: str):
    if path not in _CACHE:
        full = path if os.path.isabs(path) else os.path.join(SAMPLES, path)
        _CACHE[path] = [r for r in analyze(full, top=None).runs if not r.error]
    return _CACHE[path]


def test_the_survey_covers_every_family():
    assert len(RUNS) >= 60
    assert any(r.endswith(".json.gz") for r in RUNS) and any("gpu_jax" in r for r in RUNS)


@pytest.mark.parametrize("path", RUNS)
def test_no_impossible_figure(path):
    for run in _report(path):
        for b in run.bottlenecks:
            where = (run.name, b.id, b.title)
            assert 0 <= b.share <= 1, where
            assert all(f.value <= 100 for f in b.facts if f.unit == "%" and isinstance(f.value, (int, float))), \
                (where, [f for f in b.facts if f.unit == "%"])
            assert b.projection_basis in PROJECTION_BASES, where
            assert b.projection_how, where  # how the figure was made, or why there is none
            assert 0 < b.step_if_removed_ps <= b.step_ps, where
            assert b.step_if_removed_ps >= b.floor_ps, where
            if b.projection_basis == "overlap":
                assert b.floor_ps > 0, where
            if b.projection_basis == "none":
                assert b.step_if_removed_ps == b.step_ps, where


@pytest.mark.parametrize("path", RUNS)
def test_the_models_arithmetic_is_never_projected_away(path):
    for run in _report(path):
        for b in run.bottlenecks:
            if b.kind in ARITHMETIC:
                assert b.projection_basis in ("roofline", "none", "measured"), (run.name, b.title, b.projection_basis)


@pytest.mark.parametrize("path", RUNS)
def test_no_lead_finding_is_a_library_or_framework_frame(path):
    for run in _report(path):
        if not run.bottlenecks:
            continue
        lead = run.bottlenecks[0]
        assert not any(f in lead.title for f in _LIBRARY_FILES), lead.title
        assert "quick_execute()" not in lead.title or lead.title.startswith("TensorFlow running the step"), lead.title


_SEPARABLE = ("SeparableConv1D", "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D")
_SHRINK_ITSELF = re.compile(r"\): fewer (units|filters)")  # the dense or convolution fix's first lever, for itself


@pytest.mark.parametrize("path", RUNS)
def test_no_layer_is_told_to_become_what_it_is_or_to_shrink_what_it_cannot(path):
    """A separable convolution is not told to become one; a layer without weights, or the layer
    that makes the model's output (its width is what the model predicts), is not told to have
    fewer units or filters."""
    for run in _report(path):
        for b in run.bottlenecks:
            if b.kind != "layer":
                continue
            facts = {f.label: f.value for f in b.facts}
            where = (run.name, b.id, b.recommendation)
            if facts.get("class") in _SEPARABLE:
                assert "or a depthwise-separable convolution" not in b.recommendation, where
            if facts.get("parameters") == "0" or "makes the model's output" in facts:
                assert not _SHRINK_ITSELF.search(b.recommendation), where
