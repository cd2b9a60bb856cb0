"""The traced steps set against the same call's steps TraceCallback timed after its window, untraced."""

from __future__ import annotations

import pytest

from tiny import tiny_trace
from tftrace.analysis.run import analyze_trace


def _run(untraced):
    # Four 90 us steps 10 us apart: 0.0975 ms a step with the gaps between them.
    events = [e for i in range(4) for e in (("python", "train", 100 * i, 90, {"_r": 1, "step_num": i}),
                                            ("tf_Compute/1", "model/a/MatMul:MatMul", 100 * i + 10, 50))]
    return analyze_trace(tiny_trace(events, sidecar={"untraced": untraced} if untraced is not None else {}), "t")


def test_the_traced_steps_are_set_against_the_untraced_ones_and_a_slowdown_is_said():
    run = _run({"ms_per_step": 0.08, "steps": 40})
    assert run.steps.untraced_ps == 80_000_000 and run.steps.untraced_steps == 40
    (note,) = [n for n in run.notes if n.startswith("untraced, ")]
    assert "40 steps after the window took 0.080 ms" in note and "0.098 ms with their gaps (1.22x)" in note
    assert "the steps judged still hold the rest" in note
    calm = _run({"ms_per_step": 0.095, "steps": 40})
    (note,) = [n for n in calm.notes if n.startswith("untraced, ")]
    assert "(1.03x)" in note and "still hold" not in note


@pytest.mark.parametrize("untraced", [None, {}, {"ms_per_step": "0.08", "steps": 40}, {"ms_per_step": True, "steps": 4},
                                      {"ms_per_step": -1.0, "steps": 40}, {"ms_per_step": 0.08, "steps": 0},
                                      {"ms_per_step": 0.08, "steps": 2.5}, [0.08, 40]])
def test_no_figure_or_a_malformed_one_says_nothing(untraced):
    run = _run(untraced)
    assert run.steps.untraced_ps == 0 and not [n for n in run.notes if n.startswith("untraced, ")]
