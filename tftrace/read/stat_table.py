"""Many events' stats (XStat) decoded at once with numpy: per stat its event, metadata id, value
kind and raw value, with no Python per stat.

An XEvent holds fields 1-3 and 5 as varints and its stats as field 4; an XStat is its
metadata_id (field 1) then one value: a double (2), a uint64 (3), an int64 (4), a string (5),
bytes (6) or a reference to another stat's name (7). The fields are walked a round at a time
over every event still open. Laid out otherwise (a value before its id, two values in one stat,
an event field this reader does not know), `stat_table` returns None and the caller parses
those events with the protobuf library, which accepts any order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tftrace.read import varints
from tftrace.read.wire import WireError

DOUBLE, UINT64, INT64, STRING, BYTES, REF = 2, 3, 4, 5, 6, 7
_EVENT_VARINTS = (0x08, 0x10, 0x18, 0x28)  # metadata_id, offset_ps, duration_ps, num_occurrences
_EVENT_STAT, _STAT_ID = 0x22, 0x08
_VALUE_WIRE = {DOUBLE: 1, UINT64: 0, INT64: 0, STRING: 2, BYTES: 2, REF: 0}
_KNOWN_EVENT_TAG = np.zeros(256, bool)
_KNOWN_EVENT_TAG[[*_EVENT_VARINTS, _EVENT_STAT]] = True
_MAX_STATS = 4096  # rounds over one event's fields: more than any writer puts in an event


class StatTable(NamedTuple):
    """Stats in file order (an event's stats together, in the order written)."""

    event: np.ndarray  # which of the events asked for (an index into them)
    key: np.ndarray  # the stat's metadata id
    kind: np.ndarray  # the value's field number (DOUBLE...REF), 0 where the stat has no value
    bits: np.ndarray  # uint64: a varint's value or a double's bits; a string's start in the data
    length: np.ndarray  # a string's or bytes' length

    def last_per_event(self, which: np.ndarray) -> np.ndarray:
        """Of the stats `which` (ascending), the last of each event: protobuf keeps the last."""
        return which[last_of_each(self.event[which])]


def last_of_each(event: np.ndarray) -> np.ndarray:
    """Where each run of equal entries ends (entries grouped, in file order)."""
    return np.flatnonzero(np.r_[event[1:] != event[:-1], True]) if len(event) else np.zeros(0, np.int64)


def stat_table(data: bytes, tags: np.ndarray) -> StatTable | None:
    """The stats of the events whose tags (field 4 of a line) sit at `tags` in `data`, ascending."""
    blob = np.frombuffer(data, np.uint8)
    wide = varints.words(blob)
    try:
        length, start = varints.varints(blob, wide, tags + 1)
        spans = _stat_spans(blob, wide, start, start + length.astype(np.int64))
        return None if spans is None else _decode_stats(blob, wide, *spans)
    except (IndexError, WireError):  # a varint running off the end: let the protobuf library say
        return None


def _stat_spans(blob, wide, start: np.ndarray, end: np.ndarray):
    """(event, start, end) of every stat, sorted by position; None for an event field not known."""
    pos, open_ = start.copy(), np.flatnonzero(start < end)
    parts = []
    for _ in range(_MAX_STATS):
        if len(open_) == 0:
            break
        at = pos[open_]
        tag = blob[at]
        stat = tag == _EVENT_STAT
        if not _KNOWN_EVENT_TAG[tag].all():
            return None
        value, after = varints.varints(blob, wide, at + 1)
        ends = after + np.where(stat, value.astype(np.int64), 0)
        parts.append((open_[stat], after[stat], ends[stat]))
        pos[open_] = ends
        open_ = open_[ends < end[open_]]
    if len(open_) or (pos > end).any():
        return None
    event, lo, hi = (np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64) for k in range(3))
    order = np.argsort(lo, kind="stable")
    return event[order], lo[order], hi[order]


