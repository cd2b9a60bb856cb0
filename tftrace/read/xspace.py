"""Read XSpace files (`*.xplane.pb`) into a TraceBuilder, without TensorFlow."""

from __future__ import annotations

import contextlib
import itertools
import os

import numpy as np
from google.protobuf.message import DecodeError

from tftrace.read.build import TraceBuilder, line_role
from tftrace.model.errors import TraceReadError
from tftrace.model.events import LineInfo
from tftrace.read.lines import check_times
from tftrace.read.line_threads import decoded_lines
from tftrace.read.schema import XPlaneLazy, XSpaceLazy
from tftrace.read import storage, wire
from tftrace.read.device import device_label, device_names, stated_cost
from tftrace.read.cpu_thunks import module_names
from tftrace.read.hlo import XLA_CPU_THREADS, cpu_thunk, is_hlo_name
from tftrace.read.hlo_metadata import module_cost_of, read_modules
from tftrace.read.memory_events import ALLOCATION, DEALLOCATION, memory_rows
from tftrace.read.stats import stat_int, stat_value
from tftrace.read.step_stats import PROBE, step_stats
from tftrace.read.wire import Field, WireError, WireFile, fields

# Host events whose stats never matter here; skipping them keeps the one pass lean.
_NO_STATS = frozenset({
    "MemoryAllocation", "MemoryDeallocation", "ThreadpoolListener::StartRegion",
    "ThreadpoolListener::StopRegion", "ExecutorPropagateOutputs", "ExecutorDoneCallback",
    "EagerCopyToDevice", "KernelAndDeviceFunc::Run", "EagerKernelExecute", "ExecutorState::Process",
    "ValidateInputTypeAndPlacement", "TFE_DeleteTensorHandle",
})
# The thread pool's bookkeeping instants (a task queued, a region started or stopped): a third of
# the events of a TensorFlow capture, no time and no owner of their own. Dropped as read, so no
# analysis walks them.
_BOOKKEEPING = frozenset({"ThreadpoolListener::Record", "ThreadpoolListener::StartRegion",
                          "ThreadpoolListener::StopRegion"})
# Step markers and tf.function calls are recorded on the threads that run user code, never on
# TensorFlow's executor or tf.data threads: only these lines' stats are read.
_MARKER_ROLES = ("python", "other")
# Host calls that start device work (kernels, copies): their correlation_id links the device
# event to its launch, and so to the step that launched it. Read on every host line.
LAUNCH_PREFIXES = ("cuLaunch", "cudaLaunch", "cuGraphLaunch", "cudaGraphLaunch", "cuMemcpy", "cudaMemcpy",
                   "cuMemset", "cudaMemset", "hipLaunch", "hipModuleLaunch", "hipExtModuleLaunch",
                   "hipExtLaunch", "hipGraphLaunch", "hipMemcpy", "hipMemset")


# Times stay within +-2**62 ps (53 days from the clock's start), as the JSON reader keeps them:
# any difference of two, as the analyses take, then fits int64.
TIME_LIMIT_PS = 2 ** 62

# Field numbers (xplane.proto): XSpace.planes, XSpace.hostnames, XPlane.name, XPlane.lines.
_SPACE_PLANES, _SPACE_HOSTNAMES, _PLANE_NAME, _PLANE_LINES = 1, 4, 2, 3


def read_xspace(path: str, builder: TraceBuilder, progress=None, host: str | None = None) -> None:
    """Add every timed line of every plane of one file to the builder, one line in memory at a
    time; raise TraceReadError naming the file and the problem. `progress(path, done, total)`,
    if given, hears how many bytes are read after each line; `host` overrides the file's own
    host name."""
    try:
        size = storage.size(path)
        if size == 0:
            raise TraceReadError(f"{path}: empty file, not an XSpace trace")
        with storage.open_binary(path) as f:
            _read_space(WireFile(f, size), path, builder, progress or _silent, host)
    except OSError as e:
        raise TraceReadError(f"{path}: cannot read: {e.strerror or e}") from None
    except WireError as e:
        raise TraceReadError(f"{path}: not a readable XSpace trace (the protobuf is truncated or corrupt: {e})") from None
    except (DecodeError, RuntimeError):
        raise TraceReadError(f"{path}: not a readable XSpace trace (the protobuf is truncated or corrupt)") from None


