"""The step once several findings' fixes are applied together, from each finding's projection and
what it rests on.

The rule: a fix saves the step less its projected step (less its measured step where `confirm`
timed it). Fixes in different breakdown parts add; fixes in one part save at most that part's time
together. Taken in rank order, each fix draws its saving from its part's time the fixes before it
left. One refinement: a fix projected to save more than its whole part holds (a tf.data pipeline
that competes with the model for the same cores speeds the model up when it goes) takes that excess
from the other parts' time, in proportion, so the fixes of those parts cannot count it again; the
step never goes below zero that way. A fix ranked after finding 1 (it saves nothing while finding 1
holds the step) saves, when finding 1 is fixed too, what its projection with finding 1 fixed says.
The result never goes below the largest floor of the fixes chosen. A fix whose projection basis is
`none` saves nothing and is listed as unknown.
"""

from __future__ import annotations

from tftrace.model.answers import FixEffect, PartEffect, WhatIf
from tftrace.model.errors import TftraceError, UnknownFinding
from tftrace.model.report import PARTS, Bottleneck, RunReport

RULE = ("in rank order, each fix saves at most the time its part has left (what it projects beyond its whole part "
        "comes from the other parts' time left); fixes in different parts add; the step never goes below the "
        "largest floor of the fixes chosen; a fix whose basis is none saves nothing")
_BASES = {"removed": "the fix deletes the work", "overlap": "the step becomes the longer of two sides that overlap",
          "roofline": "the work at a reachable efficiency", "dispatch": "op runs or calls removed at their measured cost",
          "measured": "timed with the fix applied (confirm)"}


def find(run: RunReport, ids: list[str] | tuple[str, ...]) -> list[Bottleneck]:
    """The run's findings with these ids, in the order asked (each once)."""
    by_id = {b.id: b for b in run.bottlenecks}
    missing = [i for i in ids if i not in by_id]
    if missing:
        known = ", ".join(by_id) or "none"
        raise UnknownFinding(f"no finding {', '.join(missing)} in {run.name}; its findings: {known}")
    return [by_id[i] for i in dict.fromkeys(ids)]


def what_if(run: RunReport, ids: list[str] | tuple[str, ...]) -> WhatIf:
    chosen = find(run, ids)
    if not chosen:
        raise TftraceError("give at least one finding id to fix")
    step = chosen[0].step_ps
    first = run.bottlenecks[0]
    effects, unknown = [], []
    for b in chosen:
        alone, counted, note = _saving(b, step, first, first in chosen)
        if b.projection_basis == "none":
            unknown.append(b.id)
        effects.append(FixEffect(b.id, b.kind, b.title, b.part, b.projection_basis, alone, counted, note))
    order = {b.id: b.rank for b in run.bottlenecks}
    parts, ranked = _by_part(run, step, sorted(effects, key=lambda e: order[e.id]))
    effects = [next(r for r in ranked if r.id == e.id) for e in effects]
    saved = sum(p.saved_ps for p in parts)
    floor = max((b.floor_ps for b in chosen), default=0)
    after = max(step - saved, floor, 0)
    rests = tuple(_rests_on(b) for b in chosen) + ((f"the floor: {_ms(floor)} ms, the largest of the fixes' floors",)
                                                   if after == floor and floor else ())
    return WhatIf(run.path, run.name, step, after, step - after, round(step / after, 3) if after else 0.0, floor,
                  tuple(effects), parts, tuple(unknown), rests, RULE)


def _saving(b: Bottleneck, step: int, first: Bottleneck, first_chosen: bool) -> tuple[int, int, str]:
    """What one fix saves alone, what it counts for before the part's cap, and why they differ."""
    if b.projection_basis == "none":
        return 0, 0, "its projection basis is none: the trace cannot say what the fix saves"
    after = b.measured_step_ps if b.measured_step_ps is not None else b.step_if_removed_ps
    alone = max(step - after, 0)
    if b.after_first and first_chosen and b is not first and b.step_once_first_fixed_ps:
        extra = max(first.step_if_removed_ps - b.step_once_first_fixed_ps, 0)
        return alone, extra, f"saves {_ms(extra)} ms once {first.id} is fixed too (its step then {_ms(b.step_once_first_fixed_ps)} ms)"
    if b.after_first:
        return alone, alone, f"saves little while {first.id} holds the step"
    return alone, alone, ""


def _by_part(run: RunReport, step: int, effects: list[FixEffect]) -> tuple[tuple[PartEffect, ...], list[FixEffect]]:
    """Each fix, in rank order, draws its saving from its part's time left; what it saves beyond all
    its part held (a projection across parts) it draws from the other parts' time left, in proportion."""
    held = {p: round(getattr(run.breakdown, p) * step) for p in PARTS}
    left, drawn, asked = dict(held), dict.fromkeys(PARTS, 0), dict.fromkeys(PARTS, 0)
    counted = {}
    for e in effects:
        own = min(e.counted_ps, left.get(e.part, 0))
        if e.part in left:
            left[e.part] -= own
            drawn[e.part] += own
            asked[e.part] += e.counted_ps
        beyond = max(e.counted_ps - held.get(e.part, 0), 0)
        counted[e.id] = own + _draw(left, drawn, beyond, e.part)
    out = []
    for e in effects:
        note = e.note
        if counted[e.id] < e.counted_ps - _US:
            note = "; ".join(n for n in (note, f"counts {_ms(counted[e.id])} ms: the time of its part "
                                               f"({e.part or 'across parts'}) the fixes before it left") if n)
        out.append(FixEffect(e.id, e.kind, e.title, e.part, e.basis, e.alone_ps, counted[e.id], note))
    parts = tuple(PartEffect(p, held[p], asked[p], drawn[p]) for p in PARTS if drawn[p] or asked[p])
    return parts, out


def _draw(left: dict, drawn: dict, want: int, own_part: str) -> int:
    """Take up to `want` from the parts other than `own_part`, in proportion to what each has left."""
    others = {p: v for p, v in left.items() if p != own_part and v > 0}
    total = sum(others.values())
    take = min(want, total)
    if take <= 0:
        return 0
    got = 0
    for i, (p, v) in enumerate(sorted(others.items())):
        share = take - got if i == len(others) - 1 else round(take * v / total)
        share = min(share, left[p])
        left[p] -= share
        drawn[p] += share
        got += share
    return got


def _rests_on(b: Bottleneck) -> str:
    if b.measured_step_ps is not None:
        return f"{b.id}: measured, the step timed with the fix applied ({_ms(b.measured_step_ps)} ms)"
    basis = b.projection_basis
    what = _BASES.get(basis, "")
    if basis == "none":
        head = f"{b.id}: none, " + (b.projection_how or "the trace cannot say what this fix saves")
    elif basis:
        head = f"{b.id}: {basis}, {what}" + (f" ({b.projection_how})" if b.projection_how else "")
    else:
        head = f"{b.id}: basis not stated, its detector's projection of the step with the fix applied"
    return head


_US = 1_000_000  # savings within a microsecond of each other are the same (ps rounding)


def _ms(ps: int) -> str:
    return f"{ps / 1e9:.2f}"
