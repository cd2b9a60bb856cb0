"""Exact integer group sums at numpy speed (bincount sums in float64, which would round ps)."""

from __future__ import annotations

import numpy as np

_LOW_BITS = 24
# numpy 2 adds with ufunc.at at bincount's speed or better, in integers; older numpy's ufunc.at
# is many times slower, and bincount sums in float64.
_FAST_AT = int(np.__version__.split(".")[0]) >= 2


def exact_sums(keys: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """int64 sums of `values` per key in [0, size). With older numpy, each half of the values'
    bits is summed in float64 separately, where every partial sum stays far below 2**53, so
    nothing rounds."""
    values = np.asarray(values, np.int64)
    if _FAST_AT:
        out = np.zeros(size, np.int64)
        np.add.at(out, keys, values)
        return out
    low = np.bincount(keys, weights=values & ((1 << _LOW_BITS) - 1), minlength=size)
    high = np.bincount(keys, weights=values >> _LOW_BITS, minlength=size)
    return (high.astype(np.int64) << _LOW_BITS) + low.astype(np.int64)


CHUNK = 1 << 16  # rows per batch: temporaries stay a few MB however large the trace


def masked_sums(keys: np.ndarray, values: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
    """exact_sums over the rows `mask` selects, a batch of rows at a time (no full-length copy)."""
    out = np.zeros(size, np.int64)
    for lo in range(0, len(mask), CHUNK):
        part = mask[lo:lo + CHUNK]
        if part.any():
            out += exact_sums(keys[lo:lo + CHUNK][part], values[lo:lo + CHUNK][part], size)
    return out


def distinct(values) -> np.ndarray:
    """The sorted distinct values, as np.unique gives them. Not np.unique itself: its plain form
    imports numpy.ma on first use (8 ms, a tenth of a small trace's whole analysis)."""
    v = np.sort(np.asarray(values).ravel())
    if len(v) < 2:
        return v
    keep = np.empty(len(v), bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]
