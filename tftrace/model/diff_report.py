"""The diff report: frozen parts and its JSON form (README, "The JSON report")."""

from __future__ import annotations

from dataclasses import dataclass

from tftrace.model.display import HtmlDisplay
from tftrace.model.report import SCHEMA_VERSION, _to_json


@dataclass(frozen=True)
class StepTimeDelta:
    baseline_ps: int  # median step time
    candidate_ps: int
    delta_pct: float
    significant: bool
    test: str
    p_value: float
    baseline_steps: int
    candidate_steps: int


@dataclass(frozen=True)
class StepTime:
    """One step of a side, for the step-time distributions."""

    number: int
    dur_ps: int


@dataclass(frozen=True)
class HostDelta:
    """One host present in both runs (or in one: `status` added / removed): its mean step time."""

    host: str
    baseline_ps: int
    candidate_ps: int
    delta_pct: float
    baseline_bound: str
    candidate_bound: str
    status: str = "changed"


@dataclass(frozen=True)
class PartDelta:
    baseline: float  # fraction of step time
    candidate: float
    delta: float
    baseline_ps: int  # per step
    candidate_ps: int


@dataclass(frozen=True)
class RowDelta:
    """One op, layer or category, per step: `status` is changed, added or removed."""

    name: str
    baseline_ps: int
    candidate_ps: int
    delta_ps: int
    status: str
    type: str = ""
    category: str = ""


@dataclass(frozen=True)
class ExperimentDelta:
    """One figure an experiment timed (`confirm`), on each side that has it (None: not timed)."""

    figure: str  # input_alone_ms, step_alone_ms, step_measured_ms, predict_ms, direct_call_ms...
    baseline: float | None
    candidate: float | None


@dataclass(frozen=True)
class MemoryDelta:
    """One allocator's peak bytes in use, before and after (`status`: changed, added, removed)."""

    allocator: str
    baseline_bytes: int
    candidate_bytes: int
    delta_bytes: int
    delta_pct: float
    capacity_bytes: int  # the candidate's (else the baseline's); 0: not stated
    candidate_share: float  # the candidate's peak, of capacity; 0 without one
    status: str = "changed"


@dataclass(frozen=True)
class RateDelta:
    """Achieved FLOP/s before and after: the step's (with MFU as its shares) or one roofline
    row's (an op, owner or layer, with its share of the roofline); None where a side has none."""

    scope: str  # step | op | owner | layer
    name: str
    phase: str
    baseline_flops_per_s: float | None
    candidate_flops_per_s: float | None
    ratio: float | None  # candidate over baseline
    baseline_share: float | None  # step: MFU; others: share of the roofline
    candidate_share: float | None
    status: str = "changed"  # changed | added | removed


@dataclass(frozen=True)
class Gate:
    """The decision of `tftrace diff --fail-if-slower PCT`; `failed` means exit code 1."""

    fail_if_slower_pct: float  # the limit, in percent of the baseline's median step time
    failed: bool
    reason: str  # one line, for a CI log


@dataclass(frozen=True)
class FindingDelta:
    """One finding of either run, matched by its id: `status` is resolved (the baseline's only),
    new (the candidate's only) or persisting (both); rank 0 and share 0 on the side without it."""

    id: str
    kind: str
    title: str  # the candidate's title where it has the finding, else the baseline's
    status: str
    baseline_rank: int
    candidate_rank: int
    baseline_share: float  # of step time
    candidate_share: float
    baseline_saves_ps: int  # per step, what its fix was projected to save on that side
    candidate_saves_ps: int


@dataclass(frozen=True)
class DiffVerdict:
    """The diff in a word and a line: `speed` is faster, slower or same (a significant change in
    the median step time, else same), or unknown (too few steps to test); `findings` says whether
    the findings were matched (matched), or why not (`no ids`: a side saved before findings had ids)."""

    speed: str = "unknown"
    resolved: int = 0
    new: int = 0
    persisting: int = 0
    findings: str = "matched"
    text: str = ""


@dataclass(frozen=True)
class DiffReport(HtmlDisplay):
    baseline: str
    candidate: str
    step_time: StepTimeDelta
    breakdown: dict[str, PartDelta]  # part -> PartDelta
    ops: tuple[RowDelta, ...]
    layers: tuple[RowDelta, ...]
    categories: tuple[RowDelta, ...]
    summary: str
    baseline_verdict: str = ""
    candidate_verdict: str = ""
    notes: tuple[str, ...] = ()
    baseline_step_times: tuple[StepTime, ...] = ()  # every step the significance test compared
    candidate_step_times: tuple[StepTime, ...] = ()
    gate: Gate | None = None  # set by --fail-if-slower
    hosts: tuple[HostDelta, ...] = ()  # runs with several hosts: each host's step time, compared
    experiment: tuple[ExperimentDelta, ...] = ()  # figures timed apart (`confirm`), where either run has them
    memory: tuple[MemoryDelta, ...] = ()  # peak bytes per allocator, matched by name
    owners: tuple[RowDelta, ...] = ()  # each owner's time per step (type: its kind), matched by owner and phase
    # Runs with a device: the device idle while the host waits for input data (a part of host
    # overhead), where either run has any; None otherwise.
    input_wait: PartDelta | None = None
    rates: tuple[RateDelta, ...] = ()  # achieved FLOP/s: the step's, then ops', owners' and layers' (analysis/cost)
    schema_version: int = SCHEMA_VERSION
    # The findings of both runs matched by id (resolved, new, persisting), and the diff's verdict.
    findings: tuple[FindingDelta, ...] = ()
    verdict: DiffVerdict = DiffVerdict()

    # The rows of these tables name their subject by this key in JSON, not `name` (json_schema.py reads it too).
    JSON_ROW_KEYS = {"layers": "layer", "categories": "category", "owners": "owner"}

    def to_dict(self) -> dict:
        data = _to_json(self)
        data["breakdown"] = {k: _to_json(v) for k, v in self.breakdown.items()}
        for table, key in self.JSON_ROW_KEYS.items():
            for row in data[table]:
                row[key] = row.pop("name")
        return data
