"""Read PyTorch profiler (Kineto) traces: Chrome trace JSON of CPU ops, CUDA/HIP runtime calls and GPU work."""

from __future__ import annotations

import gzip
import re
import zlib
from array import array
from decimal import Decimal, InvalidOperation

import numpy as np

from tftrace.model.cost import OpTotal
from tftrace.model.errors import TraceReadError
from tftrace.model.events import LineInfo
from tftrace.model.names import DATALOADER, Op
from tftrace.read import storage
from tftrace.read.build import TraceBuilder
from tftrace.read.hlo import precision
from tftrace.read.json_stream import event_batches
from tftrace.read.kineto_cost import COUNTED, op_cost

# Categories of both eras: 2021's (`Operator`, `Kernel`, ...) and today's (`cpu_op`, `kernel`, ...).
_KERNEL = {"kernel", "Kernel"}
_COPY = {"gpu_memcpy", "Memcpy"}
_SET = {"gpu_memset", "Memset"}
_DEVICE = _KERNEL | _COPY | _SET
_DEVICE_RANGES = {"gpu_user_annotation"}  # record_function ranges copied onto a stream
_OPS = {"cpu_op", "Operator"}  # the rest on the host (runtime calls, Python, record_function ranges) are not ops
_STEP = re.compile(r"ProfilerStep#(\d+)\Z")
_DIGITS = re.compile(r"-?\d+")
# What marks a Chrome trace as PyTorch's, in its first bytes (a top-level key, a category, a step).
_MARKS = re.compile(rb'"(schemaVersion|deviceProperties|distributedInfo)"|ProfilerStep#|PyTorch Profiler|'
                    rb'"cat"\s*:\s*"(cpu_op|Operator|cuda_runtime|python_function|user_annotation)"')
_HEAD = 1 << 16
SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json")  # the names torch.profiler's tensorboard_trace_handler writes


def is_kineto(path: str) -> bool:
    """Does the file hold a PyTorch profiler trace? Judged from its name and its first 64 KB; a
    file that cannot be read is not one (its reader, if any, says why)."""
    if path.endswith(SUFFIXES):
        return True
    try:
        with storage.open_binary(path) as raw:
            head = gzip.GzipFile(fileobj=raw).read(_HEAD) if path.endswith(".gz") else raw.read(_HEAD)
    except (OSError, EOFError, ValueError, zlib.error):
        return False
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] in (b"{", b"[") and _MARKS.search(head) is not None


def read_kineto(path: str, builder: TraceBuilder, host: str) -> None:
    """Add a Kineto file's events: CPU ops, runtime calls and Python on host lines (one per
    thread), kernels, copies and memsets on device lines (one per stream); `ProfilerStep#N`
    ranges are the steps, correlation ids tie device work to its launch. A file with no timed
    event raises TraceReadError: in a run of several ranks it is left out, named in the notes."""
    top: dict = {}
    events = _Events()
    for batch in event_batches(path, parse_float=str, top=top):
        events.add(batch)
    events.link_flows()
    if not events.lines:  # torch.profiler writes one when a schedule's cycle closes on no step
        raise TraceReadError(f"{path}: a PyTorch trace with no timed events (an empty profiling cycle)")
    for key in sorted(events.lines, key=str):
        _add_line(builder, host, key, events)
    _add_costs(builder, host, events, top)
    if events.base_ps is not None:  # where event times count from, in Unix ns
        base = top.get("baseTimeNanoseconds")  # newer files count from it; older ones from the epoch
        base = base if type(base) is int else 0
        builder.profile_start_ns[host] = base + events.base_ps // 1000


def _add_costs(builder: TraceBuilder, host: str, events: "_Events", top: dict) -> None:
    """The counted ops' FLOPs and bytes from their shapes (read/kineto_cost.py), and what the
    trace says of its GPUs (`deviceProperties`: name, SMs, capability; no clock)."""
    for label, (flops, moved, runs) in events.costs.items():
        cat, name = events.labels[label]
        code = _intern(builder, cat, name, "compute")
        before = builder.costs.totals.get((host, code))
        if before is not None:
            flops, moved, runs = flops + before.flops, moved + before.bytes, runs + before.runs
        builder.costs.totals[(host, code)] = OpTotal(flops, moved, runs, "shapes")
    for device in top.get("deviceProperties") or ():
        if isinstance(device, dict) and isinstance(device.get("id"), int):
            builder.costs.devices[(host, f"/device:GPU:{device['id']}")] = {
                "source": "kineto", **{k: v for k, v in device.items() if isinstance(v, (int, float, str))}}


