"""Decode many protobuf varints at once with numpy: one gather per varint, no Python per value."""

from __future__ import annotations

import numpy as np

from tftrace.read.wire import WireError

_HI = np.uint64(0x8080808080808080)  # each byte's continuation bit
_LO7 = np.uint64(0x7F7F7F7F7F7F7F7F)  # each byte's 7 payload bits
_ONE = np.uint64(1)
# Squeeze the 7-bit groups of 8 bytes together: pairs, then quads, then all 8 (56 bits).
_SQUEEZE = [(np.uint64(shift), np.uint64(keep), np.uint64(move)) for shift, keep, move in (
    (1, 0x007F007F007F007F, 0x7F007F007F007F00),
    (2, 0x00003FFF00003FFF, 0x3FFF00003FFF0000),
    (4, 0x000000000FFFFFFF, 0x0FFFFFFF00000000))]


def words(blob: np.ndarray) -> np.ndarray:
    """The 8 bytes from every position of `blob` as little-endian uint64s: a strided view (no
    copy), so one gather reads a whole varint of up to 8 bytes."""
    return np.ndarray((max(len(blob) - 7, 0),), dtype="<u8", buffer=blob, strides=(1,))


def varints(blob: np.ndarray, wide: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varint at each position (as uint64) and where each one ends. `wide` is words(blob).
    Fixed work per varint, whatever its length: offsets in picoseconds take 6-7 bytes."""
    last = len(wide) - 1
    w = wide[np.minimum(pos, last)] if last >= 0 else np.zeros(len(pos), np.uint64)
    stop = ~w & _HI
    low = stop & -stop  # the first byte without a continuation bit: the varint's last
    w &= ((low << _ONE) - _ONE) & _LO7
    for shift, keep, move in _SQUEEZE:
        w = (w & keep) | ((w & move) >> shift)
    end = pos + (np.frexp(low)[1] >> 3)  # low = 2**(8k+7): frexp's exponent 8k+8 says k+1 bytes
    # Longer than 8 bytes (values from 2**56, negative numbers), or too near the end for a word.
    redo = np.flatnonzero((low == 0) | (pos > last))
    if len(redo):
        w[redo], end[redo] = bytewise(blob, pos[redo])
    return w, end


def bytewise(blob: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same, byte by byte over fewer and fewer of them: for the few `varints` cannot read."""
    byte = blob[pos]
    value = (byte & 0x7F).astype(np.uint64)
    end = pos + 1
    more = np.flatnonzero(byte >= 0x80)
    shift = np.uint64(7)
    while len(more):
        if shift > 63:
            raise WireError("a varint is too long")
        byte = blob[end[more]]
        value[more] |= (byte & 0x7F).astype(np.uint64) << shift
        end[more] += 1
        more = more[byte >= 0x80]
        shift += np.uint64(7)
    return value, end


def sizes(values: np.ndarray) -> np.ndarray:
    """How many bytes each (non-negative) value takes as a varint."""
    size = np.ones(len(values), np.int64)
    for bits in range(7, 64, 7):
        longer = values >= 1 << bits
        if not longer.any():  # most lengths take one or two bytes: stop early
            break
        size += longer
    return size
