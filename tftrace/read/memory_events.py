"""Memory events (MemoryAllocation / MemoryDeallocation): their allocator stats, as columns."""

from __future__ import annotations

import math

import numpy as np

from google.protobuf.message import DecodeError

from tftrace.read.schema import XEvent
from tftrace.read.stat_table import DOUBLE, INT64, UINT64, StatTable, int_values, stat_table, text_values
from tftrace.read.stats import stat_int, stat_value

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
# Counters and sizes the allocator records with each event (-1 where absent).
INT_STATS = ("bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use", "requested_bytes",
             "allocation_bytes", "data_type", "group_id")
STR_STATS = ("tf_op", "shape", "region_type")
# XProf names an allocator by `allocator_name`, or by the device index TPU runtimes record instead.
_ALLOCATOR_IDS = ("allocator_name", "index_on_host", "device_ordinal")


def memory_rows(line, rows: np.ndarray, is_alloc: np.ndarray, stat_names: dict) -> dict[str, np.ndarray]:
    """The memory events `rows` of one decoded line as columns."""
    table = stat_table(line.data, line.tags[rows])
    out = _from_table(table, line.data, len(rows), stat_names) if table is not None else None
    if out is None:
        out = _parsed(line, rows, stat_names)
    out["time_ps"] = line.start_ps[rows]
    out["alloc"] = is_alloc
    return out


def _parsed(line, rows: np.ndarray, stat_names: dict) -> dict[str, np.ndarray]:
    """The columns from each event parsed by the protobuf library, one at a time: for events laid
    out in an order the numpy decoder does not follow. Values go into Python lists first: setting
    numpy items one by one costs more than the parse."""
    n = len(rows)
    wanted = _wanted(stat_names)
    values: dict[str, list] = {col: [default] * n for col, (_kind, default) in _COLUMNS.items()}
    for j, i in enumerate(rows.tolist()):
        for st in _stats(line, i):
            col = wanted.get(st.metadata_id)
            if col is not None:
                values[col][j] = stat_value(st, stat_names)
    return {col: _column(col, values[col]) for col in _COLUMNS}


def _from_table(t: StatTable, data: bytes, n: int, stat_names: dict) -> dict[str, np.ndarray] | None:
    """The columns from stats decoded with numpy, each event's last stat of a column winning, as
    the protobuf library keeps the last; None where a string is not UTF-8 (the library then
    drops the event's stats: `_parsed` does the same)."""
    wanted = _wanted(stat_names)
    columns = list(_COLUMNS)
    lookup = np.full(max(wanted, default=0) + 2, -1, np.int64)
    for mid, col in wanted.items():
        if mid >= 0:
            lookup[mid] = columns.index(col)
    col_of = lookup[np.where((t.key >= 0) & (t.key < len(lookup)), t.key, -1)]
    out = {}
    for c, col in enumerate(columns):
        last = t.last_per_event(np.flatnonzero(col_of == c))
        kind, default = _COLUMNS[col]
        column = np.full(n, default, kind)
        if kind is object:
            try:
                column[t.event[last]] = text_values(t, last, data, stat_names, "")
            except UnicodeDecodeError:
                return None
        else:
            column[t.event[last]] = _NUMBERS[col if col in _NUMBERS else "int"](t.kind[last], t.bits[last])
        out[col] = column
    return out


def _ints(kind: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Values as `stat_int` reads them: integers and doubles that fit int64, else -1."""
    ok, values = int_values(kind, bits)
    return np.where(ok, values, -1)


def _floats(kind: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Numbers as floats, 0.0 for any other value."""
    out = np.zeros(len(kind), np.float64)
    for k, as_float in ((INT64, lambda b: b.view(np.int64).astype(np.float64)),
                        (UINT64, lambda b: b.astype(np.float64)), (DOUBLE, lambda b: b.view(np.float64))):
        mine = kind == k
        out[mine] = as_float(bits[mine])
    return out


def _addresses(kind: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Values as `_address` reads them: a number's low 64 bits, 0 for any other value."""
    out = np.where((kind == INT64) | (kind == UINT64), bits, np.uint64(0))
    for i in np.flatnonzero(kind == DOUBLE).tolist():  # rare: no writer records an address as a double
        out[i] = _address(float(bits[i:i + 1].view(np.float64)[0]))
    return out


_NUMBERS = {"int": _ints, "fragmentation": _floats, "addr": _addresses}

# Column -> (numpy type, value where the stat is absent).
_COLUMNS = {**{k: (np.int64, -1) for k in INT_STATS}, **{k: (object, "") for k in STR_STATS},
            "allocator": (object, ""), "fragmentation": (np.float64, 0.0), "addr": (np.uint64, 0)}


def _wanted(stat_names: dict) -> dict[int, str]:
    """Stat metadata id -> the column its value goes to."""
    out = {}
    for mid, name in stat_names.items():
        if name in _COLUMNS and name != "allocator":
            out[mid] = name
        elif name in _ALLOCATOR_IDS:
            out[mid] = "allocator"
    return out


def _column(col: str, values: list) -> np.ndarray:
    kind, default = _COLUMNS[col]
    if kind is object:
        return np.array([str(v) if v is not None else "" for v in values], object)
    if col == "addr":  # an address may use all 64 bits; signed stats wrap into them
        return np.array([_address(v) for v in values], np.uint64)
    if kind is np.float64:
        return np.array([v if isinstance(v, (int, float)) else default for v in values], kind)
    clean = (stat_int(v) for v in values)
    return np.array([default if v is None else v for v in clean], kind)


def _address(value) -> int:
    """An address stat as uint64 bits (0 where it is not a number)."""
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else 0
    return value & 0xFFFFFFFFFFFFFFFF if isinstance(value, int) else 0


def _stats(line, i: int):
    """Event i's stats, parsed in one call (the whole event with its stats: faster than stat by
    stat); a corrupt event has none."""
    try:
        return XEvent.FromString(line.event_bytes(i)).stats
    except DecodeError:
        return ()
