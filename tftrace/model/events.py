"""Trace: one run's events as a table of numpy columns, with the names, lines and hosts it refers to."""

from __future__ import annotations

import dataclasses
from functools import cached_property
from dataclasses import dataclass, field

import numpy as np

from tftrace.model.cost import Costs
from tftrace.model.names import Op

# Integer stats kept as columns (-1 where an event lacks the stat): the ones step detection needs,
# and the links from device work to the host launch and the step it serves.
INT_STATS = {"_r": "root", "step_num": "step_num", "iter_num": "iter_num", "group_id": "group_id",
             "tracing_count": "tracing_count", "is_func": "is_func", "correlation_id": "correlation"}
# String stats kept as codes into Trace.names (-1 where absent).
STR_STATS = {"tf_function_call": "fn_call", "eager_op": "eager_op", "step_name": "step_name"}
COLUMNS = ("line", "name", "start_ps", "dur_ps", "self_ps")
STAT_COLUMNS = ("event", *INT_STATS.values(), *STR_STATS.values())


class Columns:
    """Equal-length numpy columns by name: the event and stat tables. Plain numpy, not pandas:
    importing pandas costs more than reading and analysing a small trace."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, np.ndarray]):
        self._data = dict(data)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._data[name]

    def __len__(self) -> int:
        return len(next(iter(self._data.values()))) if self._data else 0

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self._data)

    def take(self, rows: np.ndarray) -> "Columns":
        """The rows selected by a boolean mask or by row numbers, in a table of their own."""
        return Columns({k: v[rows] for k, v in self._data.items()})

    def replace(self, **columns: np.ndarray) -> "Columns":
        return Columns({**self._data, **columns})

    def to_pandas(self):
        """The table as a pandas DataFrame (pandas is imported only here)."""
        import pandas as pd
        return pd.DataFrame(self._data, columns=list(self._data), copy=False)


@dataclass(frozen=True)
class LineInfo:
    """A timeline: one thread of a host, or one stream / op line of a device."""

    host: str
    plane: str  # "/host:CPU", "/device:GPU:0", ...
    name: str  # thread or stream name
    role: str  # python | compute | data | device_ops | derived | other

    @property
    def on_device(self) -> bool:
        return self.plane.startswith("/device:")


@dataclass(frozen=True, eq=False)
class Trace:
    """All events of one run (one or several host files), ready for analysis.

    `events` has one row per event: `line` and `name` index `lines` and `names`; times are
    integer picoseconds; `self_ps` is, for op events, the duration minus the op events nested
    inside on the same line (runtime wrapper events are transparent), and 0 for other events.
    `stats` holds the step-related stats (step markers, tf.function calls) of the few events on
    user threads that carry them: `event` is the row in `events`, -1 marks an absent stat.
    """

    path: str
    events: Columns
    stats: Columns
    names: tuple[str, ...]
    ops: dict[int, Op]  # name code -> the op an event of that name times
    lines: tuple[LineInfo, ...]
    hosts: tuple[str, ...]
    format: str  # xplane | trace_json | kineto (PyTorch's profiler)
    sidecar: dict = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # host files of the run that could not be read (the others were)
    profile_start_ns: dict = field(default_factory=dict)  # host -> Unix ns where its event times count from
    python_samples: dict | None = None  # Python stack samples saved beside the run (capture/sampler.py)
    experiment: dict | None = None  # figures an experiment saved beside the run (capture/experiment.py)
    memory: Columns | None = None  # memory events and their allocator stats (read/memory_events.py), if any
    costs: Costs = field(default_factory=Costs)  # what ops cost and devices can do, as read (model/cost.py)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(sorted({ln.plane for ln in self.lines if ln.on_device}))

    @cached_property
    def _names_blob(self) -> str:
        return "\0" + "\0".join(self.names)

    def has_prefix(self, prefix: str) -> bool:
        """Does any event name start with `prefix`? (one substring search, not a pass per name)"""
        return "\0" + prefix in self._names_blob

    def codes(self, names) -> list[int]:
        """The codes of these names (a name seen both as an op and off a device's op lines
        has two)."""
        wanted = set(names)
        return [c for c, n in enumerate(self.names) if n in wanted]

    def on_lines(self, keep) -> np.ndarray:
        """Per event: does `keep(line_info)` hold for its line? (judged once per line)"""
        return self.per_line(self.on_lines_table(keep))

    def per_line(self, table: np.ndarray) -> np.ndarray:
        """Per event: its line's entry of `table` (one per line)."""
        runs = self._line_runs
        if runs is None:
            return table.take(self.events["line"])
        return np.repeat(table[runs[0]], runs[1])

    @cached_property
    def _line_runs(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(line, events) of each run of one line's events, where the events come a line at a
        time (as readers build them): a mask per line is then a repeat, not a gather per event."""
        line = self.events["line"]
        if len(line) == 0:
            return None
        starts = np.flatnonzero(line[1:] != line[:-1]) + 1
        if len(starts) > 4 * len(self.lines) + 16:  # interleaved lines: the gather is as good
            return None
        bounds = np.concatenate(([0], starts, [len(line)]))
        return line[bounds[:-1]].astype(np.int64), np.diff(bounds)

    def on_lines_table(self, keep) -> np.ndarray:
        """Per line (and a last False): does `keep(line_info)` hold?"""
        return np.array([bool(keep(ln)) for ln in self.lines] + [False], bool)

    def of_host(self, host: str) -> "Trace":
        """The events of one host's lines only (its threads and devices), as a Trace of its own."""
        keep = self.on_lines(lambda ln: ln.host == host)
        rows = np.flatnonzero(keep)
        new_row = np.full(len(keep), -1, np.int64)
        new_row[rows] = np.arange(len(rows))
        stats = self.stats.take(keep[self.stats["event"]])
        stats = stats.replace(event=new_row[stats["event"]])
        memory = self.memory
        if memory is not None:  # its `line` column indexes `lines`, which every host keeps
            memory = memory.take(self.on_lines_table(lambda ln: ln.host == host)[memory["line"]])
        return dataclasses.replace(self, events=self.events.take(rows), stats=stats, hosts=(host,), memory=memory,
                                   costs=self.costs.of_host(host))

    def named(self, codes) -> np.ndarray:
        """Per event: is its name one of `codes`? (a table lookup: fast on millions of events)"""
        table = np.zeros(len(self.names) + 1, bool)
        table[np.fromiter(codes, np.int64)] = True
        return table.take(self.events["name"])  # take: twice as fast as [] with int32 codes
