"""Issue 46's bar on six held-out real programs (keras-io examples in sample_traces/real): what the
reports of their committed captures rank first, against each top-3 fix timed without the profiler.

The truth (`sample_traces/real/truth.json`, made by `sample_traces/time_real.py`) holds, per
program and finding id, the fix its recommendation names first, applied as written, and the
program's step with and without it (each side's fastest of five or more rounds in turns). Nothing
is timed here: the tests read the repository only.

- (a) The lead finding's fix measures within 1.2x of the best top-3 fix in at least five of six.
- (b) No offered fix that measured slower than the original (ratio > 1.05) is offered without the
  condition that makes it hurt: the truth names that condition and words that state it, and the
  recommendation must contain one of them.
- (c) Where no top-3 fix pays 10%, the lead projects no more than 10%.
A fix that cannot be applied to what its owner is (nothing as written can change) counts as a
ratio of 1.0: the user who follows it gains nothing.
"""

from __future__ import annotations

import json
import os

import pytest

from tftrace.api import analyze

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "sample_traces", "real")
PROGRAMS = ["text_cnn", "vae", "recommender", "xception", "bilstm", "transformer"]
LEAD_WITHIN = 1.2  # the lead's measured ratio at most this many times the best top-3 fix's
SLOWER = 1.05  # a fix measured past this ratio made the program slower
PAYS = 0.9  # a fix pays 10% when its ratio is at or under this
CONFIRM_WITHIN = 1.5  # confirm's measured what-if against the fix timed on the whole program
# The XLA program's trace carries its module's HLO proto (1.4 MB of /host:metadata, whatever the window).
MAX_BYTES = {"xception": 2_300_000}


@pytest.fixture(scope="module")
def truth() -> dict:
    with open(os.path.join(REAL, "truth.json")) as f:
        return json.load(f)["programs"]


@pytest.fixture(scope="module")
def tops() -> dict:
    """Each program's top three findings, as the report of its committed capture ranks them now."""
    return {name: analyze(os.path.join(REAL, name)).runs[0].bottlenecks[:3] for name in PROGRAMS}


def _measured(truth: dict, name: str, finding) -> dict:
    timed = truth[name]["findings"].get(finding.id)
    assert timed is not None, (
        f"{name}: finding {finding.id!r} ({finding.title}) was never timed: apply its fix as written in "
        f"sample_traces/time_real.py (FIXES) and rerun it")
    return timed


def test_programs_are_kept_with_their_origin_and_license():
    with open(os.path.join(REAL, "README.md")) as f:
        readme = f.read()
    assert "Apache License" in open(os.path.join(REAL, "LICENSE")).read()
    for name in PROGRAMS:
        with open(os.path.join(REAL, name, "program.py")) as f:
            head = f.read(1200)
        assert "Apache License, Version 2.0" in head and "Origin: keras-team/keras-io" in head, name
        assert f"| `{name}` |" in readme, name
        for capture in (name, name + "_confirm"):
            pb = os.path.join(REAL, capture, "plugins", "profile", "run", "sample.xplane.pb")
            assert os.path.getsize(pb) < MAX_BYTES.get(name, 1_600_000), f"{capture}: keep the trace small"


def test_truth_was_timed_in_turns_with_five_rounds_or_more(truth):
    for name in PROGRAMS:
        program = truth[name]
        assert program["rounds"] >= 5 and len(program["loadavg"]) == program["rounds"], name
        for key, variant in program["variants"].items():
            assert len(variant["rounds_ms"]) >= 5, (name, key)
            assert variant["ms"] == min(variant["rounds_ms"]), (name, key)


def test_every_top_finding_has_its_fix_timed(truth, tops):
    for name, top in tops.items():
        for finding in top:
            _measured(truth, name, finding)


def test_a_lead_finding_is_the_fix_that_pays_most_in_five_of_six(truth, tops):
    verdicts = []
    for name, top in tops.items():
        ratios = {f.id: _measured(truth, name, f)["ratio"] for f in top}
        lead, best = ratios[top[0].id], min(ratios.values())
        best_id = min(ratios, key=ratios.get)
        ok = lead <= best * LEAD_WITHIN
        verdicts.append((ok, f"{name}: lead {top[0].id} measures {lead:.2f}, best top-3 fix {best_id} {best:.2f}"))
    passed = sum(ok for ok, _ in verdicts)
    assert passed >= 5, f"the lead pays most (within {LEAD_WITHIN}x) in {passed} of 6:\n" + "\n".join(
        ("  ok    " if ok else "  MISS  ") + text for ok, text in verdicts)


def test_a_strict_the_lead_is_within_reach_of_the_best_change_timed_offered_or_not(truth, tops):
    """The issue's words, 'the lead finding is the change that pays most (or within 1.2x of it)', held
    against every change timed, those no top-3 finding offers (truth's `reference` variants:
    XLA turned over, steps_per_execution, SGD) included."""
    verdicts = []
    for name, top in tops.items():
        lead = _measured(truth, name, top[0])["ratio"]
        variants = truth[name]["variants"]
        best_key = min(variants, key=lambda k: variants[k]["ratio"])
        best = variants[best_key]["ratio"]
        ok = lead <= best * LEAD_WITHIN
        verdicts.append((ok, f"{name}: lead {top[0].id} measures {lead:.2f}; the best change timed, "
                             f"{best_key[:60]}, {best:.2f}"))
    passed = sum(ok for ok, _ in verdicts)
    assert passed >= 5, f"the lead is the change that pays most (within {LEAD_WITHIN}x) in {passed} of 6:\n" + \
        "\n".join(("  ok    " if ok else "  MISS  ") + text for ok, text in verdicts)


