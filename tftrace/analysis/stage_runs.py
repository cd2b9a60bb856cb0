"""How each tf.data stage runs: how often it is called per step (elements or batches through
it), what a call costs, on how many threads, and how many of its calls ran at once (the
parallelism it actually gets), from its iterator events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.sums import distinct
from tftrace.model.events import Trace
from tftrace.model.names import stage_name


@dataclass(frozen=True)
class StageRuns:
    stage: str
    calls_per_step: float
    us_per_call: float  # mean duration of one call (its children included)
    threads: int  # distinct threads its calls ran on
    parallel: float  # its calls' busy time over the time any ran: 1.0 is one at a time

    def phrase(self) -> str:
        """`32 calls per step, 0.52 ms each, one at a time on 1 thread`."""
        at_once = "one at a time" if self.parallel < 1.2 else f"{self.parallel:.1f} at a time"
        each = f"{self.us_per_call / 1e3:.2f} ms" if self.us_per_call >= 100 else f"{self.us_per_call:.0f} us"
        return (f"{self.calls_per_step:g} calls per step, {each} each, {at_once} on {self.threads} "
                f"thread{'s' if self.threads != 1 else ''}")


def stage_runs(trace: Trace, stages: list[str], steps: int) -> dict[str, StageRuns]:
    """For the named stages (`Map`, `ParallelMapV2`...): their calls from the iterator events."""
    wanted = set(stages)
    codes = [c for c, n in enumerate(trace.names) if n.startswith("Iterator::") and stage_name(n) in wanted]
    if not codes or steps <= 0:
        return {}
    ev = trace.events
    rows = np.flatnonzero(trace.named(codes))
    out = {}
    by_stage: dict[str, list[int]] = {}
    for code in codes:
        by_stage.setdefault(stage_name(trace.names[code]), []).append(code)
    names = ev["name"][rows]
    for stage, stage_codes in by_stage.items():
        mine = rows[np.isin(names, stage_codes)]
        if not len(mine):
            continue
        start, dur = ev["start_ps"][mine], ev["dur_ps"][mine]
        span = _union(start, start + dur)
        busy = float(dur.sum())
        out[stage] = StageRuns(stage, round(len(mine) / steps, 1), busy / len(mine) / 1e6,
                               int(len(distinct(ev["line"][mine]))), busy / span if span else 1.0)
    return out


def _union(start: np.ndarray, end: np.ndarray) -> float:
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    group = np.cumsum(new) - 1
    lo = s[new]
    hi = np.zeros(len(lo), np.int64)
    np.maximum.at(hi, group, e)
    return float((hi - lo).sum())
