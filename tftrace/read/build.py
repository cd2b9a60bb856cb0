"""Assemble a Trace from per-line event arrays, computing op self times on each line."""

from __future__ import annotations

import numpy as np

from tftrace.model.cost import Costs
from tftrace.model.names import Op, parse_host_event
from tftrace.read import native
from tftrace.model.events import COLUMNS, STAT_COLUMNS, Columns, LineInfo, Trace

_PYTHON_THREADS = ("python", "main", "MainThread")
_COMPUTE_THREADS = ("tf_Compute", "tf_gpu_private", "tf_numa_", "tf_inter_op", "tf_pjrt", "tf_XLA")
_DEVICE_OP_LINES = ("Stream #", "XLA Ops")


def line_role(plane: str, line: str) -> str:
    """What a line holds, from its plane and thread name."""
    if plane.startswith("/device:"):
        return "device_ops" if line.startswith(_DEVICE_OP_LINES) else "derived"
    if line.startswith(_PYTHON_THREADS):
        return "python"
    if line.startswith(_COMPUTE_THREADS):
        return "compute"
    if line.startswith("tf_data"):
        return "data"
    return "other"


class TraceBuilder:
    """Collects lines of events from one or several files, then builds one Trace."""

    def __init__(self, path: str, fmt: str):
        self.path = path
        self.format = fmt
        self._codes: dict[str, int] = {}
        self._names: list[str] = []
        self._ops: dict[int, Op] = {}
        self._lines: list[LineInfo] = []
        self._chunks: list[dict[str, np.ndarray]] = []
        self._stats: list[dict[str, np.ndarray]] = []
        self._memory: list[dict[str, np.ndarray]] = []  # memory events' stats, per line that has any
        self._offset = 0
        self.hosts: list[str] = []
        self.profile_start_ns: dict[str, int] = {}  # host -> where its trace clock starts (Unix ns)
        self.costs = Costs()  # what ops cost and what devices can do, as the files say (model/cost.py)

    def intern(self, name: str, op: Op | None = None, plain: bool = False) -> int:
        """The code of a name; on first sight, which op (if any) events of that name time.
        `plain` names are never ops (device event names seen off the device's op lines)."""
        key = f"\0{name}" if plain else name
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = len(self._codes)
            self._names.append(name)
            op = None if plain else (op if op is not None else parse_host_event(name))
            if op is not None:
                self._ops[code] = op
        return code

    def refine(self, code: int, op: Op) -> None:
        """Give an op the precision a later kernel of it tells, when its first kernel told none
        (an XLA op may start with a workspace kernel before its GEMM)."""
        known = self._ops.get(code)
        if known is not None and op.precision and not known.precision:
            self._ops[code] = known._replace(precision=op.precision)

    def name_of(self, code: int) -> str:
        return self._names[code]

    def op_of(self, code: int) -> Op | None:
        return self._ops.get(code)

    def add_line(self, info: LineInfo, name: np.ndarray, start_ps: np.ndarray, dur_ps: np.ndarray,
                 stats: dict[str, np.ndarray] | None = None) -> None:
        """Add one line's events; `stats` maps column names to arrays aligned with the events."""
        if info.host not in self.hosts:
            self.hosts.append(info.host)
        n = len(name)
        if n == 0:
            return
        # Kept as given when already of the right type: a copy here would double a large line. The
        # line column is made at build(): chunk i holds line i's events.
        chunk = {"name": np.asarray(name, np.int32), "start_ps": np.asarray(start_ps, np.int64),
                 "dur_ps": np.asarray(dur_ps, np.int64)}
        self._lines.append(info)
        self._chunks.append(chunk)
        self._stats.append(_sparse_stats(stats or {}, n, self._offset))
        self._offset += n

    def add_memory(self, columns: dict[str, np.ndarray]) -> None:
        """Memory events of the line added last, as columns (read/memory_events.py)."""
        self._memory.append({**columns, "line": np.full(len(columns["time_ps"]), len(self._lines) - 1, np.int32)})

    def count_kernels(self, host: str, counts: dict) -> None:
        """Add (op name code, program id, instruction) -> device events of XLA ops (the
        instruction "" where the events do not say which: inside a CUDA graph)."""
        kernels = self.costs.kernels
        for (code, program, instruction), n in counts.items():
            entry = kernels.setdefault((host, code, program), [instruction, 0])
            entry[1] += n

    def mark(self) -> tuple[int, int, int]:
        """A point to roll back to if the file being added turns out to be broken."""
        return len(self._lines), self._offset, len(self.hosts)

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Forget the lines added since `mark` (names interned meanwhile stay, unused)."""
        lines, offset, hosts = mark
        del self._lines[lines:], self._chunks[lines:], self._stats[lines:], self.hosts[hosts:]
        self._memory = [m for m in self._memory if m["line"][0] < lines]
        self._offset = offset

    def build(self) -> Trace:
        names = tuple(self._names)
        is_op = np.zeros(len(names) + 1, bool)
        is_op[list(self._ops)] = True
        for chunk in self._chunks:
            chunk["self_ps"] = _op_self_times(chunk, is_op)
        # Two bytes per event for the line where they suffice; each chunk is one line.
        line_type = np.int16 if len(self._chunks) < 2 ** 15 else np.int32
        sizes = [len(ch["name"]) for ch in self._chunks]
        data = {"line": np.repeat(np.arange(len(sizes), dtype=line_type), sizes)}
        # Column by column, dropping each chunk column once joined: one column is ever doubled.
        data.update({c: _concat([ch.pop(c) for ch in self._chunks]) for c in COLUMNS if c != "line"})
        stats = {c: _concat([st[c] for st in self._stats]) for c in STAT_COLUMNS}
        return Trace(self.path, Columns(data), Columns(stats), names,
                     dict(self._ops), tuple(self._lines), tuple(self.hosts), self.format,
                     profile_start_ns=dict(self.profile_start_ns), memory=self._memory_table(), costs=self.costs)

    def _memory_table(self) -> Columns | None:
        if not self._memory:
            return None
        return Columns({k: np.concatenate([m[k] for m in self._memory]) for k in self._memory[0]})


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)


def _sparse_stats(stats: dict[str, np.ndarray], n: int, offset: int) -> dict[str, np.ndarray]:
    """Only the events that carry a stat, with their row numbers in the whole trace."""
    present = np.zeros(n, bool)
    for values in stats.values():
        present |= values >= 0
    rows = np.flatnonzero(present)
    out = {"event": rows + offset}
    for col in STAT_COLUMNS[1:]:
        out[col] = stats[col][rows] if col in stats else np.full(len(rows), -1, np.int64)
    return out

def _op_self_times(chunk: dict[str, np.ndarray], is_op: np.ndarray) -> np.ndarray:
    """Per event of one line: op duration minus the op time nested directly inside it."""
    if native.events is not None:  # one pass in C, where the line's ops come in time order
        out = np.empty(len(chunk["name"]), np.int64)
        names = np.ascontiguousarray(chunk["name"], np.int32)
        if native.events.self_times(names, chunk["start_ps"], chunk["dur_ps"], is_op.view(np.uint8), out):
            return out
    self_ps = np.zeros(len(chunk["name"]), np.int64)
    idx = np.flatnonzero(is_op[chunk["name"]])
    if len(idx) == 0:
        return self_ps
    start, dur = chunk["start_ps"][idx], chunk["dur_ps"][idx]
    # Lines come mostly in time order, parents first: sort only when they do not.
    in_order = (start[1:] > start[:-1]) | ((start[1:] == start[:-1]) & (dur[1:] <= dur[:-1]))
    if not in_order.all():
        order = np.lexsort((-dur, start))
        idx, start, dur = idx[order], start[order], dur[order]
    end = start + dur
    own = dur.copy()
    # Most lines hold no nested ops; only clusters of overlapping ops need the stack walk.
    reach = np.maximum.accumulate(end)
    nested = np.zeros(len(idx), bool)
    nested[1:] = start[1:] < reach[:-1]
    if nested.any():
        _subtract_children(start, end, own, nested)
    self_ps[idx] = own
    return self_ps


def _subtract_children(start, end, own, nested) -> None:
    """Walk each cluster of overlapping ops with a stack; a child's time leaves its parent."""
    cluster = np.cumsum(~nested) - 1
    members = np.flatnonzero(np.isin(cluster, cluster[nested]))
    start_l, end_l = start.tolist(), end.tolist()
    stack: list[int] = []
    current = -1
    for i, c in zip(members.tolist(), cluster[members].tolist()):
        if c != current:
            stack, current = [], c
        s = start_l[i]
        while stack and end_l[stack[-1]] <= s:
            stack.pop()
        if stack:
            parent = stack[-1]
            own[parent] -= min(end_l[i], end_l[parent]) - s
        stack.append(i)