class _Line:
    __slots__ = ("label", "start", "dur", "corr", "step", "missing")

    def __init__(self):
        self.label, self.start, self.dur = array("i"), array("q"), array("q")
        self.corr, self.step = array("q"), array("q")
        self.missing: list[tuple[int, str, str]] = []  # events without a correlation id in their args


class _Events:
    """Each event as a few numbers on its line; labels (category and name) interned once."""

    def __init__(self):
        self.lines: dict[tuple, _Line] = {}
        self.threads: dict[tuple[str, str], str] = {}
        self.labels: list[tuple[str, str]] = []
        self._codes: dict[tuple[str, str], int] = {}
        self._flows: dict[tuple[str, str, int], int] = {}  # (pid, tid, ts) of a flow's end -> its id
        self.costs: dict[int, list] = {}  # label -> [FLOPs, bytes, runs] of ops counted from their shapes
        # Times count from the first event's: Unix microseconds in picoseconds overflow int64.
        self.base_ps: int | None = None

    def _time(self, ts) -> int | None:
        ps = _ps(ts)
        if ps is None:
            return None
        if self.base_ps is None:
            self.base_ps = ps - ps % 1_000_000
        ps -= self.base_ps
        return ps if -_LIMIT < ps < _LIMIT else None

    def add(self, batch: list) -> None:
        for ev in batch:
            if type(ev) is not dict:
                continue
            ph = ev.get("ph")
            if ph == "X":
                self._complete(ev)
            elif ph in ("s", "f") and ev.get("cat") in ("ac2g", "async"):
                ts = self._time(ev.get("ts"))
                if ts is not None and _id(ev.get("id")) >= 0:
                    self._flows[(str(ev.get("pid")), str(ev.get("tid")), ts)] = ev["id"]
            elif ph == "M" and ev.get("name") == "thread_name":
                args = ev.get("args")
                if isinstance(args, dict) and args.get("name"):
                    self.threads[(str(ev.get("pid")), str(ev.get("tid")))] = str(args["name"]).strip()

    def _complete(self, ev: dict) -> None:
        cat = ev.get("cat")
        cat = cat if type(cat) is str else ""
        start = self._time(ev.get("ts"))
        if start is None or cat == "Trace":  # the profiler's own span of the whole capture
            return
        dur = _ps(ev.get("dur", 0))
        args = ev.get("args")
        args = args if type(args) is dict else {}
        pid, tid = str(ev.get("pid")), str(ev.get("tid"))
        if cat in _DEVICE or cat in _DEVICE_RANGES:
            device = _number(args.get("device"), _number(pid, None))
            stream = _number(args.get("stream"), _number(tid, 0))
            if device is None:
                return
            key = ("device", device, stream, cat in _DEVICE_RANGES)
        elif _number(pid, None) is None:
            return  # a label lane ("Traces", "Spans"), not a process
        else:
            key = ("host", pid, tid)
        name = ev.get("name", "")
        label = (cat, name if type(name) is str else str(name))
        code = self._codes.get(label)
        if code is None:
            code = self._codes[label] = len(self.labels)
            self.labels.append(label)
        if label[1] in COUNTED and cat in _OPS:
            cost = op_cost(label[1], args)
            if cost is not None:
                acc = self.costs.setdefault(code, [0.0, 0.0, 0])
                acc[0], acc[1], acc[2] = acc[0] + cost[0], acc[1] + cost[1], acc[2] + 1
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = _Line()
        line.label.append(code)
        line.start.append(start)
        line.dur.append(dur if dur is not None and 0 < dur < _LIMIT else 0)
        corr = _id(args.get("correlation"))
        if corr < 0:  # a flow that ends here (`ac2g`; 2021's `async` "launch") may carry the id
            line.missing.append((len(line.corr), pid, tid))
        line.corr.append(corr)
        step = _STEP.match(label[1])
        line.step.append(_id(int(step.group(1))) if step and cat not in _DEVICE_RANGES else -1)

    def link_flows(self) -> None:
        """Correlation ids from flow events, for events whose args carry none."""
        for line in self.lines.values():
            for i, pid, tid in line.missing:
                line.corr[i] = self._flows.get((pid, tid, line.start[i]), -1)


