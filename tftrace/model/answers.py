"""The answers to the questions an agent or a script asks of a run (`tftrace findings`, `explain`,
`whatif`), a spilled answer's file, and a JSON error: frozen parts and their JSON form."""

from __future__ import annotations

from dataclasses import dataclass

from tftrace.model.owners import OwnerRow
from tftrace.model.roofline import Roofline as RunRooflineRows
from tftrace.model.report import SCHEMA_VERSION, Bottleneck, OpRow, StepRow, _to_json
from tftrace.model.step_view import StepView


class _Json:
    def to_dict(self) -> dict:
        return _to_json(self)


@dataclass(frozen=True)
class FindingRow:
    """One ranked finding, compact: what it is, what its fix would leave of the step, and the fix."""

    id: str  # kind/subject: the same across captures of the same program
    rank: int
    kind: str
    title: str
    part: str  # the breakdown part it explains, "" for views across parts
    share: float  # of step time
    step_ps: int  # the mean step (with the gap after it) it is projected from
    step_if_removed_ps: int  # the step once its fix is applied, as projected
    projection_basis: str  # removed | overlap | roofline | dispatch | measured | none; "" where not stated
    measured_step_ps: int | None  # the step with the fix applied, timed by confirm; None if not
    after_first: bool  # its fix saves nothing while finding 1 holds the step
    recommendation: str


@dataclass(frozen=True)
class RunFindings:
    path: str
    name: str
    mode: str
    bound: str  # the verdict's bound: input | compute | host_overhead | idle | unknown
    verdict: str
    step_ps: int  # the mean step time (with the gap after it)
    findings: tuple[FindingRow, ...] = ()
    error: str = ""  # set when the run could not be read


@dataclass(frozen=True)
class Findings(_Json):
    """`tftrace findings PATH`: each run's findings, ranked by what their fixes save."""

    runs: tuple[RunFindings, ...]
    tftrace_version: str = ""
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class LeftOut:
    """How many rows of each kind an explanation left out to stay within its caps."""

    ops: int = 0
    owners: int = 0
    steps: int = 0
    events: int = 0


@dataclass(frozen=True)
class Explanation(_Json):
    """`tftrace explain PATH ID`: what one finding rests on, each list capped."""

    path: str
    run: str
    finding: Bottleneck
    ops: tuple[OpRow, ...]  # the ops it is about, most self time first
    owners: tuple[OwnerRow, ...]  # the owners it is about, most time per step first
    steps: tuple[StepRow, ...]  # the steps it shows most in, in that order
    timeline: StepView  # the median step, only the lanes and events of what it is about
    chosen: tuple[str, ...]  # how each list was chosen, one line each
    left_out: LeftOut = LeftOut()
    tftrace_version: str = ""
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class FixEffect:
    """One fix asked for, and what it counts for in the combination."""

    id: str
    kind: str
    title: str
    part: str
    basis: str  # its projection basis; "" where the report does not state it
    alone_ps: int  # per step, what it saves on its own (step less its projected or measured step)
    counted_ps: int  # per step, what it adds to the combination once the rules are applied
    note: str  # what its figure rests on, and why it counts less than alone, if it does


@dataclass(frozen=True)
class PartEffect:
    """The fixes in one breakdown part together: they save at most what the part holds."""

    part: str
    part_ps: int  # per step, the part's time
    asked_ps: int  # per step, its fixes' savings added up
    saved_ps: int  # per step, what is counted


@dataclass(frozen=True)
class WhatIf(_Json):
    """`tftrace whatif PATH --fix ID ...`: the step once several fixes are applied together."""

    path: str
    run: str
    step_ps: int  # the mean step (with the gap after it) now
    step_after_ps: int  # projected, with every fix asked for applied
    saved_ps: int
    speedup: float  # step_ps / step_after_ps
    floor_ps: int  # the largest floor of the fixes: no combination goes below it
    fixes: tuple[FixEffect, ...]
    parts: tuple[PartEffect, ...]
    unknown: tuple[str, ...]  # ids whose projection basis is none: counted as saving nothing
    rests_on: tuple[str, ...]  # what the figure rests on, one line each
    rule: str  # how the fixes were combined
    tftrace_version: str = ""
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class RunOwners:
    path: str
    name: str
    step_ps: int  # the mean iteration (a step and the gap after it) the rows add up to
    owners: tuple[OwnerRow, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Owners(_Json):
    """Each run's owners: who in the program holds each part of a step, largest first."""

    runs: tuple[RunOwners, ...]
    tftrace_version: str = ""
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class CostRow:
    """An op's time and, where the trace or the cost model says, its FLOPs and bytes (totals over the trace)."""

    name: str
    type: str
    device: str
    count: int
    self_ps: int
    flops: float | None
    bytes_accessed: float | None


@dataclass(frozen=True)
class DevicePeak:
    host: str
    device: str
    peak_flops_per_s: float | None
    peak_bytes_per_s: float | None


@dataclass(frozen=True)
class RunRoofline:
    path: str
    name: str
    flops_per_step: float | None  # the model's FLOPs in one step; None where unknown
    mfu: float | None  # model FLOPs / step time / the devices' peak; None where unknown
    devices: tuple[DevicePeak, ...] = ()
    ops: tuple[CostRow, ...] = ()  # the ops the report lists, most self time first
    known: bool = False  # some op, device or the run has a cost figure
    error: str = ""
    # The run's roofline as the report has it: the roofs, the precision and its peak, the rule
    # deciding each row's bound, and per op, owner and layer their work, rate and share of the roof.
    roofline: RunRooflineRows = RunRooflineRows()


@dataclass(frozen=True)
class RooflineAnswer(_Json):
    """The cost figures each run's report holds (null where the trace cannot say)."""

    runs: tuple[RunRoofline, ...]
    tftrace_version: str = ""
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class Captured(_Json):
    """What `tftrace capture` (the MCP capture tool) wrote."""

    run_dir: str
    captured: tuple[str, ...]  # the hosts captured
    failed: tuple[str, ...]  # `address: why`, one per server that could not be captured
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class SpilledFile:
    path: str
    bytes: int
    limit: int  # the most bytes an answer prints; larger ones go to the file


@dataclass(frozen=True)
class Spilled(_Json):
    """An answer too large to print: where it was written instead."""

    file: SpilledFile
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class ErrorBody:
    code: str  # usage | not_found | trace_read | no_traces | report | unknown_finding | bad_input | interrupted
    message: str  # one line
    exit: int  # the command's exit code: 2 bad input, 130 interrupted


@dataclass(frozen=True)
class ErrorAnswer(_Json):
    """What any command with `--format json` prints instead of its output when it fails."""

    error: ErrorBody
