"""The step-related stats of host events (step ids, group ids, tf.function calls, correlation ids)
as columns of one line, decoded with numpy where the events are laid out as writers lay them.

An event kind whose first PROBE events carried none of these stats is not read again: a runtime
event (`PjRtCApiLoadedExecutable::Execute`, recorded on every op JAX dispatches) carries its own
stats, never a step's.
"""

from __future__ import annotations

import numpy as np

from tftrace.model.events import INT_STATS, STR_STATS
from tftrace.read.stat_table import int_values, last_of_each, stat_table, text_values
from tftrace.read.stats import parsed_stats, stat_int, stat_value

PROBE = 16  # events of one kind parsed for step stats before a kind that never has them is skipped
_KEYS = {**INT_STATS, **STR_STATS}


def step_stats(builder, line, rows: np.ndarray, kinds: np.ndarray, misses: np.ndarray, stat_names: dict):
    """Columns (event-long, -1 where absent) of the stats of events `rows` (ascending) whose kinds
    (metadata slots) are `kinds`; `misses` counts per kind the events read that had none (-1:
    one had), and is updated. None where no event has any."""
    rank = _rank_in_kind(kinds)
    start = misses[kinds]
    probe = (start < 0) | (rank < PROBE - start)
    cols: dict[str, np.ndarray] = {}
    found = _read(builder, line, rows[probe], stat_names, cols)
    first_found = {}
    for kind, r in zip(kinds[probe][found].tolist(), rank[probe][found].tolist()):
        first_found.setdefault(kind, r)
    # A kind seen with stats in its probe: the rest of its events are read too.
    rest = np.flatnonzero(~probe & np.isin(kinds, list(first_found)))
    if len(rest):
        _read(builder, line, rows[rest], stat_names, cols)
    _count_misses(kinds[probe], misses, first_found)
    return cols or None


def _rank_in_kind(kinds: np.ndarray) -> np.ndarray:
    """Each entry's place among the entries of its kind, in order."""
    order = np.argsort(kinds, kind="stable")
    sorted_kinds = kinds[order]
    group_start = np.r_[0, np.flatnonzero(np.diff(sorted_kinds)) + 1]
    first = np.repeat(group_start, np.diff(np.r_[group_start, len(kinds)]))
    rank = np.empty(len(kinds), np.int64)
    rank[order] = np.arange(len(kinds)) - first
    return rank


def _count_misses(probed: np.ndarray, misses: np.ndarray, first_found: dict) -> None:
    for kind, count in zip(*np.unique(probed, return_counts=True)):
        kind = int(kind)
        misses[kind] = -1 if kind in first_found or misses[kind] < 0 else misses[kind] + int(count)


def _read(builder, line, rows: np.ndarray, stat_names: dict, cols: dict) -> np.ndarray:
    """Fill `cols` from the stats of `rows`; per row, whether it had any."""
    if len(rows) == 0:
        return np.zeros(0, bool)
    table = stat_table(line.data, line.tags[rows])
    try:
        return _parsed(builder, line, rows, stat_names, cols) if table is None else \
            _decoded(builder, line, rows, table, stat_names, cols)
    except UnicodeDecodeError:  # a string stat that is not UTF-8: the library skips that stat
        return _parsed(builder, line, rows, stat_names, cols)


def _decoded(builder, line, rows: np.ndarray, table, stat_names: dict, cols: dict) -> np.ndarray:
    lookup = {mid: name for mid, name in stat_names.items() if name in _KEYS}
    found = np.zeros(len(rows), bool)
    for mid, name in lookup.items():
        mine = np.flatnonzero(table.key == mid)
        if len(mine) == 0:
            continue
        if name in INT_STATS:
            ok, values = int_values(table.kind[mine], table.bits[mine])
            mine, values = mine[ok], values[ok]
        else:
            texts = text_values(table, mine, line.data, stat_names, "None")
            values = np.array([builder.intern(text) for text in texts], np.int64)
        last = last_of_each(table.event[mine])
        found[table.event[mine]] = True
        _column(cols, _KEYS[name], len(line))[rows[table.event[mine][last]]] = values[last]
    return found


def _column(cols: dict, col: str, n: int) -> np.ndarray:
    if col not in cols:
        cols[col] = np.full(n, -1, np.int64)
    return cols[col]


def _parsed(builder, line, rows: np.ndarray, stat_names: dict, cols: dict) -> np.ndarray:
    """The same, each event parsed by the protobuf library: for layouts the numpy decoder does
    not follow."""
    found = np.zeros(len(rows), bool)
    for j, i in enumerate(rows.tolist()):
        for st in parsed_stats(line.event(i)):
            key = stat_names.get(st.metadata_id)
            if key not in _KEYS:
                continue
            value = stat_value(st, stat_names)
            value = builder.intern(str(value)) if key in STR_STATS else stat_int(value)
            if value is None:
                continue
            _column(cols, _KEYS[key], len(line))[i] = value
            found[j] = True
    return found
