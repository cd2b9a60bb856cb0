"""Eager ops carry no layer scope: give them layers from the order of calls, using the
model's layer list (classes, in call order) that TraceCallback / tftrace.trace save."""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from tftrace.analysis.classify import is_gradient_type
from tftrace.analysis.torch_links import torch_labels
from tftrace.model.events import Trace

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
# What a layer runs after its opening op (bias, activation; Keras 3 reshapes a convolution's
# bias): the model's last layer ends at the first other op, where the loss or the caller's code begins.
_TAIL_OPS = frozenset({"ReadVariableOp", "BiasAdd", "AddV2", "Add", "Identity", "Relu", "Relu6", "Elu", "Selu",
                       "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softplus", "Softsign", "LeakyRelu", "Gelu",
                       "Erf", "Mul"})
_CONV_TAIL_OPS = _TAIL_OPS | {"_EagerConst", "Reshape", "Squeeze", "ExpandDims"}
_TAILS = {cls: _CONV_TAIL_OPS for cls in ("Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "SeparableConv2D",
                                          "Conv2DTranspose")}
# What a layer runs just before its opening op: reads of its weights; Flatten reads the shape.
_READS = frozenset({"ReadVariableOp"})
_LEAD_IN = {"Flatten": _READS | {"Shape", "_EagerConst"}, "Reshape": _READS | {"Shape", "_EagerConst"}}
# The backward pass runs the layers in reverse, each as (ops that may open it: activation and
# bias gradients; its own gradient ops). Layers absent here have no gradient op to tell by.
_ACTIVATION_GRADS = {"ReluGrad", "Relu6Grad", "EluGrad", "SeluGrad", "SigmoidGrad", "TanhGrad", "LeakyReluGrad",
                     "SoftplusGrad", "SoftsignGrad"}
_BIASED = frozenset(_ACTIVATION_GRADS | {"BiasAddGrad"})
_CONV_GRADS = {"Conv2DBackpropFilter", "Conv2DBackpropInput"}
_DEPTHWISE_GRADS = {"DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput"}
_NONE = frozenset()
_BACKWARD_OPS = {  # class: (opening ops, own gradient ops, how many of those one call runs at most)
    "Dense": (_BIASED, {"MatMul", "BatchMatMulV2", "Einsum"}, 2), "EinsumDense": (_BIASED, {"Einsum"}, 2),
    "Conv1D": (_BIASED, _CONV_GRADS, 2), "Conv2D": (_BIASED, _CONV_GRADS, 2),  # TF runs Conv1D as Conv2D
    "Conv3D": (_BIASED, {"Conv3DBackpropFilterV2", "Conv3DBackpropInputV2"}, 2),
    "DepthwiseConv2D": (_BIASED, _DEPTHWISE_GRADS, 2),
    "SeparableConv2D": (_BIASED, _DEPTHWISE_GRADS | _CONV_GRADS, 4),
    "Conv2DTranspose": (_BIASED, {"Conv2D", "Conv2DBackpropFilter"}, 2),
    "Flatten": ({"Shape"}, {"Reshape"}, 1), "Reshape": ({"Shape"}, {"Reshape"}, 1),
    "Permute": (_NONE, {"Transpose"}, 1),
    "MaxPooling2D": (_NONE, {"MaxPoolGrad", "MaxPoolGradV2"}, 1), "MaxPooling1D": (_NONE, {"MaxPoolGrad"}, 1),
    "AveragePooling2D": (_NONE, {"AvgPoolGrad"}, 1),
    "BatchNormalization": (_NONE, {"FusedBatchNormGradV3", "RsqrtGrad"}, 1),
}
# Gradient bookkeeping that follows a layer's own gradient ops (shapes, reductions to a
# broadcast operand's shape): still that layer's.
_PLUMBING = {"Shape", "ShapeN", "Reshape", "Sum", "BroadcastGradientArgs", "Squeeze", "ExpandDims", "_EagerConst"}
# Weight updates only an optimizer runs (Keras 3 subtracts the step from each weight, tf.keras
# applies it in one op). Other variable writes can be a metric's: Keras 3 writes its iteration
# count as it writes metrics, tf.keras adds to its metrics as Adam adds to its moments.
_UPDATE_PREFIXES = ("ResourceApply", "ResourceSparseApply", "Apply", "ResourceScatter")
_UPDATES = {"AssignSubVariableOp"}
_WRITES = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}


