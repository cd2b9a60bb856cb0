"""The line decoder on hand-built lines: odd layouts read as the protobuf library reads them, by
both decoders (the C one the install builds, and numpy alone, where it is not built)."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError

from tftrace.read import native
from tftrace.read.lines import decode_line
from tftrace.read.schema import XSpace
from tftrace.read.wire import WireError


@pytest.fixture(autouse=True, params=["c", "numpy"])
def decoder(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(native, "events", None)
    return request.param


def test_the_c_decoder_is_built():
    """`pip install -e .` compiles tftrace/read/_events.c (setup.py); without it lines decode
    in numpy alone, three times slower."""
    from tftrace.read import _events  # noqa: F401


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values take ten bytes
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value >= 0x80 else 0))
        value >>= 7
        if not value:
            return bytes(out)


def field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    return varint(number << 3) + varint(value)


def event(*fields: tuple[int, int | bytes]) -> bytes:
    return field(4, b"".join(field(n, v) for n, v in fields))


def check(data: bytes) -> None:
    """decode_line agrees with the protobuf library's parse of the same bytes."""
    want = XSpace().planes.add().lines.add()
    want.ParseFromString(data)
    got = decode_line(data)
    assert (got.name, got.display_name) == (want.name, want.display_name)
    assert got.metadata_id.tolist() == [e.metadata_id for e in want.events]
    assert got.start_ps.tolist() == [e.offset_ps + want.timestamp_ns * 1000 for e in want.events]
    assert got.duration_ps.tolist() == [e.duration_ps for e in want.events]
    assert got.has_stats.tolist() == [bool(e.stats) or e.WhichOneof("data") == "num_occurrences"
                                      for e in want.events]
    for i in np.flatnonzero(got.has_stats).tolist():
        assert len(got.event(i).stats) == len(want.events[i].stats)


STAT = field(1, 7) + field(4, 123)  # an XStat: metadata_id 7, int64_value 123
HEAD = field(1, 3) + field(2, b"tf_Compute/1") + field(3, 1_700_000_000_000)


def test_writer_order_with_missing_large_and_negative_values():
    check(HEAD + b"".join([
        event((1, 5), (2, 1000), (3, 20)),
        event((1, 6), (3, 20)),  # offset 0: not written
        event((2, 7)),  # no metadata id, no duration
        event(),  # an empty event
        event((1, 2**40), (2, 2**56 + 3), (3, 2**62)),  # 6, 9 and 9-byte varints
        event((1, 1), (2, -5), (3, 1)),  # a negative offset: a 10-byte varint
        event((1, 9), (2, 4), (3, 8), (4, STAT), (4, STAT)),
        event((1, 9), (3, 8), (5, 3)),  # num_occurrences (in a oneof with offset_ps)
        event((1, 9), (2, 4), (4, STAT * 20)),  # a long event: a 2-byte length
    ]) + field(9, 5000) + field(11, b"display"))


def test_fields_in_any_order_or_twice_read_as_protobuf_reads_them():
    check(HEAD + b"".join([
        event((3, 20), (2, 1000), (1, 5)),
        event((1, 5), (2, 1000), (1, 6)),  # the last value wins
        event((2, 1), (3, 2), (2, 9), (4, STAT)),
    ]))


def test_header_fields_between_events_fall_back_to_walking_the_line():
    check(field(1, 3) + event((1, 1), (2, 2), (3, 3)) + field(2, b"late name")
          + event((1, 4), (2, 5), (3, 6)) + field(3, 42) + event((1, 7)))


def test_a_line_with_no_events_or_only_events():
    check(HEAD)
    check(b"")
    check(event((1, 1), (2, 2), (3, 3)) * 3)


def test_many_events_across_batches_and_near_the_end_of_the_line():
    rng = np.random.default_rng(0)
    parts = [event((1, int(m)), (2, int(o)), (3, int(d)))
             for m, o, d in zip(rng.integers(0, 5000, 70_000), rng.integers(0, 2**45, 70_000),
                                rng.integers(0, 2**30, 70_000))]
    check(HEAD + b"".join(parts) + event((1, 1), (2, 2**50)))


@pytest.mark.parametrize("data", [
    HEAD + event((1, 1), (2, 2))[:-1],  # truncated inside the last event
    HEAD + field(4, b"\x08\x81"),  # a varint that runs past its event and line
    HEAD + field(4, b"\x08\x81") + event((1, 1)),  # ... past its event, into the next
    HEAD + field(4, field(2, b"xx")),  # offset_ps as bytes
    HEAD + field(4, b"\x08" + b"\xff" * 11 + b"\x01"),  # an 12-byte varint
])
def test_corrupt_lines_raise(data):
    with pytest.raises((WireError, DecodeError)):
        decode_line(data)
