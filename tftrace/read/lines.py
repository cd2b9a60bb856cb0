"""Decode one XLine's bytes into numpy arrays: the one pass over a trace's events.

A line is a few header fields and a long run of `events` (field 4), each an XEvent message
whose first fields are metadata_id (1), offset_ps (2) and duration_ps (3). The protobuf library
(upb, in C) splits the line into its events' bytes; their lengths say where each event sits in
the line, and numpy then decodes the three varints of every event at once. No Python code runs
per event, and memory stays near a few times the line's own size. Events whose stats matter are
parsed one by one with the protobuf library (`event()`).
"""

from __future__ import annotations

from array import array
from typing import NamedTuple

import numpy as np

from tftrace.read import varints
from tftrace.read.schema import XEventLazy, XLineRaw
from tftrace.read.wire import WireError
from tftrace.read import native  # native.events None: numpy alone

_EVENT_TAG = 0x22  # field 4, length-delimited
_FIELD_TAGS = (0x08, 0x10, 0x18)  # fields 1-3 as varints, in the order writers put them
_CHUNK = 1 << 16  # events decoded per numpy batch: bounds the temporaries


class Line(NamedTuple):
    name: str
    display_name: str
    metadata_id: np.ndarray
    start_ps: np.ndarray  # the line's timestamp plus each event's offset
    duration_ps: np.ndarray
    has_stats: np.ndarray  # events with more than fields 1-3 (stats, occurrences)
    data: bytes  # the line's bytes, for parsing single events on demand
    tags: np.ndarray  # where each event's tag is in `data`
    base_ns: int = 0  # where start_ps counts from (see decode_line)
    slotted: bool = False  # metadata_id holds slots of the plane's metadata table, bookkeeping left out

    def event(self, i: int):
        """Event i as a protobuf message (its stats as serialized bytes)."""
        return XEventLazy.FromString(self.event_bytes(i))

    def event_bytes(self, i: int) -> bytes:
        """Event i's serialized bytes."""
        length, start = _varint(self.data, int(self.tags[i]) + 1)
        return self.data[start:start + length]

    def __len__(self) -> int:
        return len(self.tags)


# A line timestamp beyond this (about 53 days, in ns) is absolute (Unix ns), not relative to the
# capture's start as TensorFlow writes it: in picoseconds from zero it would overflow 64 bits.
_RELATIVE_NS = 2 ** 62 // 1000


def decode_line(data: bytes, base_ns: int | None = 0, slots: np.ndarray | None = None,
                drop: np.ndarray | None = None) -> Line:
    """`data`: the line's bytes. Times count from `base_ns`; None: from zero, unless this line's
    timestamp is absolute, then from it (a file's later lines take the same base: Line.base_ns).
    `slots` (the C decoder only; see Line.slotted): per metadata id, its slot in the plane's
    metadata table, the last entry that of an unknown id; events of a slot `drop` marks, with no
    duration, are left out. Raises DecodeError or WireError on a corrupt line."""
    if native.events is not None:
        return _decode_in_c(data, base_ns, slots, drop)
    raw = XLineRaw.FromString(data)
    name, display, start_ns = raw.name, raw.display_name, raw.timestamp_ns
    if base_ns is None:
        base_ns = start_ns if start_ns > _RELATIVE_NS else 0
    # One event's bytes object at a time: each is dropped as soon as its length is taken.
    lengths = np.fromiter(map(len, raw.events), np.int64, len(raw.events))
    del raw  # frees upb's copy of the events before numpy's arrays are made
    blob = np.frombuffer(data, np.uint8)
    tags = _back_to_back(data, blob, lengths)
    if tags is None:  # events interleaved with other fields: no writer does it, but it parses
        tags = _scan(data, len(data))
    n = len(tags)
    cols = [np.zeros(n, np.int64) for _ in range(3)]  # apart: the reader keeps times, drops ids
    rest = np.zeros(n, bool)
    wide = varints.words(blob)
    try:
        for lo in range(0, n, _CHUNK):  # in batches: the temporaries stay small on huge lines
            part = slice(lo, lo + _CHUNK)
            starts = tags[part] + 1 + varints.sizes(lengths[part])
            _decode_events(blob, wide, starts, starts + lengths[part], [c[part] for c in cols], rest[part])
    except IndexError:  # a varint in the last event that never ends
        raise WireError("an event's field runs past its line") from None
    _shift_times(cols[1], (start_ns - base_ns) * 1000)
    return Line(name, display, cols[0], cols[1], cols[2], rest, data, tags, base_ns)


_NO_SLOTS = np.zeros(0, np.int64)


def _decode_in_c(data: bytes, base_ns: int | None, slots, drop) -> Line:
    """decode_line by the C decoder: one hop over the fields for the header and the event count,
    one pass for the events, both without the GIL."""
    slotted = slots is not None
    try:
        n, name_at, name_len, display_at, display_len, start_ns = native.events.header(data)
        name = data[name_at:name_at + name_len].decode()
        display = data[display_at:display_at + display_len].decode()
        cols = [np.empty(n, np.int64) for _ in range(3)]
        rest, tags = np.empty(n, np.uint8), np.empty(n, np.int64)
        table = np.ascontiguousarray(slots, np.int64) if slotted else _NO_SLOTS
        marks = np.ascontiguousarray(drop if drop is not None else np.zeros(int(table.max(initial=0)) + 1), np.uint8)
        kept = native.events.decode(data, table, marks, *cols, rest, tags)
    except ValueError as e:  # UnicodeDecodeError is one: a name that is not UTF-8
        raise WireError(str(e)) from None
    if base_ns is None:
        base_ns = start_ns if start_ns > _RELATIVE_NS else 0
    if kept < n:  # bookkeeping left out: the arrays' first `kept` entries
        cols, rest, tags = [c[:kept] for c in cols], rest[:kept], tags[:kept]
    _shift_times(cols[1], (start_ns - base_ns) * 1000)
    return Line(name, display, cols[0], cols[1], cols[2], rest.view(bool), data, tags, base_ns, slotted)