def _decode_stats(blob, wide, event, lo, hi) -> StatTable | None:
    n = len(lo)
    key = np.zeros(n, np.uint64)
    kind = np.zeros(n, np.int64)
    bits = np.zeros(n, np.uint64)
    length = np.zeros(n, np.int64)
    full = np.flatnonzero(lo < hi)
    # A stat whose id is 0 has none written: its value comes first.
    named = full[blob[lo[full]] == _STAT_ID]
    key[named], after_id = varints.varints(blob, wide, lo[named] + 1)
    after = lo[full].copy()
    after[np.searchsorted(full, named)] = after_id
    if (after > hi[full]).any():
        return None
    has = after < hi[full]
    valued, at = full[has], after[has]
    tag = blob[at].astype(np.int64)
    kind[valued] = tag >> 3
    wire = np.full(8, -1)
    for k, w in _VALUE_WIRE.items():
        wire[k] = w
    if not ((kind[valued] <= REF) & (wire[np.minimum(kind[valued], 7)] == (tag & 7))).all():
        return None
    end = np.empty(len(valued), np.int64)
    double = kind[valued] == DOUBLE
    end[double] = at[double] + 9
    fixed = valued[double]
    bits[fixed] = _fixed64(blob, at[double] + 1, hi[fixed])
    other = ~double
    value, after = varints.varints(blob, wide, at[other] + 1)
    span = (kind[valued[other]] == STRING) | (kind[valued[other]] == BYTES)
    bits[valued[other]] = np.where(span, after.astype(np.uint64), value)
    length[valued[other]] = np.where(span, value.astype(np.int64), 0)
    end[other] = after + np.where(span, value.astype(np.int64), 0)
    if (end != hi[valued]).any():
        return None
    return StatTable(event, key.astype(np.int64), kind, bits, length)


def _fixed64(blob: np.ndarray, pos: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """The 8 little-endian bytes at each position (0 where they would run past `limit`)."""
    out = np.zeros(len(pos), np.uint64)
    ok = np.flatnonzero(pos + 8 <= limit)
    if len(ok):
        shifts = np.arange(8, dtype=np.uint64) * np.uint64(8)
        out[ok] = (blob[pos[ok, None] + np.arange(8)].astype(np.uint64) << shifts).sum(axis=1, dtype=np.uint64)
    return out


def int_values(kind: np.ndarray, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values as `stat_int` reads them: whether each is an integer or double that fits int64,
    and its value there (0 elsewhere)."""
    out = np.zeros(len(kind), np.int64)
    signed = kind == INT64
    out[signed] = bits[signed].view(np.int64)
    small = (kind == UINT64) & (bits < np.uint64(2 ** 63))
    out[small] = bits[small].astype(np.int64)
    double = np.flatnonzero(kind == DOUBLE)
    f = bits[double].view(np.float64)
    fits = np.isfinite(f) & (f >= -2.0 ** 63) & (f < 2.0 ** 63)
    out[double[fits]] = np.trunc(f[fits]).astype(np.int64)
    ok = signed | small
    ok[double[fits]] = True
    return ok, out


def text_values(t: StatTable, which: np.ndarray, data: bytes, stat_names: dict, none: str) -> list[str]:
    """Values as `str(stat_value(...))` reads them (`none` for a stat with no value): a reference
    is the name it points to. Raises UnicodeDecodeError for a string that is not UTF-8, which
    the protobuf library refuses too."""
    out = []
    for kind, bits, length in zip(t.kind[which].tolist(), t.bits[which].tolist(), t.length[which].tolist()):
        if kind == REF:
            out.append(str(stat_names.get(bits, "")))
        elif kind == STRING:
            out.append(data[bits:bits + length].decode())
        elif kind == BYTES:
            out.append(str(data[bits:bits + length]))
        elif kind == DOUBLE:
            out.append(str(float(np.uint64(bits).view(np.float64))))
        elif kind == INT64:
            out.append(str(int(np.uint64(bits).view(np.int64))))
        else:
            out.append(str(bits) if kind == UINT64 else none)
    return out