def _silent(_path: str, _done: int, _total: int) -> None:
    pass


def _read_space(wf: WireFile, path: str, builder: TraceBuilder, progress, host: str | None) -> None:
    top = list(fields(wf, 0, wf.size))
    planes = [fd for fd in top if fd.number == _SPACE_PLANES]
    if not planes:
        raise TraceReadError(f"{path}: parses, but holds no profiler planes (not an XSpace trace?)")
    names = XSpaceLazy.FromString(b"".join(wire.raw(wf, fd) for fd in top if fd.number == _SPACE_HOSTNAMES))
    host = host or (names.hostnames[0] if names.hostnames else os.path.basename(path).split(".xplane.pb")[0])
    clock: dict = {}  # the file's time base (lines.decode_line), decided at its first line
    planes = [(parts, _plane_name(wf, parts)) for parts in (list(fields(wf, fd.start, fd.end)) for fd in planes)]
    # XLA modules' HLO (what names XLA:CPU's ops), read before the lines whose events it names.
    modules = {k: m for parts, name in planes if name == _METADATA for k, m in _modules(wf, parts).items()}
    for parts, name in planes:
        _read_plane(wf, parts, name, host, builder, lambda done: progress(path, done, wf.size), clock, modules)
    gpu = any(name.startswith("/device:GPU") for _parts, name in planes)
    _cost_modules(wf, builder, host, modules, gpu)
    if clock.get("base_ns"):  # absolute times, counted from the first line's: that is where the clock starts
        builder.profile_start_ns[host] = clock["base_ns"]
    progress(path, wf.size, wf.size)


def _cost_modules(wf: WireFile, builder: TraceBuilder, host: str, modules: dict, gpu: bool) -> None:
    """What the instructions of each module the trace shows running cost (read/hlo_cost.py): the
    others are never read past their names."""
    for program in sorted({p for (h, _code, p) in builder.costs.kernels if h == host}):
        module = modules.get(program)
        cost = module_cost_of(wf, module, gpu) if module is not None else None
        if cost is not None:
            builder.costs.modules[(host, program)] = cost


def _modules(wf: WireFile, parts: list[Field]) -> dict:
    """The plane's XLA modules; none where its HLO does not parse (names are then the thunks' own)."""
    try:
        return read_modules(wf, parts)
    except (WireError, UnicodeDecodeError):
        return {}


def _plane_name(wf: WireFile, parts: list[Field]) -> str:
    return XPlaneLazy.FromString(b"".join(wire.raw(wf, p) for p in parts if p.number == _PLANE_NAME)).name


_METADATA = "/host:metadata"


def _read_plane(wf: WireFile, parts: list[Field], name: str, host: str, builder: TraceBuilder, progress, clock: dict,
                modules: dict) -> None:
    lines = [p for p in parts if p.number == _PLANE_LINES]
    if not lines and name != _TASK_ENVIRONMENT:
        # A plane of metadata only (`/host:metadata` holds each XLA module's HLO proto, which
        # reaches hundreds of MB where a jitted function closes over a large array): not read.
        return
    # Everything but the lines (id, name, metadata, stats) is small: parse it in one go.
    head = XPlaneLazy.FromString(b"".join(wire.raw(wf, p) for p in parts if p.number != _PLANE_LINES))
    if name == _TASK_ENVIRONMENT:
        _read_clock(head, host, builder)
    if name.startswith("/device:"):
        _read_device(head, host, builder)
    if not lines:
        return
    names = _PlaneNames(builder, head, host)
    # Closed here, whatever happens: a bad line raises mid-plane, and a stream left to the garbage
    # collector would stop its decoding threads wherever a collection runs (inside threading's own
    # locks, where it deadlocks).
    with contextlib.closing(decoded_lines(wf, lines, clock, names.slot_table(), names.bookkeeping)) as stream:
        _read_lines(stream, wf, head, host, builder, names, modules, progress)


