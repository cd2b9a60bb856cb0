"""Several hosts in one run: each host's steps and breakdown, steps aligned by their numbers
where markers allow, and the straggler: the host with the most work per step, which sets
everyone's step time, with the part of its step that makes it slow.

In synchronous training every host's step lasts as long as the slowest one's: the others wait
for it in collectives (an all-reduce). So hosts are compared by their work per step, the step
without the time in collectives, and the straggler is the one the others wait for."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.steps.found import Steps
from tftrace.analysis.profiler_cost import ProfilerCost
from tftrace.model.report import Breakdown, HostRow

STRAGGLER_MIN = 0.05  # a host under 5% slower than the others is noise, not a straggler
PARTS = ("input", "compute", "collectives", "host_overhead", "idle")  # a host's step, collectives split out


@dataclass(frozen=True)
class HostView:
    """One host's steps and timeline (internal to the analyses)."""

    host: str
    steps: Steps
    tl: Timeline
    parts: Breakdown
    bound: str
    collective_ps: int  # collective op self time in its steps, in total
    profiler: ProfilerCost | None = None  # the profiler's own time in the steps, left out of `parts`

    @property
    def wall_per_step(self) -> float:
        return self.tl.wall_ps / max(len(self.tl.dur), 1)

    def part_ms(self) -> dict[str, float]:
        """Per step: each part of the step in ps, collectives split out of compute."""
        per = self.wall_per_step
        coll = min(self.collective_ps / max(len(self.tl.dur), 1), self.parts.compute * per)
        return {"input": self.parts.input * per, "compute": self.parts.compute * per - coll, "collectives": coll,
                "host_overhead": self.parts.host_overhead * per, "idle": self.parts.idle * per}


def host_rows(views: list[HostView]) -> tuple[HostRow, ...]:
    return tuple(HostRow(v.host, v.steps.count, int(v.tl.dur.mean()) if len(v.tl.dur) else 0,
                         int(np.median(v.tl.dur)) if len(v.tl.dur) else 0, v.parts, v.bound,
                         round(v.collective_ps / max(len(v.tl.dur), 1)))
                 for v in views)


def slowest(views: list[HostView]) -> HostView:
    common = _common(views)
    return max(views, key=lambda v: (_work(v, common), _per_step(v, common), v.host))


def _common(views: list[HostView]) -> set[int]:
    """Step numbers every host measured, when steps are numbered by markers on all of them."""
    if any(v.steps.kind != "marker" for v in views):
        return set()
    common = set(views[0].steps.numbers)
    for v in views[1:]:
        common &= set(v.steps.numbers)
    return common


def _per_step(v: HostView, common: set[int]) -> float:
    """Mean step time (with the gap after it) over the steps all hosts share, else all steps."""
    if common:
        keep = np.isin(np.asarray(v.steps.numbers), list(common))
        return float((v.tl.dur[keep] + v.tl.idle[keep]).mean())
    return v.wall_per_step


def _work(v: HostView, common: set[int]) -> float:
    """Step time without the time in collectives: what a host takes before it can sync."""
    return _per_step(v, common) - v.part_ms()["collectives"]


@dataclass(frozen=True)
class Straggler:
    """The host the others wait for, measured against them; times are per step, in ps."""

    host: str
    work_ps: float  # its step without the time in collectives
    others_ps: float  # the same, the other hosts' median
    others: int  # how many other hosts
    step_ps: float  # its mean step with the gap after it
    common_steps: int  # steps all hosts measured, by number (0: steps not aligned)
    mine: dict[str, float]  # its step by part (PARTS)
    theirs: dict[str, float]  # the other hosts' median by part
    excess: tuple[tuple[float, str], ...]  # (ps more than the others, part), largest first, collectives aside
    waiting_ps: float  # how much longer the others wait in collectives than it does
    synced: bool  # the others' steps last as long as its: they wait for it

    @property
    def reason(self) -> str:
        """The part of its step that makes it slow."""
        return self.excess[0][1]


def straggler(views: list[HostView]) -> Straggler | None:
    """The host with the most work per step, or None when no host clearly works longer than
    the median of the others."""
    if len(views) < 2:
        return None
    common = _common(views)
    worst = slowest(views)
    others = [v for v in views if v is not worst]
    mine, theirs = _work(worst, common), float(np.median([_work(v, common) for v in others]))
    if theirs <= 0 or mine < (1 + STRAGGLER_MIN) * theirs:
        return None
    step = _per_step(worst, common)
    my_parts = worst.part_ms()
    their_parts = {p: float(np.median([v.part_ms()[p] for v in others])) for p in PARTS}
    excess = sorted(((my_parts[p] - their_parts[p], p) for p in PARTS if p != "collectives"), reverse=True)
    waiting = max(their_parts["collectives"] - my_parts["collectives"], 0)
    return Straggler(worst.host, mine, theirs, len(others), step, len(common), my_parts, their_parts, tuple(excess),
                     waiting, waiting > STRAGGLER_MIN * step)
