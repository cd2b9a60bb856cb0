"""Memory events (MemoryAllocation / MemoryDeallocation): their allocator stats, as columns."""

from __future__ import annotations

import math

import numpy as np

from google.protobuf.message import DecodeError

from tftrace.read.schema import XEvent
from tftrace.read.stats import stat_int, stat_value

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
# Counters and sizes the allocator records with each event (-1 where absent).
INT_STATS = ("bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use", "requested_bytes",
             "allocation_bytes", "data_type", "group_id")
STR_STATS = ("tf_op", "shape", "region_type")
# XProf names an allocator by `allocator_name`, or by the device index TPU runtimes record instead.
_ALLOCATOR_IDS = ("allocator_name", "index_on_host", "device_ordinal")


def memory_rows(line, rows: np.ndarray, is_alloc: np.ndarray, stat_names: dict) -> dict[str, np.ndarray]:
    """The memory events `rows` of one decoded line as columns; their stats are parsed one event
    at a time (memory events are a small share of a trace), into Python lists first: setting
    numpy items one by one costs more than the parse."""
    n = len(rows)
    wanted = _wanted(stat_names)
    values: dict[str, list] = {col: [default] * n for col, (_kind, default) in _COLUMNS.items()}
    for j, i in enumerate(rows.tolist()):
        for st in _stats(line, i):
            col = wanted.get(st.metadata_id)
            if col is not None:
                values[col][j] = stat_value(st, stat_names)
    out = {col: _column(col, values[col]) for col in _COLUMNS}
    out["time_ps"] = line.start_ps[rows]
    out["alloc"] = is_alloc
    return out


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