def _add_line(builder: TraceBuilder, host: str, key: tuple, events: _Events) -> None:
    line = events.lines[key]
    if key[0] == "device":
        _, device, stream, ranges = key
        plane = f"/device:GPU:{device}"
        info = LineInfo(host, plane, f"Annotations (stream {stream})" if ranges else f"Stream #{stream}",
                        "derived" if ranges else "device_ops")
    else:
        _, pid, tid = key
        info = LineInfo(host, "/host:CPU", events.threads.get((pid, tid), f"thread {tid}"),
                        "python" if pid == tid else "compute")
    local = np.frombuffer(line.label, np.int32)
    uniq, inverse = np.unique(local, return_inverse=True)
    table = np.array([_intern(builder, *events.labels[c], info.role) for c in uniq.tolist()], np.int32)
    name = table[inverse.reshape(-1)] if len(local) else np.zeros(0, np.int32)
    corr = np.frombuffer(line.corr, np.int64)
    step = np.frombuffer(line.step, np.int64)
    stats = {"correlation": corr, "step_num": step, "root": np.where(step >= 0, 1, -1)}
    builder.add_line(info, name, np.frombuffer(line.start, np.int64), np.frombuffer(line.dur, np.int64), stats)


def _intern(builder: TraceBuilder, cat: str, name: str, role: str) -> int:
    """A name's code, with the op it times: a torch op, a kernel or copy, a DataLoader's next
    batch; runtime calls, Python functions and record_function ranges are not ops."""
    if role == "device_ops":
        if cat in _COPY:
            return builder.intern(name, Op(name, _copy_type(name), "device"))
        if cat in _SET:
            return builder.intern(name, Op(name, "Memset", "device"))
        return builder.intern(f"kernel:{name}", Op(name, name, "device", "", precision(name)))
    if cat == "DataLoader" or name.startswith("enumerate(DataLoader)#"):
        return builder.intern(name, Op(name, DATALOADER, "torch"))
    if cat in _OPS and not _STEP.match(name) and "#" not in name:
        return builder.intern(name, Op(name, name, "torch"))
    return builder.intern(name, plain=True)


def _copy_type(name: str) -> str:
    """`Memcpy HtoD (Pageable -> Device)` as the copy types the analyses know (`MemcpyH2D`)."""
    for kineto, known in (("htod", "MemcpyH2D"), ("dtoh", "MemcpyD2H"), ("dtod", "MemcpyD2D"), ("ptop", "MemcpyP2P")):
        if kineto in name.lower():
            return known
    return "Memcpy"


_LIMIT = 1 << 62


def _ps(value) -> int | None:
    """Microseconds (an int, or a fraction's decimal text) as exact integer picoseconds, or None
    (a Python int: Unix times in picoseconds pass int64's range)."""
    if type(value) is int:
        ps = value * 1_000_000
    elif type(value) is str:
        whole, dot, frac = value.partition(".")
        if dot and value.isascii() and whole.lstrip("-").isdigit() and frac.isdigit():
            digits = (frac + "000000")[:6]
            ps = int(whole) * 1_000_000 + (-1 if whole.startswith("-") else 1) * int(digits)
            if len(frac) > 6 and frac[6] >= "5":  # sub-picosecond digits: rounded half up
                ps += -1 if whole.startswith("-") else 1
        else:
            try:
                number = Decimal(value) * 1_000_000
                if not number.is_finite() or abs(number) > _LIMIT * 1_000_000:
                    return None
                ps = int(number.to_integral_value())
            except (InvalidOperation, ValueError, OverflowError):
                return None
    else:
        return None
    return ps


def _id(value) -> int:
    """A correlation id, flow id or step number that fits the stat columns, else -1."""
    return value if type(value) is int and 0 <= value < _LIMIT else -1


def _number(value, default):
    """An id written as a number or as text with one (`"stream 7"`, `"7"`, 7)."""
    if type(value) is int:
        return value
    if type(value) is str:
        found = _DIGITS.search(value)
        if found:
            return int(found.group())
    return default