def _read_lines(stream, wf: WireFile, head, host: str, builder: TraceBuilder, names, modules: dict, progress) -> None:
    first = next(stream, None)  # the next lines decode meanwhile
    names.fill()
    # XLA:CPU runs some of a module's thunks on the thread that called it (Python's): on a plane
    # whose events include the executor, those lines are read for thunks too.
    runs_thunks = _THUNK_EXECUTOR in names.names
    for p, line in itertools.chain([first] if first is not None else [], stream):
        check_times(line, TIME_LIMIT_PS)
        role = line_role(head.name, line.name)
        info = LineInfo(host, head.name, line.name or line.display_name, role)
        thunks = info.name.startswith(XLA_CPU_THREADS) and not info.on_device
        codes = names.op_codes if role == "device_ops" else names.thunk_codes() if thunks else names.codes
        caller = runs_thunks and not thunks and not info.on_device
        _add_line(builder, info, line, names, codes, modules, thunks, caller)
        del line  # a few lines in memory at a time (line_threads.AHEAD)
        progress(p.end)


_TASK_ENVIRONMENT = "Task Environment"
_THUNK_EXECUTOR = "ThunkExecutor::Execute"


def _read_clock(plane, host: str, builder: TraceBuilder) -> None:
    """Where the trace's clock starts, in Unix nanoseconds: host event times count from there,
    so samples taken beside the trace (Python stacks) can be placed on it."""
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    for st in plane.stats:
        if names.get(st.metadata_id) == "profile_start_time":
            value = stat_int(stat_value(st, names))
            if value is not None and value > 0:
                builder.profile_start_ns[host] = value


def _read_device(plane, host: str, builder: TraceBuilder) -> None:
    """What a device plane's own stats say it can do (clock, cores, memory bandwidth, compute
    capability; a TPU's peaks), for analysis/cost/device_peaks.py."""
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    stats = {}
    for st in plane.stats:
        key = names.get(st.metadata_id)
        if key:
            value = stat_value(st, names)
            if isinstance(value, (int, float, str)):
                stats[key] = value
    if stats:
        builder.costs.devices[(host, plane.name)] = stats


