"""Memory events (MemoryAllocation / MemoryDeallocation): their allocator stats, as columns."""

from __future__ import annotations

import numpy as np

from tftrace.xplane.stats import parsed_stats, stat_value

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
# Counters and sizes the allocator records with each event (-1 where absent).
INT_STATS = ("bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use", "requested_bytes",
             "allocation_bytes", "data_type", "group_id")
STR_STATS = ("tf_op", "shape", "region_type")
# XProf names an allocator by `allocator_name`, or by the device index TPU runtimes record instead.
_ALLOCATOR_IDS = ("allocator_name", "index_on_host", "device_ordinal")


def memory_rows(line, rows: np.ndarray, is_alloc: np.ndarray, stat_names: dict) -> dict[str, np.ndarray]:
    """The memory events `rows` of one decoded line as columns; their stats are parsed one by
    one (memory events are a small share of a trace)."""
    n = len(rows)
    out = {k: np.full(n, -1, np.int64) for k in INT_STATS}
    out.update({k: np.full(n, "", object) for k in (*STR_STATS, "allocator")})
    out["fragmentation"] = np.zeros(n, np.float64)
    out["addr"] = np.zeros(n, np.uint64)
    for j, i in enumerate(rows.tolist()):
        for st in parsed_stats(line.event(i)):
            key = stat_names.get(st.metadata_id)
            if key in INT_STATS or key == "addr":
                value = stat_value(st, stat_names)
                if isinstance(value, (int, float)):
                    out[key][j] = int(value) & 0xFFFFFFFFFFFFFFFF if key == "addr" else int(value)
            elif key in STR_STATS:
                out[key][j] = str(stat_value(st, stat_names))
            elif key == "fragmentation":
                out[key][j] = float(stat_value(st, stat_names) or 0.0)
            elif key in _ALLOCATOR_IDS:
                out["allocator"][j] = str(stat_value(st, stat_names))
    out["time_ps"] = line.start_ps[rows]
    out["alloc"] = is_alloc
    return out
