"""Read XSpace files (`*.xplane.pb`) into a TraceBuilder, without TensorFlow."""

from __future__ import annotations

import os
import re

import numpy as np
from google.protobuf.message import DecodeError

from tftrace.build import TraceBuilder, line_role
from tftrace.errors import TraceReadError
from tftrace.names import Op, parse_tf_op, strip_annotation
from tftrace.events import INT_STATS, STR_STATS, LineInfo
from tftrace.xplane.schema import XSpace

# Host events whose stats never matter here; skipping them keeps the one pass lean.
_NO_STATS = frozenset({
    "MemoryAllocation", "MemoryDeallocation", "ThreadpoolListener::StartRegion",
    "ThreadpoolListener::StopRegion", "ExecutorPropagateOutputs", "ExecutorDoneCallback",
    "EagerCopyToDevice", "KernelAndDeviceFunc::Run", "EagerKernelExecute", "ExecutorState::Process",
    "ValidateInputTypeAndPlacement", "TFE_DeleteTensorHandle",
})
_HLO_SUFFIX = re.compile(r"\.\d+\Z")


def parse_xspace(path: str) -> "XSpace":
    """Parse one file into an XSpace message, or raise TraceReadError naming the problem."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceReadError(f"{path}: cannot read: {e.strerror or e}") from None
    if not data:
        raise TraceReadError(f"{path}: empty file, not an XSpace trace")
    space = XSpace()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        raise TraceReadError(f"{path}: not a readable XSpace trace (the protobuf is truncated or corrupt)") from None
    if not space.planes:
        raise TraceReadError(f"{path}: parses, but holds no profiler planes (not an XSpace trace?)")
    return space


def host_of(path: str, space) -> str:
    """The host a file was captured on: its recorded hostname, else the file name."""
    if space.hostnames:
        return space.hostnames[0]
    return os.path.basename(path).split(".xplane.pb")[0]


def add_xspace(builder: TraceBuilder, space, host: str) -> None:
    """Add every timed line of every plane of one XSpace to the builder."""
    for plane in space.planes:
        _add_plane(builder, plane, host)


def _add_plane(builder: TraceBuilder, plane, host: str) -> None:
    if not plane.lines:
        return
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    on_device = plane.name.startswith("/device:")
    meta = plane.event_metadata
    keys = np.fromiter(meta.keys(), np.int64, len(meta))
    keys.sort()
    codes = np.empty(len(keys) + 1, np.int32)
    op_codes = np.empty(len(keys) + 1, np.int32) if on_device else codes
    want = np.zeros(len(keys) + 1, bool)
    for i, k in enumerate(keys.tolist()):
        md = meta[k]
        # On a device, only events on its op lines are ops; derived lines repeat their time.
        codes[i] = builder.intern(md.name, plain=on_device)
        if on_device:
            op_codes[i] = builder.intern(*_device_label(md, stat_names))
        else:
            want[i] = md.name not in _NO_STATS and builder.op_of(codes[i]) is None
    codes[-1] = op_codes[-1] = builder.intern("(unknown event)")
    for line in plane.lines:
        role = line_role(plane.name, line.name)
        info = LineInfo(host, plane.name, line.name or line.display_name, role)
        _add_line(builder, info, line, keys, op_codes if role == "device_ops" else codes, want, stat_names)


def _add_line(builder, info, line, keys, codes, want, stat_names) -> None:
    events = line.events
    n = len(events)
    if n == 0:
        builder.add_line(info, *(np.zeros(0, np.int64),) * 3)
        return
    triples = np.array([(e.metadata_id, e.offset_ps, e.duration_ps) for e in events], np.int64)
    slot = np.searchsorted(keys, triples[:, 0])
    slot[(slot >= len(keys)) | (keys[np.minimum(slot, len(keys) - 1)] != triples[:, 0])] = len(keys)
    name = codes[slot]
    start = triples[:, 1] + line.timestamp_ns * 1000
    stats = None
    if info.role == "device_ops":
        name = _device_names(builder, events, name, stat_names)
    else:
        stats = _event_stats(builder, events, np.flatnonzero(want[slot]), stat_names, n)
    builder.add_line(info, name, start, triples[:, 2], stats)


def _event_stats(builder, events, wanted, stat_names, n) -> dict[str, np.ndarray] | None:
    """The step-related stats of the events that may carry them."""
    if len(wanted) == 0:
        return None
    cols: dict[str, np.ndarray] = {}
    for i in wanted.tolist():
        for st in events[i].stats:
            key = stat_names.get(st.metadata_id)
            col = INT_STATS.get(key) or STR_STATS.get(key)
            if col is None:
                continue
            value = _stat_value(st, stat_names)
            if key in STR_STATS:
                value = builder.intern(str(value))
            elif not isinstance(value, (int, float)):
                continue
            if col not in cols:
                cols[col] = np.full(n, -1, np.int64)
            cols[col][i] = int(value)
    return cols


def _stat_value(st, stat_names):
    kind = st.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return stat_names.get(st.ref_value, "")
    return getattr(st, kind)


def _device_label(md, stat_names) -> tuple[str, Op | None]:
    """A device event metadata (TPU XLA op, GPU kernel) as a name and the op it times."""
    meta_stats = {stat_names.get(s.metadata_id): _stat_value(s, stat_names) for s in md.stats}
    tf_op = parse_tf_op(str(meta_stats.get("tf_op") or ""))
    if tf_op:
        return f"{tf_op[0]}:{tf_op[1]}", Op(tf_op[0], tf_op[1], "device")
    if "hlo_category" in meta_stats:
        hlo = md.display_name or md.name
        return f"hlo:{hlo}", Op(hlo, str(meta_stats["hlo_category"]), "device")
    return f"kernel:{md.name}", Op(md.name, _kernel_type(md.name), "device")


def _kernel_type(kernel: str) -> str:
    if kernel.lower().startswith("memcpy"):
        return kernel
    return _HLO_SUFFIX.sub("", kernel.split("(")[0].split("<")[0].split()[-1] if kernel.split() else kernel)


def _device_names(builder, events, name, stat_names) -> np.ndarray:
    """GPU kernels name the framework op that launched them in their own stats."""
    out = name.copy()
    for i, e in enumerate(events):
        if not e.stats:
            continue
        st = {stat_names.get(s.metadata_id): s for s in e.stats}
        label = _kernel_op(st, stat_names)
        if label is not None:
            out[i] = builder.intern(f"{label[0]}:{label[1]}", Op(label[0], label[1], "device"))
    return out


def _kernel_op(st, stat_names) -> tuple[str, str] | None:
    for key in ("tf_op", "annotation"):
        if key in st:
            text = str(_stat_value(st[key], stat_names))
            parsed = parse_tf_op(strip_annotation(text) if key == "annotation" else text)
            if parsed:
                return parsed
    if "hlo_op" in st:
        hlo = str(_stat_value(st["hlo_op"], stat_names))
        module = str(_stat_value(st["hlo_module"], stat_names)) if "hlo_module" in st else ""
        return (f"{module}/{hlo}" if module else hlo), _HLO_SUFFIX.sub("", hlo)
    return None
