"""A finding (one cause of lost time, with its evidence, fix and projection) and Fact, one
evidence item of it (a label and the number or name it states)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One evidence item of a bottleneck: a label, and the number (or name) it states."""

    label: str
    value: float | int | str | None = None
    unit: str = ""  # ms, %, or a count's noun


@dataclass(frozen=True)
class Finding:
    """One cause of lost time. `share` is of wall time (steps and the gaps between them);
    `part` is the breakdown part it explains (input, compute, host_overhead, idle, or "" for
    views across parts such as a layer); `step_if_removed_ps` is the mean step (with its gap)
    once the cause's own fix is applied, as the detector that knows that fix models it. The
    evidence line is the facts joined, unless the detector words it (`evidence`: a comparison
    or sizes the facts alone would not read as); `subject` names what a finding is about where a
    run has several (an allocator)."""

    kind: str
    title: str
    share: float
    facts: tuple[Fact, ...]
    fix: str
    step_if_removed_ps: int
    part: str = ""
    evidence: str = ""
    subject: str = ""
    removed_ps: float = 0.0  # per step, the time its fix removes once nothing else holds the step (0: share's)
    id: str = ""  # kind/subject (analysis/findings/ids.py), set once every detector has run
    # What `step_if_removed_ps` rests on (report.PROJECTION_BASES), how it was made, and the step no
    # such fix goes below (0: none); analysis/findings/projection.py makes the three together.
    basis: str = ""
    how: str = ""
    floor_ps: int = 0
    measured_step_ps: int | None = None  # the step with the fix applied, as confirm timed it (analysis/measured.py)
