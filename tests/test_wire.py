"""The streaming reader agrees, event for event, with the protobuf library's own parse."""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import BROKEN, SAMPLE_RUNS, sample_file, public_traces
from tftrace.analysis.sums import exact_sums
from tftrace.read import wire
from tftrace.read.lines import decode_line
from tftrace.read.schema import XSpace

FILES = [p for p in public_traces() if p.endswith(".xplane.pb") and p != BROKEN] + \
        [sample_file(*r) for r in SAMPLE_RUNS]


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_decoded_lines_match_the_protobuf_parse(path):
    space = XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
        wf = wire.WireFile(f, os.path.getsize(path))
        plane_fields = [fd for fd in wire.fields(wf, 0, wf.size) if fd.number == 1]
        assert len(plane_fields) == len(space.planes)
        for plane, fd in zip(space.planes, plane_fields):
            line_fields = [p for p in wire.fields(wf, fd.start, fd.end) if p.number == 3]
            assert len(line_fields) == len(plane.lines)
            for line, lf in zip(plane.lines, line_fields):
                got = decode_line(wire.value(wf, lf))
                assert (got.name, got.display_name) == (line.name, line.display_name)
                want = np.array([(e.metadata_id, e.offset_ps, e.duration_ps) for e in line.events],
                                np.int64).reshape(-1, 3)
                assert np.array_equal(got.metadata_id, want[:, 0])
                assert np.array_equal(got.start_ps, want[:, 1] + line.timestamp_ns * 1000)
                assert np.array_equal(got.duration_ps, want[:, 2])
                assert np.array_equal(got.has_stats, np.array([len(e.stats) > 0 for e in line.events], bool))
                for i in np.flatnonzero(got.has_stats)[:5]:
                    assert len(got.event(i).stats) == len(line.events[i].stats)


def test_exact_sums_keep_every_picosecond():
    values = np.array([2**52 + 1, 2**52 + 3, 7, 10**15 + 123456789, 999_999_999_999_999], np.int64)
    keys = np.array([0, 0, 1, 1, 1])
    assert exact_sums(keys, values, 2).tolist() == [2**53 + 4, 10**15 + 123456789 + 7 + 999_999_999_999_999]


def test_the_c_walk_of_messages_matches_the_python_one_on_every_sample_xspace():
    """wire.fields walks messages up to 8 MB in C (read/_events.c) and the HLO reader takes
    varint fields from it (`ints`): the same fields and values as the Python walker's, down
    every message of the repository's traces that parses as one (HLO protos included)."""
    from tftrace.read import native
    assert native.events is not None, "the C decoder is not built (pip install -e .)"
    paths = FILES + [os.path.join(root, f) for root, _d, files in os.walk(os.path.join(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))), "sample_traces")) for f in files if f.endswith(".xplane.pb")]
    walked = 0
    for path in sorted(set(paths)):
        with open(path, "rb") as f:
            wf = wire.WireFile(f, os.path.getsize(path))
            todo = [(0, wf.size)]
            while todo and walked < 400_000:
                start, end = todo.pop()
                data = wf.read(start, end - start)
                c = native.events.fields(data, start)
                try:
                    py = list(wire._walk(wf, start, end))
                except wire.WireError:
                    assert c is None, (path, start)
                    continue
                assert c is not None and [wire.Field(*t) for t in c] == py, (path, start)
                assert native.events.ints(data) == {fd.number: wf.varint(fd.start)[0] for fd in py
                                                    if (wf.varint(fd.tag_start)[0] & 7) == 0}, (path, start)
                walked += len(py)
                todo += [(fd.start, fd.end) for fd in py if fd.end - fd.start > 1 and
                         (wf.varint(fd.tag_start)[0] & 7) == 2]
    assert walked > 100_000
