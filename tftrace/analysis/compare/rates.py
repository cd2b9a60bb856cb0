"""Compare two runs' FLOP rates: the step's achieved FLOP/s and MFU, and each op's, owner's and
layer's achieved FLOP/s and share of its roofline, matched by scope, name and phase."""

from __future__ import annotations

from tftrace.model.diff_report import RateDelta
from tftrace.model.report import RunReport


def rate_deltas(base: RunReport, cand: RunReport, top: int | None = 20) -> tuple[RateDelta, ...]:
    """The step's row first (where either run counted its work), then the roofline rows of both
    runs, the largest change in achieved FLOP/s first; empty where neither run has costs."""
    out = []
    b, c = base.roofline.flops_per_s, cand.roofline.flops_per_s
    if b is not None or c is not None:
        out.append(RateDelta("step", "each step", "", b, c, _ratio(b, c), base.mfu, cand.mfu, _status(b, c)))
    rows_b = {(r.scope, r.name, r.phase): r for r in base.roofline.rows}
    rows_c = {(r.scope, r.name, r.phase): r for r in cand.roofline.rows}
    rows = []
    for key in set(rows_b) | set(rows_c):
        x, y = rows_b.get(key), rows_c.get(key)
        fb, fc = (x.flops_per_s if x else None), (y.flops_per_s if y else None)
        if fb is None and fc is None:
            continue
        rows.append(RateDelta(*key, fb, fc, _ratio(fb, fc), x.roofline if x else None, y.roofline if y else None,
                              _status(fb, fc)))
    rows.sort(key=lambda d: (-abs((d.candidate_flops_per_s or 0) - (d.baseline_flops_per_s or 0)), d.scope, d.name,
                             d.phase))
    return tuple(out + (rows[:top] if top else rows))


def _ratio(b: float | None, c: float | None) -> float | None:
    return round(c / b, 4) if b and c is not None else None


def _status(b, c) -> str:
    return "added" if b is None else "removed" if c is None else "changed"