def test_b_no_fix_that_measured_slower_is_offered_without_its_condition(truth, tops):
    misses = []
    for name, top in tops.items():
        for f in top:
            timed = _measured(truth, name, f)
            if timed["ratio"] <= SLOWER:
                continue
            hurts = timed.get("hurts_when")
            if not hurts:
                misses.append(f"{name}: {f.id} measured {timed['ratio']:.2f} and the truth names no condition")
                continue
            text = f.recommendation.lower()
            if not any(term.lower() in text for term in hurts["terms"]):
                misses.append(f"{name}: {f.id}'s fix ({timed['fix']}) measured {timed['ratio']:.2f}x the original "
                              f"and its recommendation does not say when it hurts ({hurts['condition']})")
    assert not misses, "\n".join(misses)


def test_c_where_no_fix_pays_ten_percent_the_lead_promises_no_more(truth, tops):
    misses = []
    for name, top in tops.items():
        if min(_measured(truth, name, f)["ratio"] for f in top) <= PAYS:
            continue
        lead = top[0]
        projected = lead.step_if_removed_ps / lead.step_ps if lead.step_ps else 1.0
        if projected < PAYS:
            misses.append(f"{name}: no top-3 fix pays 10% and the lead {lead.id} projects {projected:.2f} of the step")
    assert not misses, "\n".join(misses)


def _experiment(name: str) -> dict:
    with open(os.path.join(REAL, name + "_confirm", "plugins", "profile", "run", "tftrace_experiment.json")) as f:
        return json.load(f)


def test_confirm_ran_on_every_program():
    """confirm=True measures the input and the step even where a what-if's copy of the model cannot
    be made (a subclassed model without get_config, a custom layer not registered)."""
    failed = {name: _experiment(name).get("error", "").splitlines()[:2] for name in PROGRAMS}
    assert not {k: v for k, v in failed.items() if v}, failed


def test_confirm_what_ifs_agree_with_the_fix_timed_on_the_program(truth):
    """Each what-if confirm measured (a copy of the model with the fix, on one batch in memory) is
    within 1.5x of the same fix timed on the whole program without the profiler."""
    misses, compared, kinds = [], 0, set()
    for name in PROGRAMS:
        for whatif in _experiment(name).get("whatifs", []):
            timed = truth[name]["findings"].get(whatif["id"])
            if "fixed_ms" not in whatif or timed is None:
                continue
            compared += 1
            kinds.add(whatif["id"].split("/")[0])
            measured = whatif["fixed_ms"] / whatif["baseline_ms"]
            off = max(measured / timed["ratio"], timed["ratio"] / measured)
            if off > CONFIRM_WITHIN:
                misses.append(f"{name}: {whatif['id']} ({whatif['fix']}): confirm measured {measured:.2f}, "
                              f"the program timed {timed['ratio']:.2f} ({off:.1f}x apart)")
    assert compared >= 3 and "layer" in kinds, (compared, kinds)  # a layer at half its width among them
    assert not misses, "\n".join(misses)


def _lead_and(name: str) -> dict:
    return {b.id: b for b in analyze(os.path.join(REAL, name)).runs[0].bottlenecks}


def test_each_owner_is_priced_by_what_its_fix_changes():
    """The pricing rules docs/projections.md states, on the captures they were checked against."""
    text_cnn, recommender = _lead_and("text_cnn"), _lead_and("recommender")
    # An embedding table's sparse gradient applied densely: plain SGD, the dense arithmetic goes.
    sparse = text_cnn["optimizer/adam"]
    assert "no momentum" in sparse.recommendation and "dense update" in sparse.projection_how, sparse
    # Dense gradients (the penalties make them so): SGD with momentum, 2/7 of the update.
    dense = recommender["optimizer/adam"]
    assert "SGD with momentum" in dense.recommendation and "29%" in dense.projection_how, dense
    saved = (dense.step_ps - dense.step_if_removed_ps) / dense.step_ps
    assert 0 < saved < dense.share / 2, (saved, dense.share)  # 2/7 of its time with its dispatch, not 80%
    # TensorFlow's time around the ops: once per call with steps_per_execution...
    assert recommender["host_overhead/framework"].projection_basis == "dispatch"
    # ...but per iteration where a layer runs a graph loop, so not priced there.
    bilstm = _lead_and("bilstm_confirm")
    assert bilstm["host_overhead/framework"].projection_basis == "none"
    # A recurrent layer's loop is its recurrence: unrolled, not vectorised.
    loop = bilstm["while_loop/bidirectional"]
    assert "unroll=True" in loop.recommendation and "Vectorise" not in loop.recommendation, loop.recommendation
    # A layer's arithmetic on a CPU: no peer's rate to bring it to.
    vae = _lead_and("vae")
    assert all(b.projection_basis == "none" for i, b in vae.items() if i.startswith("layer/")), vae


def test_a_step_compiled_with_xla_on_a_cpu_is_read_as_xla_in_both_captures():
    for capture in ("xception", "xception_confirm"):
        lead = analyze(os.path.join(REAL, capture)).runs[0].bottlenecks[0]
        assert lead.id == "xla_cpu/jit_compile" and "jit_compile=False" in lead.recommendation, (capture, lead)


def test_a_model_no_copy_can_be_made_of_keeps_its_input_and_step_measured():
    """The recommender is a subclassed model without get_config: each what-if says why it was not
    timed, and the input alone and the step alone are measured all the same."""
    experiment = _experiment("recommender")
    assert experiment["input_alone_ms"] > 0 and experiment["step_alone_ms"] > 0, experiment
    whatifs = experiment["whatifs"]
    assert whatifs and all("get_config" in w["error"] and "fixed_ms" not in w for w in whatifs), whatifs
