"""What holds an allocator's memory at its peak: the allocations alive then, grouped by op,
shape and dtype, with weights, optimizer slots, gradients and activations told apart by name."""

from __future__ import annotations

import re

import numpy as np

from tftrace.analysis.classify import OPTIMIZER_SCOPES, classify
from tftrace.model.events import Columns
from tftrace.model.memory import HeldRow
from tftrace.model.names import Op

# TensorFlow's DataType enum (types.proto), as XProf names them.
DTYPES = ("INVALID", "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64", "int64", "bool",
          "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16", "complex128", "half", "resource",
          "variant", "uint32", "uint64")
# Ops and scopes that hold a model's variables, not values computed per batch.
_WEIGHT_OPS = {"VarHandleOp", "ReadVariableOp", "AssignVariableOp", "VariableV2", "Const"}
_WEIGHT_SCOPES = {"kernel", "bias", "embeddings", "gamma", "beta", "moving_mean", "moving_variance",
                  "Initializer", "recurrent_kernel", "depthwise_kernel"}
_SLOT_SCOPES = {"m", "v", "momentum", "velocity", "accumulator", "iterations"}
# A scope's uniquifying number (`layer_10`, `dropout_3`): the same tensor of repeated blocks
# differs only there, and is one holder.
_NUMBER = re.compile(r"(?<=_)\d+(?=/|\Z)")


def held_at(ev: Columns, k: int, peak: int, layer_of: dict, top: int) -> tuple[HeldRow, ...]:
    """The peak's bytes by holder, largest first, adding up to `peak`: the `top` largest groups of
    allocations made in the window and alive at event `k`, the rest in one row, then what the
    window cannot attribute: memory allocated before it, and reserved (stack) bytes."""
    alive = _alive(ev, k)
    size = np.where(ev["allocation_bytes"] >= 0, ev["allocation_bytes"], np.maximum(ev["requested_bytes"], 0))
    groups: dict[tuple, list] = {}
    for i in alive.tolist():
        op = str(ev["tf_op"][i])
        key = (_NUMBER.sub("*", op), str(ev["shape"][i]), _dtype(int(ev["data_type"][i])))
        group = groups.setdefault(key, [0, 0, op, op])  # bytes, count, the name shown, a member's name
        group[0] += int(size[i])
        group[1] += 1
        if group[2] != op:  # members differ in their numbers: the group shows the pattern
            group[2] = key[0]
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))
    rows = [_row(shown, member, shape, dtype, b, c, peak, layer_of)
            for (_key, shape, dtype), (b, c, shown, member) in ranked[:top]]
    rest = ranked[top:]
    if rest:
        rows.append(HeldRow(f"{len(rest)} smaller groups", "", "", "", "rest", sum(v[0] for _k, v in rest),
                            _share(sum(v[0] for _k, v in rest), peak), sum(v[1] for _k, v in rest)))
    reserved = max(int(ev["bytes_reserved"][k]), 0)
    before = peak - reserved - sum(v[0] for _k, v in ranked)
    if before > 0:
        rows.append(HeldRow("allocated before the window", "", "", "", "before window", before, _share(before, peak), 0))
    if reserved:
        rows.append(HeldRow("reserved (stack)", "", "", "", "reserved", reserved, _share(reserved, peak), 0))
    return tuple(rows)


def _alive(ev: Columns, k: int) -> np.ndarray:
    """Allocations at or before event `k` whose address is not freed (or reused) by then."""
    n = len(ev)
    addr = ev["addr"]
    order = np.lexsort((np.arange(n), addr))  # by address, then in time
    same = addr[order][1:] == addr[order][:-1]
    next_event = np.full(n, n)
    next_event[order[:-1][same]] = order[1:][same]
    idx = np.arange(n)
    return np.flatnonzero(ev["alloc"] & (idx <= k) & (next_event > k))


def _row(shown: str, op: str, shape: str, dtype: str, size: int, count: int, peak: int, layer_of: dict) -> HeldRow:
    """`op` is one member's name: its layer and kind are the group's."""
    layer = layer_of.get(op)
    if layer is None:
        layer = classify(_as_op(op)).layer if op else ""
    return HeldRow(shown, layer, shape, dtype, kind_of(op), size, _share(size, peak), count)


def kind_of(op: str) -> str:
    """What an allocation is for, where its op's name says: weights, optimizer (slots and
    updates), gradient, activation (values of the forward pass), or other."""
    if not op:
        return "other"
    scopes = op.split("/")
    bare = {s.lower() for s in scopes}
    if scopes[-1] in _WEIGHT_OPS or bare & {s.lower() for s in _WEIGHT_SCOPES}:
        return "weights"
    phase = classify(_as_op(op)).phase
    if phase == "optimizer" or bare & OPTIMIZER_SCOPES or (len(scopes) > 1 and scopes[-1] in _SLOT_SCOPES):
        return "optimizer"
    if phase == "backward":
        return "gradient"
    return "activation" if phase == "forward" else "other"


def _as_op(name: str) -> Op:
    """The op a memory event names (its type is the name's last scope, uniquifying suffix aside)."""
    return Op(name, name.rsplit("/", 1)[-1].split("_")[0] or name, "tf")


def _dtype(code: int) -> str:
    if 0 < code < len(DTYPES):
        return DTYPES[code]
    return "" if code <= 0 else f"dtype {code}"


def _share(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0
