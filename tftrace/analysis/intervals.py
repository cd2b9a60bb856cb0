"""Interval unions on a timeline: how much of a window a set of (possibly overlapping,
possibly parallel) events covers, without counting parallel threads twice."""

from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted intervals covering the union of [starts, ends)."""
    keep = np.flatnonzero(ends > starts)
    if len(keep) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = keep[np.argsort(starts[keep], kind="stable")]
    starts = starts[order]
    reach = np.maximum.accumulate(ends[order])
    # A new block starts where an interval begins after everything before it has ended.
    first = np.flatnonzero(np.concatenate(([True], starts[1:] > reach[:-1])))
    last = np.concatenate((first[1:] - 1, [len(starts) - 1]))
    return starts[first], reach[last]


def covered(m_starts: np.ndarray, m_ends: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each window [lo, hi): the length the merged intervals cover inside it."""
    lo = np.asarray(lo, np.int64)
    hi = np.asarray(hi, np.int64)
    if len(m_starts) == 0:
        return np.zeros(len(lo), np.int64)
    # Covered length of (-inf, t) for any t: whole blocks before t plus the part of the block at t.
    prefix = np.concatenate(([0], np.cumsum(m_ends - m_starts)))

    def upto(t):
        i = np.searchsorted(m_starts, t, side="right")  # blocks starting at or before t
        partial = np.where(i > 0, np.minimum(t, m_ends[np.maximum(i - 1, 0)]) - m_starts[np.maximum(i - 1, 0)], 0)
        return prefix[np.maximum(i - 1, 0)] * (i > 0) + np.maximum(partial, 0)

    return np.maximum(upto(hi) - upto(lo), 0)
