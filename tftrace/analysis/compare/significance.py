"""A two-sample test for step times: Mann-Whitney U, rank-based, robust to the heavy tails
step times have (a slow first step, a GC pause)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_STEPS = 5  # below this per side, no test can separate a change from step-to-step noise
ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    significant: bool
    p_value: float  # nan when not tested
    test: str  # what was done, in words


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), np.float64)
    sorted_vals = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def compare_steps(a: list[int], b: list[int]) -> Comparison:
    """Is the difference between two sets of step times more than step-to-step noise?"""
    n1, n2 = len(a), len(b)
    if n1 < MIN_STEPS or n2 < MIN_STEPS:
        return Comparison(False, float("nan"),
                          f"too few steps to judge ({n1} vs {n2}; at least {MIN_STEPS} per side are needed)")
    values = np.asarray(list(a) + list(b), np.float64)
    ranks = _ranks(values)
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    _, counts = np.unique(values, return_counts=True)
    n = n1 + n2
    tie = (counts ** 3 - counts).sum() / (n * (n - 1)) if n > 1 else 0.0
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie))
    if sd == 0:
        return Comparison(False, 1.0, "Mann-Whitney U: all step times equal")
    z = (abs(u - n1 * n2 / 2) - 0.5) / sd  # continuity correction
    p = math.erfc(max(z, 0.0) / math.sqrt(2))
    return Comparison(p < ALPHA, round(p, 4), f"Mann-Whitney U (two-sided), p={p:.3f}, {n1} vs {n2} steps")