class EagerLabel(NamedTuple):
    """What call order (or, on PyTorch, a range or autograd's links) says about an op ("" keeps
    what its type says); `kind` and `name`, an owner other than a layer (loss, metric,
    optimizer, code)."""

    layer: str
    phase: str = ""
    category: str = ""
    kind: str = ""
    name: str = ""


_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def eager_layers(trace: Trace, step_starts: tuple[int, ...]) -> tuple[np.ndarray | None, list[EagerLabel]]:
    """`_eager_layers`, made once per trace and steps (the op table and the owners both ask)."""
    if trace.format == "kineto":  # ranges, autograd's links and launches say it, not call order
        return torch_labels(trace, EagerLabel)
    made = _MADE.setdefault(trace, {})
    key = tuple(step_starts)
    if key not in made:
        made[key] = _eager_layers(trace, step_starts)
    return made[key]


LABELLED_KINDS = ("eager", "torch", "device")  # op kinds whose events these labels can name


def _eager_layers(trace: Trace, step_starts: tuple[int, ...]) -> tuple[np.ndarray | None, list[EagerLabel]]:
    """Per event, an index into the returned labels (-1: nothing known); None when the trace
    has no eager ops or no layer list to attribute them to.

    Per call (a step, or a run from the first layer's opening op): forward ops go to the layer
    whose opening op came last (with its weight reads just before it), the last layer's only
    while they are its kind of op (the loss is no layer's); the first gradient op starts the
    backward pass, where the layers' gradient ops come in reverse order. After it, no op is a
    layer's; those from the first variable write to the last weight update are the optimizer's.
    What the order cannot tell stays unlabelled."""
    ev = trace.events
    layers = [(x.get("name", ""), x.get("class", "")) for x in trace.sidecar.get("layers", [])
              if x.get("class") in _OPENING_OPS]
    eager_codes = [c for c, op in trace.ops.items() if op.kind == "eager"]
    if not layers or not eager_codes:
        return None, []
    labels = [EagerLabel(name) for name, _cls in layers] + [EagerLabel(name, "backward") for name, _cls in layers]
    labels.append(EagerLabel("", "optimizer", "optimizer"))
    out = np.full(len(ev), -1, np.int16 if len(labels) < 2 ** 15 else np.int32)  # one per event: keep it small
    idx = np.flatnonzero(trace.named(eager_codes))
    idx = idx[np.argsort(ev["start_ps"][idx], kind="stable")]
    types = [trace.ops[c].type for c in ev["name"][idx].tolist()]
    step_of = (np.searchsorted(np.asarray(step_starts, np.int64), ev["start_ps"][idx], side="right").tolist()
               if step_starts else [0] * len(idx))
    got = _walk(layers, types, step_of)
    out[idx] = np.asarray(got, out.dtype)
    return out, labels


def _walk(layers, types: list[str], step_of: list[int]) -> list[int]:
    """Per op (in time order), its label index: layer k forward, n + k backward, 2n optimizer."""
    got = [-1] * len(types)
    state = _Call()
    for k, op_type in enumerate(types):
        if k == 0 or step_of[k] != step_of[k - 1]:
            _optimizer(types, got, state.done_at, k, 2 * len(layers))
            state = _Call(first=k)  # a new step is a new call: start at the first layer
        elif state.done_at is not None and op_type in _OPENING_OPS[layers[0][1]]:
            _optimizer(types, got, state.done_at, k, 2 * len(layers))
            state = _Call(first=state.first)  # the next call, in a trace without steps
        got[k] = _forward(state, layers, types, k, got) if state.backward is None else _backward(state, layers, op_type)
        if state.done_at is None and state.done:
            state.done_at = k
    _optimizer(types, got, state.done_at, len(types), 2 * len(layers))
    return got


