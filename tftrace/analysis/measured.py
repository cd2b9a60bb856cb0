"""What confirm's what-ifs measured (capture/timed_fixes.py): per finding id, the step with that
finding's fix applied to a copy of the model over the step of a copy compiled as the user compiled
it; the report sets each such finding's measured step (its step times that ratio) beside its
projection. A ratio, not the time saved: the copies' steps (one batch held in memory, no
profiler) are not the traced ones."""

from __future__ import annotations


def ratios(experiment: dict | None) -> dict[str, float]:
    """{finding id: the fixed copy's step over the copy compiled as the user's} (at most 1: a fix
    that cost more saves nothing); what-ifs that failed are left out."""
    if not isinstance(experiment, dict):
        return {}
    out = {}
    for w in experiment.get("whatifs") or ():
        if not isinstance(w, dict) or w.get("error") or not isinstance(w.get("id"), str):
            continue
        base, fixed = w.get("baseline_ms"), w.get("fixed_ms")
        if isinstance(base, (int, float)) and isinstance(fixed, (int, float)) and base > 0 and fixed >= 0:
            out[w["id"]] = min(fixed / base, 1.0)
    return out
