"""Ops slowed by the ops beside them: on a CPU, ops that run at once share its cores (TensorFlow
runs independent ops on several threads, each spreading its work over the same intra-op pool), so
an op that ran beside a heavy owner's ops can take many times what the same op takes in a run
with none of them beside it. Removing that owner gives those ops their cores back."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.findings.context import Context


@dataclass(frozen=True)
class Freed:
    ps: float  # over the window: the wall time of other owners' ops their stretched runs held
    stretched: int  # runs of other owners' ops beside the owner's, each slower than its runs alone
    slowdown: float  # those runs' time over what the same ops took alone


def freed(ctx: Context, kind: str, name: str) -> Freed:
    """What removing owner (`kind`, `name`)'s ops frees of the other owners' op time: each run
    of another owner's op beside them, less the same op's fastest run in the window (a graph runs
    an op on the same shapes every step: its fastest run is its work, the rest of a run beside
    the owner's ops waited for cores), at most the part of the run beside them; in all, no more
    than the owner's own op time (an op cannot delay another longer than it holds the cores); as
    the owners table shares each step's op wall time among its ops."""
    ow = ctx.owners
    cols = [i for i, k in enumerate(ow.keys) if k.kind == kind and k.name == name]
    if not ctx.on_cpu or not cols or not len(ow.op_rows):
        return Freed(0.0, 0, 1.0)
    ev = ctx.trace.events
    rows, own = ow.op_rows, np.asarray(ow.op_cols)
    start, end = ev["start_ps"][rows], ev["start_ps"][rows] + ev["dur_ps"][rows]
    mine = np.isin(own, cols)
    if not mine.any() or mine.all():
        return Freed(0.0, 0, 1.0)
    m_start, m_end = _merged(start[mine], end[mine])
    others = np.flatnonzero(~mine)
    # Only the runs that meet the owner's intervals can have lost cores to them: found with one
    # search (the last interval starting before a run ends meets it iff it ends after the run starts).
    i = np.searchsorted(m_start, end[others], side="left") - 1
    others = others[(i >= 0) & (m_end[np.maximum(i, 0)] > start[others])]
    if not len(others):
        return Freed(0.0, 0, 1.0)
    beside = _covered(m_start, m_end, start[others], end[others])
    names = ev["name"][rows]
    self_ps = ev["self_ps"][rows[others]].astype(np.float64)
    fastest = _fastest(names[others], names[~mine], ev["self_ps"][rows[~mine]])
    stretch = np.clip(np.minimum(self_ps - fastest, beside), 0, None)
    held = ev["self_ps"][rows[mine]].astype(np.float64)
    wall = min(_as_wall(ctx, start[others], own[others], stretch, cols), _as_wall(ctx, start[mine], own[mine], held, []))
    slowed = stretch > 0
    return Freed(wall, int(slowed.sum()), float(self_ps[slowed].sum() / max(fastest[slowed].sum(), 1.0)))


def _fastest(names: np.ndarray, all_names: np.ndarray, all_values: np.ndarray) -> np.ndarray:
    """Per name in `names`: the smallest of its rows' values among all rows (`all_names`)."""
    uniq, inverse = np.unique(names, return_inverse=True)
    pick = np.isin(all_names, uniq)
    low = np.full(len(uniq), np.inf)
    np.minimum.at(low, np.searchsorted(uniq, all_names[pick]), all_values[pick].astype(np.float64))
    return low[inverse.reshape(-1)]


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


def _as_wall(ctx: Context, start, own, stretch, cols) -> float:
    """Stretch (op self time) in wall time: each step's op wall time goes to its ops by their own
    time (owners table), so the stretch of a step takes that step's share of its op wall time."""
    tl, op_ps = ctx.tl, ctx.owners.op_ps
    it = np.searchsorted(tl.start, start, side="right") - 1
    ok = (it >= 0) & (it < len(tl.dur))
    per = np.zeros((len(tl.dur), op_ps.shape[1]))
    np.add.at(per, (it[ok], own[ok]), stretch[ok])
    per = np.minimum(per, op_ps)  # no owner frees more than its ops' time
    if cols:
        per[:, cols] = 0
    total = op_ps.sum(axis=1)
    has = total > 0
    return float((tl.compute[has] * per[has].sum(axis=1) / total[has]).sum())
