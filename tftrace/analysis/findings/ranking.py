"""The order of the findings a run reports: by what each fix saves now, ties within the run's
step-to-step noise shown as ties, fixes the trace cannot price after those it can, and fixes that
save nothing while another bound holds the step last, with what they save once it is fixed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.findings.fixes import LAYER_KINDS
from tftrace.model.finding import Finding

LATER = 0.005  # a fix saving less than this share of the step saves nothing now
_MAD_TO_SD = 1.4826  # a normal spread's standard deviation from its median absolute deviation


@dataclass(frozen=True)
class Ranked:
    finding: Finding
    after_first: bool = False  # saves nothing while the first holds the step
    step_once_first_fixed_ps: int = 0
    tie_rank: int = 0  # the rank of the first finding it is tied with (0: no tie)


def noise(iterations) -> int:
    """The noise of a projection made from the run's mean step: the robust spread of its
    iterations (a step and its gap) over the square root of their count, as another capture of
    the same program would move it; 0 with fewer than three."""
    x = np.asarray(iterations, np.float64)
    if len(x) < 3:
        return 0
    return round(_MAD_TO_SD * float(np.median(np.abs(x - np.median(x)))) / np.sqrt(len(x)))


def rank(found: list[Finding], step: int, noise_ps: int) -> list[Ranked]:
    """Findings in report order (see the module docstring); a tie keeps the order of the savings
    and says it is one, so a reader knows another capture may swap them."""
    priced = [f for f in found if f.basis != "none"]
    now = [f for f in priced if step - _then(f) > LATER * step]
    later = sorted((f for f in priced if f not in now), key=lambda f: (-f.share, f.id, f.title))
    now.sort(key=lambda f: (-(step - _then(f)), -f.share, f.id, f.title))
    ties = _ties(now, step, noise_ps)
    ordered = [Ranked(f, tie_rank=ties.get(i, 0)) for i, f in enumerate(now)]
    # An unpriced cause goes where half its owner's time would put it (its fix removes part of
    # what the owner holds, the trace cannot say how much); other unpriced findings after every
    # priced one (see GUESSED and SCALABLE).
    unpriced = sorted((f for f in found if f.basis == "none"),
                      key=lambda f: (-_guess(f, step), -f.share, f.id, f.title))
    out: list[Ranked] = []
    for r in ordered:
        while unpriced and _guess(unpriced[0], step) > step - _then(r.finding):
            out.append(Ranked(unpriced.pop(0)))
        out.append(r)
    out += [Ranked(f) for f in unpriced]
    ordered = [r.finding for r in ordered]
    first = ordered[0].step_if_removed_ps if ordered else step
    for f in later:
        then = max(round(first - (f.removed_ps or f.share * step)), 0) if ordered else 0
        out.append(Ranked(f, bool(ordered), then))
    return out


def _then(f: Finding) -> int:
    """The step after the fix: as confirm measured it where it did (a fix that measured no gain
    drops below those that pay), else as projected."""
    return f.measured_step_ps if f.measured_step_ps is not None else f.step_if_removed_ps


UNPRICED_PART = 0.5  # of an unpriced cause's share: where it ranks among the priced ones
# Unpriced findings that name a cause whose fix removes much of what its owner holds (XLA's CPU
# runtime turned off, float32 for float16 on a CPU): ranked by half their share. Every other
# unpriced finding (the model's own arithmetic, a symptom such as framework time or a device
# idling, a call's start-up) ranks after every priced one.
GUESSED = ("xla_cpu", "precision")


# Layers whose cost grows with their width (filters, units) as a plain convolution's or matmul's
# does, so "fewer filters or units" removes a part of their time in proportion: ranked like a
# guessed cause. A composite or custom layer's width is not its cost (a TransformerBlock's
# `ff_dim` is a fraction of its work), nor a separable convolution's filters alone.
SCALABLE = LAYER_KINDS["conv"] + LAYER_KINDS["dense"]


def _guess(f: Finding, step: int) -> float:
    """What an unpriced finding ranks as saving (never shown as a projection)."""
    scalable = f.kind == "layer" and any(x.label == "class" and x.value in SCALABLE for x in f.facts)
    return UNPRICED_PART * f.share * step if f.kind in GUESSED or scalable else 0.0


def _ties(now: list[Finding], step: int, noise_ps: int) -> dict[int, int]:
    """{position: rank of its tie's first} for each run of two or more findings of `now` (largest
    saving first) whose savings lie within `noise_ps` of the run's first."""
    ties: dict[int, int] = {}
    i = 0
    while i < len(now):
        top = step - _then(now[i])
        j = i + 1
        while noise_ps > 0 and j < len(now) and top - (step - _then(now[j])) <= noise_ps:
            j += 1
        if j - i > 1:
            ties.update({k: i + 1 for k in range(i, j)})
        i = j
    return ties
