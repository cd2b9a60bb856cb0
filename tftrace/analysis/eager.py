"""Eager ops carry no layer scope: give them layers from the order of calls, using the
model's layer list (classes, in call order) that TraceCallback / tftrace.trace save."""

from __future__ import annotations

import numpy as np

from tftrace.events import Trace

# The op that opens each layer kind's work when Keras 3 runs it eagerly; layers absent here run
# no op at inference (Dropout, InputLayer, noise layers) or have no reliable opening op.
_OPENING_OPS = {
    "Dense": {"MatMul", "BatchMatMulV2", "Einsum"},
    "EinsumDense": {"Einsum"},
    "Conv1D": {"Conv2D", "Conv1D"}, "Conv2D": {"Conv2D"}, "Conv3D": {"Conv3D"},
    "DepthwiseConv2D": {"DepthwiseConv2dNative"}, "SeparableConv2D": {"DepthwiseConv2dNative"},
    "Conv2DTranspose": {"Conv2DBackpropInput"},
    "Flatten": {"Reshape"}, "Reshape": {"Reshape"}, "Permute": {"Transpose"},
    "MaxPooling2D": {"MaxPool", "MaxPoolV2"}, "MaxPooling1D": {"MaxPool"}, "AveragePooling2D": {"AvgPool"},
    "GlobalAveragePooling2D": {"Mean"}, "GlobalAveragePooling1D": {"Mean"},
    "GlobalMaxPooling2D": {"Max"}, "GlobalMaxPooling1D": {"Max"},
    "Embedding": {"ResourceGather", "GatherV2"},
    "BatchNormalization": {"FusedBatchNormV3", "Rsqrt"}, "LayerNormalization": {"Mean"},
    "Concatenate": {"ConcatV2"}, "Add": {"AddV2"}, "Multiply": {"Mul"},
}


def eager_layers(trace: Trace, step_starts: tuple[int, ...]) -> tuple[np.ndarray | None, list[str]]:
    """Per event, an index into the returned layer names (-1: not attributed); None when the
    trace has no eager ops or no layer list to attribute them to."""
    ev = trace.events
    layers = [(x.get("name", ""), x.get("class", "")) for x in trace.sidecar.get("layers", [])
              if x.get("class") in _OPENING_OPS]
    eager_codes = [c for c, op in trace.ops.items() if op.kind == "eager"]
    if not layers or not eager_codes:
        return None, []
    out = np.full(len(ev), -1, np.int16 if len(layers) < 2 ** 15 else np.int32)  # one per event: keep it small
    idx = np.flatnonzero(trace.named(eager_codes))
    idx = idx[np.argsort(ev["start_ps"][idx], kind="stable")]
    types = [trace.ops[c].type for c in ev["name"][idx].tolist()]
    starts = ev["start_ps"][idx]
    step_of = np.searchsorted(np.asarray(step_starts, np.int64), starts, side="right") if step_starts else None
    current, last_step = -1, None
    for k, op_type in enumerate(types):
        if step_of is not None and step_of[k] != last_step:
            current, last_step = -1, step_of[k]  # a new step is a new call: start at the first layer
        nxt = _next_layer(layers, current, op_type)
        if nxt is not None:
            current = nxt
        if current >= 0:
            out[idx[k]] = current
    return out, [name for name, _cls in layers]


def _next_layer(layers, current: int, op_type: str) -> int | None:
    """The layer an opening op starts: the next layer in order, or the first (a new call)."""
    following = current + 1
    if following < len(layers) and op_type in _OPENING_OPS[layers[following][1]]:
        return following
    if current >= 0 and op_type in _OPENING_OPS[layers[0][1]] and op_type not in _OPENING_OPS[layers[current][1]]:
        return 0
    return None
