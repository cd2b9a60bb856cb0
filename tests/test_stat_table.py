"""Stats decoded with numpy (read/stat_table.py) agree with the protobuf library, value by value,
and memory events' columns come out the same by either path, on built events and real traces."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tftrace.read import memory_events
from tftrace.read.lines import decode_line
from tftrace.read.logdir import find_runs
from tftrace.read.schema import XEvent, XLineRaw
from tftrace.read.stat_table import stat_table
from tftrace.read.stats import stat_value
from test_lines import HEAD, event, field

# Stat metadata ids as a plane names them: the memory columns, one the reader ignores, and an
# id no metadata names.
NAMES = {1: "bytes_allocated", 2: "addr", 3: "fragmentation", 4: "tf_op", 5: "allocator_name", 6: "shape",
         7: "peak_bytes_in_use", 8: "region_type", 9: "other_stat", 10: "device_ordinal", 11: "GPU_0_bfc"}
VALUES = [
    ("int64_value", [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 12345678901]),
    ("uint64_value", [0, 7, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1]),
    ("double_value", [0.0, -0.0, 1.5, -2.75, 1e300, -1e19, 9.3e18, math.inf, -math.inf, math.nan, 2.0 ** 63]),
    ("str_value", ["", "MatMul", "dense/kernel", "ß∂ unicode", "x" * 300]),
    ("bytes_value", [b"", b"\x00\xff", b"abc"]),
    ("ref_value", [11, 9, 99]),
]


def _random_event(rng: random.Random) -> bytes:
    ev = XEvent(metadata_id=rng.randint(0, 50), offset_ps=rng.randint(0, 2 ** 40), duration_ps=rng.randint(0, 10 ** 9))
    for _ in range(rng.randint(0, 14)):
        st = ev.stats.add(metadata_id=rng.choice([*NAMES, 0, 77, 2 ** 40]))
        if rng.random() < 0.95:  # else a stat with no value at all
            kind, values = rng.choice(VALUES)
            setattr(st, kind, rng.choice(values))
    return field(4, ev.SerializeToString())


def _line(events: list[bytes]):
    return decode_line(HEAD + b"".join(events))


def _columns_agree(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for col in a:
        assert a[col].dtype == b[col].dtype, col
        if a[col].dtype == object:
            assert a[col].tolist() == b[col].tolist(), col
        else:
            assert np.array_equal(a[col], b[col], equal_nan=a[col].dtype.kind == "f"), col


@pytest.mark.parametrize("seed", range(20))
def test_random_events_decode_as_the_protobuf_library_reads_them(seed):
    rng = random.Random(seed)
    line = _line([_random_event(rng) for _ in range(rng.randint(1, 60))])
    rows = np.flatnonzero(line.has_stats)
    table = stat_table(line.data, line.tags[rows])
    assert table is not None
    want = [(j, st.metadata_id, st.WhichOneof("value"), stat_value(st, NAMES))
            for j, i in enumerate(rows.tolist()) for st in XEvent.FromString(line.event_bytes(i)).stats]
    assert table.event.tolist() == [w[0] for w in want]
    assert table.key.tolist() == [w[1] if w[1] < 2 ** 63 else w[1] - 2 ** 64 for w in want]
    kinds = {None: 0, "double_value": 2, "uint64_value": 3, "int64_value": 4, "str_value": 5, "bytes_value": 6,
             "ref_value": 7}
    assert table.kind.tolist() == [kinds[w[2]] for w in want]
    all_rows = np.arange(len(line))
    _columns_agree(memory_events._from_table(stat_table(line.data, line.tags), line.data, len(line), NAMES),
                   memory_events._parsed(line, all_rows, NAMES))


def test_layouts_the_numpy_decoder_does_not_follow_fall_back_to_the_library():
    value_first = event((1, 5), (4, field(4, 42) + field(1, 1)))  # a stat's value before its id
    two_values = event((1, 5), (4, field(1, 1) + field(4, 42) + field(4, 43)))
    unknown = event((1, 5), (7, 3), (4, field(1, 1) + field(4, 42)))  # an event field no writer uses
    for odd in (value_first, two_values, unknown):
        line = _line([event((1, 5), (4, field(1, 1) + field(4, 9))), odd])
        rows = np.arange(len(line))
        assert stat_table(line.data, line.tags) is None
        got = memory_events.memory_rows(line, rows, np.ones(len(line), bool), NAMES)
        _columns_agree({k: v for k, v in got.items() if k not in ("time_ps", "alloc")},
                       memory_events._parsed(line, rows, NAMES))
        assert got["bytes_allocated"].tolist() == [9, 43 if odd is two_values else 42]


def test_a_string_that_is_not_utf8_drops_the_events_stats_as_the_library_does():
    bad = event((1, 5), (4, field(1, 4) + field(5, b"\xff\xfe")), (4, field(1, 1) + field(4, 7)))
    line = _line([bad])
    got = memory_events.memory_rows(line, np.arange(1), np.ones(1, bool), NAMES)
    assert got["tf_op"].tolist() == [""] and got["bytes_allocated"].tolist() == [-1]


def test_every_memory_event_of_the_repository_traces_reads_the_same_by_both_paths(monkeypatch):
    import tftrace.read.xspace as xspace
    from tftrace.read.loader import load_run
    seen = []

    def both(line, rows, is_alloc, stat_names):
        got = memory_events.memory_rows(line, rows, is_alloc, stat_names)
        assert stat_table(line.data, line.tags[rows]) is not None  # every writer's layout is followed
        _columns_agree({k: v for k, v in got.items() if k not in ("time_ps", "alloc")},
                       memory_events._parsed(line, rows, stat_names))
        seen.append(len(rows))
        return got

    monkeypatch.setattr(xspace, "memory_rows", both)
    for run in find_runs("sample_traces") + find_runs("tests/data/public/tensorflow__profiler"):
        if "_corrupt" not in run.name:
            load_run(run)
    assert sum(seen) > 5000
