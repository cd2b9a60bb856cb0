"""Issue 46's projection programs (sample_traces/capture_zoo_projections.py): held-out analogs whose
fix saves more than the owner's own ops. Each slow program's cause is named among the top three
findings, with a projection within 2x of the gain its fixed twin was timed to bring without the
profiler, or with `projection_basis: "none"`; where the capture ran `confirm=True`, the fix confirm
timed on a copy of the model is within 1.5x of that gain. Three programs captured twice lead with
the same finding, or one capture declares the other's lead tied with its own. A fix timed to save
under a tenth of the step on this machine (its cores busy with other work: a parallel map, work
moved beside the step) is not a cause to name; a finding that words it promises no more than that."""

from __future__ import annotations

import json
import os

import pytest

from conftest import sample
from tftrace import analyze

SET = "projections"
ROOTS = ("zoo", "jax_zoo")
PROGRAMS = ("map_per_element", "fit_per_batch", "augment_layers", "per_sample_loop", "numpy_callback",
            "pairwise_metric", "metric_beside_convs", "float16_cpu", "run_eagerly_fit", "checkpoint_every_n",
            "serial_map")
# A fix timed to save under a tenth of the step (fixed / slow above this) does not pay on this
# machine: its cause is not one to name, and a finding that words it must not promise more than that.
PAYS = 0.9


def _truths() -> dict[str, tuple[str, dict]]:
    out = {}
    for root in ROOTS:
        truth = json.load(open(sample(root, "ground_truth.json")))
        out.update({name: (root, v) for name, v in truth.items() if isinstance(v, dict) and v.get("set") == SET})
    return out


TRUTH = _truths()
AGAIN = {k: v for k, v in json.load(open(sample("zoo_again", "ground_truth.json"))).items() if isinstance(v, dict)}
_RUNS: dict = {}


def _run(*parts: str):
    if parts not in _RUNS:
        _RUNS[parts] = analyze(sample(*parts), top=None).runs[0]
    return _RUNS[parts]


def _wording(run, truth: dict):
    """Every finding of the cause's kinds whose words name what the fix is about."""
    return [b for b in run.bottlenecks if b.kind in truth["causes"]
            and all(w in " ".join((b.title, b.evidence, b.recommendation)) for w in truth["names"])]


def _named(run, truth: dict):
    """The top-three findings of the cause's kinds whose words name what the fix is about."""
    return [b for b in _wording(run, truth) if b.rank <= 3]


def _listing(run) -> list:
    return [(b.rank, b.id, b.projection_basis, round(b.step_if_removed_ps / b.step_ps, 3), b.title)
            for b in run.bottlenecks[:6]]


def test_every_program_is_in_the_zoo_with_its_timed_rounds():
    assert sorted(TRUTH) == sorted(PROGRAMS)
    for name, (root, truth) in TRUTH.items():
        assert os.path.isfile(sample(root, name, "plugins", "profile", "run", "sample.xplane.pb")), name
        slow, fixed = truth["slow_ms_rounds"], truth["fixed_ms_rounds"]
        assert len(slow) >= 5 and len(fixed) >= 5, name
        assert truth["slow_ms_per_step"] == min(slow) and truth["fixed_ms_per_step"] == min(fixed), name
        assert truth["ratio"] == pytest.approx(min(fixed) / min(slow), abs=1e-4), name
        assert len(truth["load"]) == 2 and truth["cause"] in truth["causes"], name
    stock = [n for n, (_, t) in TRUTH.items() if "TraceCallback" not in t["how"] and "tftrace" not in t["how"]]
    assert len(stock) >= 3, stock  # plain start/stop and Keras' TensorBoard callback, as users capture


# Projections the analysis still misses, said so: each turns into a failure the day it comes right
# (strict), so the bar cannot quietly stay lowered.
MISSES = {
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=MISSES[n]))
                                  if n in MISSES else n for n in PROGRAMS])
def test_the_cause_is_named_in_the_top_three_with_a_true_projection(name):
    root, truth = TRUTH[name]
    run = _run(root, name)
    if truth["ratio"] > PAYS:  # on this machine's cores, at its load, the fix did not pay
        for b in _wording(run, truth):
            assert b.step_if_removed_ps / b.step_ps >= 0.5 * truth["ratio"], (b.id, truth["ratio"], _listing(run))
        return
    named = _named(run, truth)
    assert named, (truth["causes"], truth["names"], _listing(run))
    b = named[0]
    if truth.get("confirm"):  # the fix timed on a copy of the model, beside the projection
        assert b.measured_step_ps is not None, (b.id, b.projection_basis, _listing(run))
        measured = b.measured_step_ps / b.step_ps
        assert 1 / 1.5 <= measured / truth["ratio"] <= 1.5, (measured, truth["ratio"], b.id)
    if b.projection_basis == "none":  # the trace cannot say: the finding says so, and why
        assert b.projection_how and b.step_if_removed_ps == b.step_ps, b
        return
    projected = b.step_if_removed_ps / b.step_ps
    assert 0.5 <= projected / truth["ratio"] <= 2.0, (projected, truth["ratio"], b.id, b.projection_basis,
                                                      b.projection_how)


def test_confirm_timed_the_precision_fix_on_a_copy_of_the_model():
    """float16_cpu was captured with confirm=True: the experiment beside the run timed the float32
    policy on a copy of the model, in turns with a copy compiled as the user compiled it."""
    folder = sample("zoo", "float16_cpu", "plugins", "profile", "run")
    exp = json.load(open(os.path.join(folder, "tftrace_experiment.json")))
    timed = [w for w in exp.get("whatifs", []) if "float32" in w.get("fix", "")]
    assert timed and "error" not in timed[0], exp.get("whatifs")
    w = timed[0]
    ratio = TRUTH["float16_cpu"][1]["ratio"]
    assert 1 / 1.5 <= (w["fixed_ms"] / w["baseline_ms"]) / ratio <= 1.5, (w, ratio)


def test_three_programs_were_captured_twice():
    assert len(AGAIN) == 3
    hows = [TRUTH[name][1]["how"] for name in AGAIN]
    assert any("jax" in TRUTH[name][0] for name in AGAIN)  # one JAX
    assert any("TraceCallback" in h for h in hows) and any("start/stop" in h or "TensorBoard" in h for h in hows)
    for name, again in AGAIN.items():
        assert again["of"] == f"{TRUTH[name][0]}/{name}"
        assert os.path.isfile(sample("zoo_again", name, "plugins", "profile", "run", "sample.xplane.pb")), name


def _tied_with_lead(run, fid: str) -> bool:
    """Does `run` declare finding `fid` tied with its lead (within the run's step-to-step noise)?"""
    lead = run.bottlenecks[0]
    return bool(lead.tie_rank) and any(b.id == fid and b.tie_rank == lead.tie_rank for b in run.bottlenecks)


@pytest.mark.parametrize("name", sorted(AGAIN))
def test_two_captures_lead_with_the_same_finding_or_a_declared_tie(name):
    first, second = _run(TRUTH[name][0], name), _run("zoo_again", name)
    a, b = first.bottlenecks[0], second.bottlenecks[0]
    assert a.id == b.id or _tied_with_lead(first, b.id) or _tied_with_lead(second, a.id), \
        (_listing(first), _listing(second))