_INT64_MAX = 2 ** 63 - 1


def _shift_times(start_ps: np.ndarray, shift_ps: int) -> None:
    """Offsets from the line's start to times (ps), in place, after checking that every time
    fits int64: a corrupt timestamp would otherwise raise OverflowError, or wrap silently."""
    if not len(start_ps):
        return
    if not (-_INT64_MAX <= int(start_ps.min()) + shift_ps and int(start_ps.max()) + shift_ps <= _INT64_MAX):
        raise WireError("a line's timestamp is out of range (corrupt?)")
    start_ps += shift_ps


def check_times(line: "Line", limit: int) -> None:
    """Raise WireError unless every event starts and ends within +-limit ps: a corrupt offset
    or duration would make the analyses' sums and differences overflow."""
    if not len(line):
        return
    lo, hi = int(line.start_ps.min()), int(line.start_ps.max())
    shortest, longest = int(line.duration_ps.min()), int(line.duration_ps.max())
    if lo + min(shortest, 0) <= -limit or hi + max(longest, 0) >= limit:
        raise WireError("an event's time or duration is out of range (corrupt?)")


def _back_to_back(data: bytes, blob: np.ndarray, lengths: np.ndarray) -> np.ndarray | None:
    """Where each event's tag is, if the events follow one another from the first (as writers
    put them), each starting where the previous one ends; else None. Checking the tag byte at
    each place suffices: any other field there would start with another byte."""
    n = len(lengths)
    if n == 0:
        return np.zeros(0, np.int64)
    size = 1 + varints.sizes(lengths) + lengths  # tag, length, payload
    tags = np.empty(n, np.int64)
    tags[0] = _first_event(data)
    np.cumsum(size[:-1], out=tags[1:])
    tags[1:] += tags[0]
    if tags[-1] + size[-1] > len(data) or not (blob[tags] == _EVENT_TAG).all():
        return None
    return tags


def _first_event(data: bytes) -> int:
    """Where the first event's tag is, past the few header fields writers put first (the
    protobuf library has checked them already)."""
    pos = 0
    while data[pos] != _EVENT_TAG:
        pos = _after_field(data, pos)
    return pos


def _after_field(data, pos: int) -> int:
    """Where the field whose tag is at `pos` ends."""
    tag, pos = _varint(data, pos)
    wire = tag & 7
    if wire == 0:
        _value, pos = _varint(data, pos)
    elif wire == 2:
        length, pos = _varint(data, pos)
        pos += length
    elif wire in (1, 5):
        pos += 8 if wire == 1 else 4
    else:
        raise WireError("unexpected wire type in a line")
    return pos


def _scan(data, n: int) -> np.ndarray:
    """Where each event's tag is, hopping over every field in Python: the slow way, for lines
    whose events are not back to back."""
    pos = 0
    tags = array("q")
    try:
        while pos < n:
            if data[pos] == _EVENT_TAG:
                tags.append(pos)
            pos = _after_field(data, pos)
    except IndexError:
        raise WireError("a line ends inside a field (truncated?)") from None
    if pos != n:
        raise WireError("a line's last field runs past its end")
    return np.frombuffer(tags, np.int64)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise WireError("a varint is too long")


def _decode_events(blob, wide, starts, ends, out, rest) -> None:
    """Fields 1-3 of each event, and whether it holds more. Writers emit fields in number order
    (1, 2, 3, then stats): one pass per field reads it where present. Events in another order
    are read field by field (`_any_order`)."""
    pos = starts.copy()
    last = len(blob) - 1
    for f, tag in enumerate(_FIELD_TAGS):
        hit = (pos < ends) & (blob[np.minimum(pos, last)] == tag)
        if hit.all():  # the usual case: no gathering and scattering
            value, pos = varints.varints(blob, wide, pos + 1)
            out[f][:] = value.view(np.int64)
            continue
        has = np.flatnonzero(hit)
        if len(has):
            value, pos[has] = varints.varints(blob, wide, pos[has] + 1)
            out[f][has] = value.view(np.int64)
    if (pos > ends).any():
        raise WireError("an event's field runs past its end")
    more = np.flatnonzero(pos < ends)
    if len(more) == 0:
        return
    odd = blob[pos[more]] >> 3 <= 3  # a field 1-3 after the stats, twice, or with a wire type
    rest[more[~odd]] = True
    if odd.any():
        _any_order(blob, starts, ends, more[odd], out, rest)


def _any_order(blob, starts, ends, which, out, rest) -> None:
    """Fields 1-3 of the events `which`, in whatever order they come, up to the first other
    field."""
    pos = starts[which].copy()
    for column in out:
        column[which] = 0
    active = np.arange(len(which))
    while len(active):
        at = pos[active]
        tag = blob[at].astype(np.int64)
        field, wire = tag >> 3, tag & 7
        if ((wire != 0) & (field <= 3)).any():
            raise WireError("an event field has an unexpected type")
        value, after = varints.bytewise(blob, at + 1)
        simple = (field >= 1) & (field <= 3)
        for f in range(3):
            mine = field == f + 1
            out[f][which[active[mine]]] = value[mine].view(np.int64)
        rest[which[active[~simple]]] = True
        pos[active] = after
        active = active[simple & (after < ends[which[active]])]
    if (pos > ends[which]).any():
        raise WireError("an event's field runs past its end")