class _PlaneNames:
    """A plane's event metadata as name codes: per metadata id, the code of its name, the code
    of the op it times on a device's op lines, and whether its events' stats may matter."""

    def __init__(self, builder: TraceBuilder, plane, host: str = ""):
        self.host = host
        self.stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        self.on_device = plane.name.startswith("/device:")
        meta = plane.event_metadata
        self.keys = np.sort(np.fromiter(meta.keys(), np.int64, len(meta)))
        self.names = [meta[k].name for k in self.keys.tolist()]
        n = len(self.keys) + 1
        self.bookkeeping = np.zeros(n, bool)  # the thread pool's instants, left out as read
        if not self.on_device:
            self.bookkeeping[:-1] = [name in _BOOKKEEPING for name in self.names]
        # Per metadata: events parsed that carried none of the stats read here (-1: one did).
        self.misses = np.zeros(n, np.int64)
        self._builder, self._meta = builder, meta
        self._thunks: np.ndarray | None = None
        self._table: np.ndarray | None = None
        keys = self.keys
        if len(keys) and 0 <= keys[0] and keys[-1] < 4 * len(keys) + 4096:
            # Ids are small and dense (TensorFlow numbers them 1, 2, 3...): a table beats a search.
            self._table = np.full(int(keys[-1]) + 2, len(keys), np.int64)
            self._table[keys] = np.arange(len(keys))

    def fill(self) -> None:
        """Name codes and what each kind of event needs: made while the lines decode."""
        builder, names, on_device = self._builder, self.names, self.on_device
        n = len(names) + 1
        self.want, self.launch, self.memory, self.alloc = (np.zeros(n, bool) for _ in range(4))
        if on_device:  # only events on a device's op lines are ops; derived lines repeat their time
            codes, op_codes = [], []
            for k, name in zip(self.keys.tolist(), names):
                codes.append(builder.intern(name, plain=True))
                op_codes.append(builder.intern(*device_label(self._meta[k], self.stat_names)))
                cost = stated_cost(self._meta[k], self.stat_names)
                if cost is not None:
                    builder.costs.per_run[(self.host, op_codes[-1])] = (cost, "tpu")
            unknown = builder.intern("(unknown event)")
            self.codes, self.op_codes = np.array(codes + [unknown], np.int32), np.array(op_codes + [unknown], np.int32)
            return
        codes = [builder.intern(name) for name in names] + [builder.intern("(unknown event)")]
        self.codes = self.op_codes = np.array(codes, np.int32)
        self.want[:-1] = [name not in _NO_STATS and builder.op_of(code) is None for name, code in zip(names, codes)]
        self.launch[:-1] = [name.startswith(LAUNCH_PREFIXES) for name in names]
        # Memory events: their stats are read apart (read/memory_events.py).
        self.memory[:-1] = [name in (ALLOCATION, DEALLOCATION) for name in names]
        self.alloc[:-1] = [name == ALLOCATION for name in names]

    def slot_table(self) -> np.ndarray | None:
        """Per metadata id, its slot (the last entry: an unknown id's); None where ids are too
        sparse for a table. The C decoder slots events with it as it reads them."""
        return self._table

    def slots(self, mid: np.ndarray) -> np.ndarray:
        """Each event's index into the sorted metadata ids (len(keys) for an unknown id)."""
        table, keys = self.slot_table(), self.keys
        if table is not None:
            return table[np.clip(mid, -1, len(table) - 1)]
        slot = np.searchsorted(keys, mid)
        slot[(slot >= len(keys)) | (keys[np.minimum(slot, len(keys) - 1)] != mid)] = len(keys)
        return slot

    def thunk_codes(self) -> np.ndarray:
        """Codes for XLA:CPU's threads, where an event named like an HLO instruction is that
        instruction running (the module's compute on the host), made on first need."""
        if self._thunks is None:
            self._thunks = self.codes.copy()
            for i, k in enumerate(self.keys.tolist()):
                name = self._meta[k].name
                if is_hlo_name(name):
                    self._thunks[i] = self._builder.intern(f"hlo:{name}", cpu_thunk(name))
        return self._thunks


def _add_line(builder, info, line, names: "_PlaneNames", codes, modules: dict | None = None,
              thunks: bool = False, caller: bool = False) -> None:
    n = len(line)
    if n == 0:
        builder.add_line(info, *(np.zeros(0, np.int64),) * 3)
        return
    slot = line.metadata_id if line.slotted else names.slots(line.metadata_id)
    name = codes[slot]
    if thunks or caller:  # XLA:CPU's thunks: each named by the module that ran it
        name = module_names(builder, line, name, names.stat_names, modules or {}, caller=caller, host=info.host)
    stats = None
    if info.role == "device_ops":
        name, stats = device_names(builder, line, name, names.stat_names, modules, info.host)
    elif not info.on_device:
        wanted = names.launch[slot] | (names.want[slot] if info.role in _MARKER_ROLES else False)
        rows = np.flatnonzero(wanted & line.has_stats & (names.misses[slot] < PROBE))
        stats = step_stats(builder, line, rows, slot[rows], names.misses, names.stat_names) if len(rows) else None
    start, dur = line.start_ps, line.duration_ps
    if not info.on_device and not line.slotted:  # (the C decoder left them out already)
        drop = names.bookkeeping[slot] & (dur == 0)
        if drop.any():
            keep = ~drop
            name, start, dur = name[keep], start[keep], dur[keep]
            stats = {k: v[keep] for k, v in stats.items()} if stats else stats
    builder.add_line(info, name, start, dur, stats)
    if not info.on_device:
        memory = np.flatnonzero(names.memory[slot])
        if len(memory):
            builder.add_memory(memory_rows(line, memory, names.alloc[slot[memory]], names.stat_names))
