"""Decode one XLine's bytes into numpy arrays: the one pass over a trace's events.

A line is a few header fields and a long run of `events` (field 4), each an XEvent message
whose first fields are metadata_id (1), offset_ps (2) and duration_ps (3). One tight Python loop
finds where each event's bytes are; numpy then decodes the three varints of every event at
once. No per-event Python object is made, and memory stays near the line's own size (a parsed
protobuf line takes ~4.5 times its bytes). Events whose stats matter are parsed one by one with
the protobuf library (`event()`).
"""

from __future__ import annotations

from array import array
from typing import NamedTuple

import numpy as np

from tftrace.xplane.schema import XEventLazy
from tftrace.xplane.wire import WireError

_EVENT_TAG = 0x22  # field 4, length-delimited
_CHUNK = 1 << 16  # events decoded per numpy batch: bounds the temporaries
LINE_PADDING = 16


class Line(NamedTuple):
    name: str
    display_name: str
    metadata_id: np.ndarray
    start_ps: np.ndarray  # the line's timestamp plus each event's offset
    duration_ps: np.ndarray
    has_stats: np.ndarray  # events with more than fields 1-3 (stats, occurrences)
    data: bytearray  # the line's bytes (and padding), for parsing single events on demand
    tags: np.ndarray  # where each event's tag is in `data`

    def event(self, i: int):
        """Event i as a protobuf message (its stats as serialized bytes)."""
        length, start = _varint(self.data, int(self.tags[i]) + 1)
        return XEventLazy.FromString(bytes(self.data[start:start + length]))

    def __len__(self) -> int:
        return len(self.tags)


def decode_line(data) -> Line:
    """`data`: the line's bytes followed by LINE_PADDING zero bytes (a varint read near the end
    then never runs off the buffer)."""
    size = len(data) - LINE_PADDING
    header, tags = _scan(data, size)
    blob = np.frombuffer(data, np.uint8)
    n = len(tags)
    cols = np.zeros((3, n), np.int64)
    rest = np.zeros(n, bool)
    for lo in range(0, n, _CHUNK):  # in batches: the temporaries stay small on huge lines
        part = slice(lo, lo + _CHUNK)
        lengths, starts = _varints(blob, tags[part] + 1)
        ends = starts + lengths.astype(np.int64)
        if len(ends) and ends[-1] > size:
            raise WireError("the last event runs past its line")
        _decode_events(blob, starts, ends, cols[:, part], rest[part])
    cols[1] += _signed(header.get(3, 0)) * 1000  # offsets from the line's start (ns) to times (ps)
    return Line(_text(header.get(2)), _text(header.get(11)), cols[0], cols[1], cols[2], rest, data, tags)


def _text(value) -> str:
    return bytes(value).decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else ""


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scan(data, n: int):
    """The line's header fields, and where each event's tag is."""
    pos = 0
    tags = array("q")
    add = tags.append
    header: dict = {}
    try:
        while pos < n:
            tag = data[pos]
            if tag == _EVENT_TAG:
                add(pos)
                length = data[pos + 1]
                pos += 2 + length if length < 0x80 else 0
                if length >= 0x80:
                    length, pos = _varint(data, pos + 1)
                    pos += length
                continue
            if tag >= 0x80:
                raise WireError("unexpected field in a line")
            value, pos = _varint(data, pos + 1)
            if tag & 7 == 2:
                header[tag >> 3] = data[pos:pos + value]
                pos += value
            elif tag & 7 == 0:
                header[tag >> 3] = value
            else:
                raise WireError("unexpected wire type in a line")
    except IndexError:
        raise WireError("a line ends inside a field (truncated?)") from None
    if pos != n:
        raise WireError("a line's last field runs past its end")
    return header, np.frombuffer(tags, np.int64)


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


def _varints(blob: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varint at each position (as uint64) and where each one ends; byte by byte, over
    fewer and fewer of them (most are short)."""
    byte = blob[pos]
    value = (byte & 0x7F).astype(np.uint64)
    end = pos + 1
    more = np.flatnonzero(byte >= 0x80)
    shift = np.uint64(7)
    while len(more):
        byte = blob[end[more]]
        value[more] |= (byte & 0x7F).astype(np.uint64) << shift
        end[more] += 1
        more = more[byte >= 0x80]
        shift += np.uint64(7)
        if shift > 63:
            raise WireError("a varint is too long")
    return value, end


def _decode_events(blob: np.ndarray, starts: np.ndarray, ends: np.ndarray, out: np.ndarray,
                   rest: np.ndarray) -> None:
    """Fields 1-3 of each event. Protobuf writers emit fields in number order, so an event's
    fields 1-3 come before its stats (4): walking stops at the first field numbered 4 or more."""
    pos = starts.copy()
    active = np.flatnonzero(pos < ends)
    while len(active):
        at = pos[active]
        tag = blob[at].astype(np.int64)
        field, wire = tag >> 3, tag & 7
        if (wire != 0).any() & (field[wire != 0] <= 3).any():
            raise WireError("an event field has an unexpected type")
        value, after = _varints(blob, at + 1)
        simple = (field >= 1) & (field <= 3)
        out[field[simple] - 1, active[simple]] = value[simple].view(np.int64)
        rest[active[~simple]] = True
        pos[active] = after
        active = active[simple & (after < ends[active])]
    if (pos > ends).any():
        raise WireError("an event's field runs past its end")
