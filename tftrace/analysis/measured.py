"""What confirm's what-ifs measured (capture/timed_fixes.py): per finding id, how much the step fell
with that finding's fix applied to a copy of the model, in picoseconds; the report sets each such
finding's measured step beside its projection."""

from __future__ import annotations


def savings(experiment: dict | None) -> dict[str, int]:
    """{finding id: ps per step its fix saved} (0 where it saved nothing or cost more); what-ifs
    that failed are left out."""
    if not isinstance(experiment, dict):
        return {}
    out = {}
    for w in experiment.get("whatifs") or ():
        if not isinstance(w, dict) or w.get("error") or not isinstance(w.get("id"), str):
            continue
        base, fixed = w.get("baseline_ms"), w.get("fixed_ms")
        if isinstance(base, (int, float)) and isinstance(fixed, (int, float)):
            out[w["id"]] = round((base - fixed) * 1e9)
    return out
