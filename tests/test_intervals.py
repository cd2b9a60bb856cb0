"""Interval unions, checked against a brute-force count of covered time units."""

from __future__ import annotations

import numpy as np
import pytest

from tftrace.analysis.intervals import covered, merge, merge_rows, union
from tftrace.model.events import Columns


def _units(starts, ends) -> set[int]:
    """Every integer instant some interval [s, e) covers."""
    return {t for s, e in zip(starts.tolist(), ends.tolist()) for t in range(s, e)}


@pytest.mark.parametrize("seed", range(6))
def test_merge_is_the_union_in_disjoint_sorted_blocks(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(0, 40))
        s = rng.integers(0, 200, n).astype(np.int64)
        e = s + rng.integers(-5, 30, n)
        if seed % 2:  # in time order, as one line's events are
            order = np.argsort(s, kind="stable")
            s, e = s[order], e[order]
        lo, hi = merge(s, e)
        assert (lo[1:] > hi[:-1]).all() and (hi > lo).all()  # disjoint, sorted, no empty or touching blocks
        assert _units(lo, hi) == _units(s, e)


def test_merge_rows_matches_merge_across_lines_and_batches():
    rng = np.random.default_rng(7)
    lines = np.repeat(np.arange(4), 250).astype(np.int32)
    start = np.concatenate([np.sort(rng.integers(0, 5000, 250)) for _ in range(4)]).astype(np.int64)
    dur = rng.integers(0, 40, 1000).astype(np.int64)
    events = Columns({"line": lines, "start_ps": start, "dur_ps": dur})
    mask = rng.random(1000) < 0.7
    want = merge(start[mask], start[mask] + dur[mask])
    for chunk in (7, 64, 1 << 18):
        got = merge_rows(events, mask, chunk)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_covered_counts_each_window_once():
    lo, hi = merge(np.array([0, 5, 20], np.int64), np.array([10, 12, 30], np.int64))
    assert covered(lo, hi, np.array([0, 11, 25]), np.array([5, 22, 40])).tolist() == [5, 3, 5]


def test_union_of_two_merged_sets_is_the_merge_of_all_their_intervals():
    rng = np.random.default_rng(7)
    for trial in range(200):
        sets = []
        for n in (int(rng.integers(0, 40)), int(rng.integers(0, 400))):
            s = rng.integers(0, 5000, n)
            sets.append(merge(s, s + rng.integers(0, 60, n)))  # touching, nested, empty ones too
        got = union(*sets)
        want = merge(np.concatenate([sets[0][0], sets[1][0]]), np.concatenate([sets[0][1], sets[1][1]]))
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), trial
        assert np.array_equal(union(sets[1], sets[0])[0], want[0])
