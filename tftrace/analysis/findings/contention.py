"""Ops slowed by the ops beside them: on a CPU, ops that run at once share its cores (TensorFlow
runs independent ops on several threads, each spreading its work over the same intra-op pool), so
an op that ran beside a heavy owner's ops can take many times what the same op takes in its
fastest run. Each op's time as it ran then says little of its work: an owner's part of the step
is better read from every op's work at its own pace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.findings.context import Context


@dataclass(frozen=True)
class Beside:
    """An owner's ops and the other owners' op runs beside them, over the window."""

    span_ps: float = 0.0  # the wall time the owner's ops ran (their intervals merged)
    beside_ps: float = 0.0  # the other owners' run time inside that span
    runs: int = 0  # the other owners' runs beside the owner's ops
    slowdown: float = 1.0  # those runs' time over their ops' fastest runs


@dataclass(frozen=True)
class _Runs:
    """The owners table's op runs, gathered once for every owner asked about."""

    start: np.ndarray
    end: np.ndarray
    self_ps: np.ndarray
    pace: np.ndarray  # per run: its op's fastest run in the window
    step: np.ndarray  # per run: its iteration
    paced_total: np.ndarray  # per iteration: its runs' paced time


def _runs(ctx: Context) -> _Runs:
    ow, ev, tl = ctx.owners, ctx.trace.events, ctx.tl
    rows = ow.op_rows
    start = ev["start_ps"][rows]
    names, self_ps = ev["name"][rows], ev["self_ps"][rows].astype(np.float64)
    # The fastest run of each op, in a table by name code: a trace has thousands of names, not millions.
    low = np.full(len(ctx.trace.names) + 1, np.inf)
    np.minimum.at(low, names, self_ps)
    pace = low[names]
    step, n = ow.op_steps, len(tl.dur)  # every counted run lies in an iteration
    return _Runs(start, start + ev["dur_ps"][rows], self_ps, pace, step,
                 np.bincount(step, pace, minlength=n)[:n])


def _mine(ctx: Context, kind: str, name: str) -> np.ndarray:
    """Per op run: is it owner (`kind`, `name`)'s?"""
    ow = ctx.owners
    mask = np.zeros(len(ow.keys) + 1, bool)
    mask[[i for i, k in enumerate(ow.keys) if k.kind == kind and k.name == name]] = True
    return mask[np.asarray(ow.op_cols)]


def beside(ctx: Context, kind: str, name: str) -> Beside:
    """Owner (`kind`, `name`)'s ops on a CPU and the other owners' runs beside them."""
    if not ctx.on_cpu or not len(ctx.owners.op_rows):
        return Beside()
    mine = _mine(ctx, kind, name)
    if not mine.any() or mine.all():
        return Beside()
    r = ctx.once(_runs)
    m_start, m_end = _merged(r.start[mine], r.end[mine])
    span = float((m_end - m_start).sum())
    others = np.flatnonzero(~mine)
    # Only the runs that meet the owner's intervals: found with one search (the last interval
    # starting before a run ends meets it iff it ends after the run starts).
    i = np.searchsorted(m_start, r.end[others], side="left") - 1
    hit = others[(i >= 0) & (m_end[np.maximum(i, 0)] > r.start[others])]
    if not len(hit):
        return Beside(span)
    covered = _covered(m_start, m_end, r.start[hit], r.end[hit])
    return Beside(span, float(covered.sum()), len(hit), float(r.self_ps[hit].sum() / max(r.pace[hit].sum(), 1.0)))


def paced_wall(ctx: Context, kind: str, name: str) -> float:
    """Owner (`kind`, `name`)'s part of each step's op wall time over the window, that wall shared
    among the step's ops by their work at their own pace (each run at its op's fastest run; a
    graph runs an op on the same shapes every step), not by their time as they ran: ops that ran
    at once shared the cores and each took longer, so their times overstate the work of small ops
    that queued beside a heavy one and understate the heavy one's."""
    if not len(ctx.owners.op_rows):
        return 0.0
    r, tl = ctx.once(_runs), ctx.tl
    mine = _mine(ctx, kind, name)
    own = np.bincount(r.step[mine], r.pace[mine], minlength=len(tl.dur))[:len(tl.dur)]
    has = r.paced_total > 0
    return float((tl.compute[has] * own[has] / r.paced_total[has]).sum())


def _merged(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint intervals."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    first = np.flatnonzero(np.r_[True, s[1:] > e[:-1]])  # an interval starts a new one past the last's end
    return s[first], e[np.r_[first[1:] - 1, len(s) - 1]]


def _covered(m_start, m_end, b_start, b_end) -> np.ndarray:
    """For each interval of b: how much of it the merged intervals cover."""
    before = np.r_[0, np.cumsum(m_end - m_start)]

    def cover(t):
        i = np.searchsorted(m_start, t, side="right") - 1
        inside = np.clip(t - m_start[np.maximum(i, 0)], 0, (m_end - m_start)[np.maximum(i, 0)])
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0)

    return (cover(b_end) - cover(b_start)).astype(np.float64)
