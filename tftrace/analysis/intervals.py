"""Interval unions on a timeline: how much of a window a set of (possibly overlapping,
possibly parallel) events covers, without counting parallel threads twice."""

from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted intervals covering the union of [starts, ends).

    Sorted on their own, the i-th smallest end E[i] closes a block exactly when the next start
    S[i+1] comes after it (then as many intervals have ended as have begun). So two plain sorts
    do it, with no index array: on millions of events, memory is the tool's limit. Intervals
    already in time order (one line's) need no sort at all: the running maximum of their ends
    plays E's part."""
    valid = ends > starts
    if not valid.all():
        starts, ends = starts[valid], ends[valid]
    del valid
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if (starts[1:] >= starts[:-1]).all():  # in time order, as on one line: a running max, no sort
        return _blocks(starts, np.maximum.accumulate(ends))
    # Stable sorts are timsort here: inputs made of a few sorted runs (blocks of several lines, or
    # sorted blocks plus a few more) sort in close to linear time.
    return _blocks(np.sort(starts, kind="stable"), np.sort(ends, kind="stable"))


def union(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """merge() of two sets of merged intervals (each disjoint and in order): the smaller set's
    starts and ends put into the larger's where they belong, with no sort."""
    if not len(a[0]):
        return b
    if not len(b[0]):
        return a
    if len(a[0]) > len(b[0]):
        a, b = b, a
    starts = np.insert(b[0], np.searchsorted(b[0], a[0]), a[0])
    ends = np.insert(b[1], np.searchsorted(b[1], a[1]), a[1])
    return _blocks(starts, ends)


def _blocks(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union's blocks from sorted starts and sorted ends (or, with starts sorted, the running
    maximum of the ends): a block closes at ends[i] when starts[i + 1] comes after it."""
    first = np.empty(len(starts), bool)
    first[0] = True
    np.greater(starts[1:], ends[:-1], out=first[1:])
    last = np.empty(len(starts), bool)
    last[:-1] = first[1:]
    last[-1] = True
    return starts[first], ends[last]


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


def overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], lo: np.ndarray,
            hi: np.ndarray) -> np.ndarray:
    """For each window [lo, hi): how much of it two sets of merged intervals both cover
    (|A| + |B| - |A or B|, each measured inside the window)."""
    if not len(a[0]) or not len(b[0]):
        return np.zeros(len(lo), np.int64)
    either = merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    return np.maximum(covered(*a, lo, hi) + covered(*b, lo, hi) - covered(*either, lo, hi), 0)


def merge_rows(events, mask: np.ndarray, chunk: int = 1 << 18) -> tuple[np.ndarray, np.ndarray]:
    """merge() of the selected events' [start, end), one line at a time and a batch of rows at a
    time: a line's events come in time order and nest, so each batch collapses to few blocks
    without a sort, and no temporary spans every event."""
    starts, ends = [], []
    start_col, dur_col = events["start_ps"], events["dur_ps"]
    for lo, hi in _batches(events["line"], chunk):
        idx = np.flatnonzero(mask[lo:hi]) + lo
        if len(idx):
            s = start_col[idx]
            blocks = merge(s, s + dur_col[idx])
            starts.append(blocks[0])
            ends.append(blocks[1])
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    all_starts, all_ends = np.concatenate(starts), np.concatenate(ends)
    del starts[:], ends[:]
    all_starts.sort(kind="stable")  # our own copies, sorted in place (runs of sorted lines: timsort)
    all_ends.sort(kind="stable")
    return _blocks(all_starts, all_ends)


def _batches(line: np.ndarray, chunk: int):
    """Row ranges [lo, hi) that never cross a line (rows of a line are contiguous) nor `chunk` rows."""
    cuts = np.flatnonzero(line[1:] != line[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(line)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        for lo in range(a, b, chunk):
            yield lo, min(lo + chunk, b)
