"""The order of the findings a run reports: by what each fix saves now, ties within the run's
step-to-step noise shown as ties, fixes the trace cannot price after those it can, and fixes that
save nothing while another bound holds the step last, with what they save once it is fixed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    now = [f for f in priced if step - f.step_if_removed_ps > LATER * step]
    unpriced = sorted((f for f in found if f.basis == "none"), key=lambda f: (-f.share, f.id, f.title))
    later = sorted((f for f in priced if f not in now), key=lambda f: (-f.share, f.id, f.title))
    now.sort(key=lambda f: (-(step - f.step_if_removed_ps), -f.share, f.id, f.title))
    ordered, ties = now, _ties(now, step, noise_ps)
    out = [Ranked(f, tie_rank=ties.get(i, 0)) for i, f in enumerate(ordered)]
    out += [Ranked(f) for f in unpriced]
    first = ordered[0].step_if_removed_ps if ordered else step
    for f in later:
        then = max(round(first - (f.removed_ps or f.share * step)), 0) if ordered else 0
        out.append(Ranked(f, bool(ordered), then))
    return out


def _ties(now: list[Finding], step: int, noise_ps: int) -> dict[int, int]:
    """{position: rank of its tie's first} for each run of two or more findings of `now` (largest
    saving first) whose savings lie within `noise_ps` of the run's first."""
    ties: dict[int, int] = {}
    i = 0
    while i < len(now):
        top = step - now[i].step_if_removed_ps
        j = i + 1
        while noise_ps > 0 and j < len(now) and top - (step - now[j].step_if_removed_ps) <= noise_ps:
            j += 1
        if j - i > 1:
            ties.update({k: i + 1 for k in range(i, j)})
        i = j
    return ties