def _optimizer(types: list[str], got: list[int], lo: int | None, hi: int, label: int) -> None:
    """After a call's backward pass (ops lo..hi), the optimizer's updates: from its first
    variable write to its last weight update. Metrics updated after that are not its."""
    if lo is None:
        return
    updates = [j for j in range(lo, hi) if types[j] in _UPDATES or types[j].startswith(_UPDATE_PREFIXES)]
    if updates:
        start = next(j for j in range(lo, hi) if types[j] in _WRITES or types[j].startswith(_UPDATE_PREFIXES))
        got[start:updates[-1] + 1] = [label] * (updates[-1] + 1 - start)


class _Call:
    """Where the walk stands in one call of the model."""

    def __init__(self, first: int = 0):
        self.first = first  # the call's first op
        self.current = -1  # forward: the layer whose opening op came last
        self.visited: list[int] = []  # forward: layers in the order they opened
        self.ended = False  # forward: the last layer's own ops are over
        self.backward: list[int] | None = None  # backward: layers that have gradient ops, last first
        self.pos = -1  # backward: index into self.backward
        self.core = 0  # backward: how many of the current layer's own gradient ops came
        self.inside = False  # backward: still in the current layer's gradient ops
        self.done = False  # the backward pass is over
        self.done_at: int | None = None  # the call's first op after it


def _forward(state: _Call, layers, types: list[str], k: int, got: list[int]) -> int:
    op_type = types[k]
    # Keras 3 adds a convolution's bias as Reshape, Squeeze, BiasAdd: that Reshape opens no layer.
    bias = op_type == "Reshape" and k + 1 < len(types) and types[k + 1] == "Squeeze"
    nxt = None if bias else _next_layer(layers, state.current, op_type)
    if nxt is None and state.visited and (is_gradient_type(op_type) or op_type == "BroadcastGradientArgs"):
        state.backward = [i for i in reversed(state.visited) if layers[i][1] in _BACKWARD_OPS]
        return _backward(state, layers, op_type)
    if nxt is not None:
        if nxt == 0:
            state.visited = []
        state.current, state.ended = nxt, False
        state.visited.append(nxt)
        lead_in = _LEAD_IN.get(layers[nxt][1], _READS)
        j = k - 1
        while j >= state.first and types[j] in lead_in:  # its weights (and shape), read just before
            got[j] = nxt
            j -= 1
        return nxt
    if state.current < 0 or state.ended:
        return -1
    if state.current == len(layers) - 1 and op_type not in _TAILS.get(layers[state.current][1], _TAIL_OPS):
        state.ended = True
        return -1
    return state.current


def _backward(state: _Call, layers, op_type: str) -> int:
    n = len(layers)
    if state.done or op_type in _WRITES or op_type.startswith(_UPDATE_PREFIXES):
        state.done = True  # weights are updated once all gradients are known
        return -1
    order = state.backward
    here = order[state.pos] if state.pos >= 0 else -1
    if here >= 0 and state.inside:
        _lead, core, most = _BACKWARD_OPS[layers[here][1]]
        if op_type in core and state.core < most:
            state.core += 1
            return n + here
        if not state.core:  # between its activation or bias gradient and its own
            return n + here
    if state.pos + 1 < len(order) and (state.pos < 0 or state.core):
        nxt = order[state.pos + 1]
        lead, core, _most = _BACKWARD_OPS[layers[nxt][1]]
        if op_type in lead or op_type in core:
            state.pos, state.core, state.inside = state.pos + 1, int(op_type in core), True
            return n + nxt
    if here >= 0 and state.inside and op_type in _PLUMBING:
        return n + here
    state.inside = False
    if here >= 0 and state.pos == len(order) - 1:
        state.done = True  # the first layer's gradients are over: what follows updates weights
    return -1


def _next_layer(layers, current: int, op_type: str) -> int | None:
    """The layer an opening op starts: the next layer in order, or the first (a new call)."""
    following = current + 1
    if following < len(layers) and op_type in _OPENING_OPS[layers[following][1]]:
        return following
    if current >= 0 and op_type in _OPENING_OPS[layers[0][1]] and op_type not in _OPENING_OPS[layers[current][1]]:
        return 0
    return None
