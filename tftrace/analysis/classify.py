"""Name an op's category, Keras layer and phase from its type and name scopes."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, NamedTuple

from tftrace.analysis.breakdown import is_pipeline_op
from tftrace.analysis.torch_ops import is_torch_backward, torch_category
from tftrace.model.names import OPTIMIZER_SCOPES, Op, names_convolution

CATEGORIES = ("matmul", "convolution", "reduction", "reshape", "elementwise", "activation",
              "normalization", "pooling", "dropout", "optimizer", "loss", "input", "transfer",
              "collective", "other")

# Op types by category; matched after stripping oneDNN/fused prefixes (`_Mkl`, `_Fused`).
_TYPES = {
    "matmul": {"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "SparseMatMul",
               "dot", "dot_general", "gemm", "cublas", "MatMulGrad"},
    "convolution": {"Conv2D", "Conv3D", "Conv1D", "DepthwiseConv2dNative", "Conv2DBackpropInput",
                    "Conv2DBackpropFilter", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
                    "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
                    "convolution", "Conv2DWithBias", "PadWithConv2D"},
    "reduction": {"Mean", "Sum", "Max", "Min", "Prod", "ArgMax", "ArgMin", "All", "Any",
                  "reduce", "reduce-window", "EuclideanNorm"},
    "reshape": {"Reshape", "Transpose", "Squeeze", "ExpandDims", "Pack", "Unpack", "ConcatV2",
                "Concat", "Slice", "StridedSlice", "StridedSliceGrad", "Split", "SplitV", "Tile",
                "BroadcastTo", "Shape", "ShapeN", "Pad", "PadV2", "Fill", "ZerosLike", "OnesLike",
                "GatherV2", "Gather", "transpose", "reshape", "broadcast", "concatenate", "slice",
                "dynamic-slice", "dynamic-update-slice", "pad", "bitcast", "data formatting",
                "Flatten", "BroadcastGradientArgs", "Range"},
    "activation": {"Relu", "Relu6", "Elu", "Selu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
                   "Softplus", "Softsign", "LeakyRelu", "Gelu", "ReluGrad", "Relu6Grad", "EluGrad",
                   "SeluGrad", "SigmoidGrad", "TanhGrad", "LeakyReluGrad", "SoftplusGrad", "Swish"},
    "normalization": {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
                      "FusedBatchNormGradV2", "FusedBatchNormGradV3", "BatchNormWithGlobalNormalization",
                      "LayerNorm", "batch-norm-training", "batch-norm-inference", "batch-norm-grad"},
    "pooling": {"MaxPool", "MaxPoolV2", "AvgPool", "AvgPool3D", "MaxPool3D", "MaxPoolGrad",
                "MaxPoolGradV2", "AvgPoolGrad", "MaxPoolWithArgmax"},
    "dropout": {"RandomUniform", "RandomUniformInt", "RandomStandardNormal", "StatelessRandomUniformV2",
                "StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg", "StatelessRandomUniform",
                "RngReadAndSkip", "RngBitGenerator", "rng-bit-generator"},
    "optimizer": {"ResourceApplyAdam", "ResourceApplyGradientDescent", "ResourceApplyMomentum",
                  "ResourceApplyKerasMomentum", "ResourceApplyRMSProp", "ResourceApplyAdagrad",
                  "ResourceApplyAdagradV2", "ResourceApplyAdamWithAmsgrad", "ResourceApplyFtrl",
                  "ResourceApplyAdadelta", "ResourceApplyAdaMax", "ApplyAdam"},
    "loss": {"SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits"},
    "input": {"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional", "OptionalGetValue",
              "OptionalHasValue", "OptionalFromValue", "OptionalNone", "MultiDeviceIteratorGetNextFromShard",
              "Iterator", "InfeedDequeue",
              "InfeedDequeueTuple", "PyFunc", "EagerPyFunc", "infeed"},
    "transfer": {"_Send", "_Recv", "_HostSend", "_HostRecv", "Send", "Recv", "CopyToDevice",
                 "_CopyFromGpuToHost", "_CopyFromHostToGpu", "MemcpyHToD", "MemcpyDToH", "MemcpyDToD",
                 "MemcpyHToH", "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "MemcpyP2P", "copy", "copy-start",
                 "copy-done", "send", "recv", "send-done", "recv-done", "outfeed", "InfeedEnqueue",
                 "InfeedEnqueueTuple", "OutfeedDequeue", "_EagerConst"},
    "collective": {"AllReduce", "CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3",
                   "CollectiveGather", "CollectiveGatherV2", "CollectiveAllToAllV3", "NcclAllReduce",
                   "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                   "all-reduce-start", "all-reduce-done", "all-gather-start", "all-gather-done",
                   "collective-permute-start", "collective-permute-done", "CollectiveBcastSend",
                   "CollectiveBcastRecv"},
    "elementwise": {"Add", "AddV2", "AddN", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv",
                    "FloorMod", "BiasAdd", "BiasAddV1", "BiasAddGrad", "Cast", "Square", "Sqrt", "Rsqrt",
                    "Exp", "Log", "Log1p", "Maximum", "Minimum", "Pow", "Neg", "Abs", "Sign", "Equal",
                    "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "Select", "SelectV2",
                    "LogicalAnd", "LogicalOr", "LogicalNot", "SquaredDifference", "Reciprocal",
                    "ReciprocalGrad", "RsqrtGrad", "SqrtGrad", "ClipByValue", "Floor", "Ceil", "Round",
                    "Erf", "Mod", "TruncateDiv", "AddLoss", "fusion", "loop fusion", "non-fusion elementwise",
                    "add", "multiply", "subtract", "divide", "maximum", "minimum", "exponential",
                    "convert", "select", "compare", "negate", "rsqrt", "sqrt", "tanh", "log", "power"},
}
_BY_TYPE = {t: cat for cat, types in _TYPES.items() for t in types}
_BY_TYPE_LOWER = {t.lower(): cat for t, cat in _BY_TYPE.items()}
_TYPE_PREFIXES = ("_MklNative", "_Mkl", "_FusedBatchNorm", "_Fused", "_ITEX", "_Quantized")
LOSS_SCOPES = {"compile_loss", "loss", "losses"}
METRIC_SCOPES = {"compile_metrics", "metrics"}
# Scopes that wrap a whole model or function call, not a layer.
_WRAPPER_SCOPES = re.compile(r"(StatefulPartitionedCall|PartitionedCall|gradient_tape|gradients|"
                             r"while|cond|replica_\d+|body|__inference_.*|.*_grad)(_\d+)?\Z")
UNIQUE_SUFFIX = re.compile(r"_\d+\Z")
_LAYER_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*\Z")


class Attribution(NamedTuple):
    """Where an op belongs: its category, Keras layer (or "") and phase."""

    category: str
    layer: str
    phase: str  # forward | backward | optimizer | input


@dataclass(frozen=True, eq=False)  # compared by identity: one per trace, a cheap cache key
class LayerScopes:
    """What one trace's name scopes say about its Keras layers (see `layer_scopes`)."""

    names: frozenset[str] = frozenset()  # the model's own layer names (sidecar), empty when unknown
    children: dict = field(default_factory=dict)  # parent scope path -> the scopes right under it
    _doubled: dict = field(default_factory=dict, init=False, repr=False)  # parent -> read as Keras 3's

    def resolve(self, parent: str, scope: str) -> str:
        """The layer name a scope stands for, by the trace alone (see `layer_scopes`)."""
        doubled = self._doubled.get(parent)
        if doubled is None:
            doubled = self._doubled[parent] = _entered_twice(self.children.get(parent, frozenset()))
        return _bare(scope) if doubled else scope


NO_LAYERS = LayerScopes()


def layer_scopes(ops: Iterable[Op], layer_names: Iterable[str] = ()) -> LayerScopes:
    """The scopes of a trace's graph ops, read as Keras layers.

    TensorFlow makes a scope unique with a `_N` suffix when its name is taken in the same parent.
    tf.keras enters a layer's scope once: the scopes are the layer names (`conv2d`, `conv2d_1`;
    `dense_2`, `dense_3` in a session's second model). Keras 3 enters it twice per call and the
    ops land in the second entry: layers `conv2d`, `conv2d_1`, `dense` run in scopes
    `conv2d_1`, `conv2d_1_2`, `dense_1`. The scopes under one parent are read as Keras 3's,
    each losing one suffix, when they can all be second entries (see `_entered_twice`);
    otherwise they are the layer names. Neither reading merges two scopes: op names cannot tell
    a layer called twice from two layers of one class, so a tf.keras layer called twice shows
    as two (`X`, `X_1`), as does a Keras 3 one (`X_1`, `X_3`, left as they are).
    With the model's layer names (sidecar), a scope is the layer that reading gives when the
    model has it, else the layer of its exact name, else of its name stripped of `_N` suffixes
    one at a time; the deepest scope naming a layer wins.
    """
    children: dict[str, set[str]] = {}
    for prefix in {op.name.rpartition("/")[0] for op in ops if op.kind in ("tf", "device")}:
        path = [s for s in prefix.split("/") if s and not _is_wrapper(s)]
        for i, scope in enumerate(path):
            children.setdefault("/".join(path[:i]), set()).add(scope)
    return LayerScopes(frozenset(layer_names), {k: frozenset(v) for k, v in children.items()})


def _entered_twice(scopes: frozenset[str]) -> bool:
    """Can every scope `X_k` be the second entry of its own layer `X` (Keras 3's naming)? Each
    needs a suffix and a layer name no other has; and `X_k` is the first free name after `X`'s
    first entry, so `X_(k-1)` must be taken: by another scope, another layer, or `X`'s own
    first entry (when another scope holds `X`, and k is 2)."""
    if not scopes or any(_bare(s) == s for s in scopes):
        return False
    layers = {_bare(s) for s in scopes}
    if len(layers) < len(scopes):
        return False
    for scope in scopes:
        base, k = scope.rsplit("_", 1)
        below = f"{base}_{int(k) - 1}" if int(k) > 1 else ""
        if below and below not in scopes and below not in layers and not (int(k) == 2 and base in scopes):
            return False
    return True


_SCOPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def trace_scopes(trace) -> LayerScopes:
    """A trace's LayerScopes (with the sidecar's layer names), made once per trace."""
    scopes = _SCOPES.get(trace)
    if scopes is None:
        scopes = _SCOPES[trace] = layer_scopes(trace.ops.values(), trace.sidecar.get("layer_names", ()))
    return scopes


@lru_cache(maxsize=1 << 16)  # a trace's ops are classified by several analyses with one LayerScopes
def classify(op: Op, scopes: LayerScopes = NO_LAYERS) -> Attribution:
    """Category, layer and phase of one op; `scopes` (the trace's, with the model's layer names
    when known) turns name scopes into layers."""
    if op.source:
        return _judge_xla(op, scopes.names)
    category, phase, names = _judge(op)
    return Attribution(category, _layer(names, scopes), phase)


# JAX's transformations wrap the scope they apply to: `jvp(dense)` is the forward pass of the
# scope `dense`, `transpose(jvp(dense))` its backward pass; `jit(f)` is a jitted function, no layer.
_TRANSFORM = re.compile(r"(?P<fn>[A-Za-z_]+)\((?P<inner>.*)\)\Z")
_FUNCTIONS = ("jit", "pjit", "xla_call", "xla_pmap", "pmap", "shard_map", "remat", "checkpoint", "custom_jvp_call",
              "custom_vjp_call", "core_call", "closed_call", "named_call", "while", "cond", "scan")


@lru_cache(maxsize=1 << 16)
def _judge_xla(op: Op, layer_names: frozenset[str]) -> Attribution:
    """An XLA op by its framework's scope path (`jit(train_step)/transpose(jvp(conv2d_5))/conv_general_dilated`):
    its kind from the HLO op, its layer the deepest named scope (the model's own layer list
    decides where there is one), backward inside `transpose(...)`, optimizer and loss by scope."""
    segments = op.source.split("/")
    scopes: list[str] = []
    backward = False
    torch_op = torch_xla_op(segments[-1])  # PyTorch/XLA names the torch op (`aten__addmm`) in its metadata
    for seg in segments[:-1] if len(segments) > 1 or torch_op else segments:
        inner, skip = seg, False
        while (m := _TRANSFORM.match(inner)) is not None:
            backward |= m["fn"] == "transpose"
            skip |= m["fn"] in _FUNCTIONS
            inner = m["inner"]
        if not skip and _LAYER_LIKE.match(inner):
            scopes.append(inner)
    bare = [_bare(s).lower() for s in scopes]
    category = _xla_category(op.type, segments)
    if torch_op:
        backward |= is_torch_backward(torch_op)
        category = "optimizer" if "optimizer" in torch_op else (torch_category(torch_op) if torch_category(torch_op)
                                                                  != "other" else category)
    if category == "optimizer" or any(s in OPTIMIZER_SCOPES for s in bare):
        return Attribution("optimizer", "", "optimizer")
    if category not in ("transfer", "collective") and any(_is_loss_scope(s) for s in bare):
        category = "loss"
    layer = ""
    for scope in reversed(scopes):
        name = _known(scope, scope, layer_names) if layer_names else scope
        if name and not _is_loss_scope(_bare(name).lower()) and _bare(name).lower() not in METRIC_SCOPES:
            layer = name
            break
    return Attribution(category, layer, "backward" if backward else "forward")


def torch_xla_op(primitive: str) -> str:
    """PyTorch/XLA's op type in its HLO metadata (`aten__addmm`, `xla__adam_optimizer_step`: the IR
    op with `:` as `_`) as torch names it (`aten::addmm`); "" for any other."""
    for prefix in ("aten__", "xla__"):
        if primitive.startswith(prefix):
            return f"{prefix[:-2]}::{primitive[len(prefix):]}"
    return ""


# JAX's primitives (the last segment of a scope path) by category; the rest are elementwise.
_PRIMITIVES = (
    (("conv_general_dilated",), "convolution"), (("dot_general", "ragged_dot"), "matmul"),
    (("reduce_window", "select_and_scatter", "select_and_gather"), "pooling"),
    (("reduce_", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"), "reduction"),
    (("transpose", "reshape", "broadcast_in_dim", "concatenate", "slice", "dynamic_slice", "dynamic_update_slice",
      "gather", "scatter", "pad", "squeeze", "expand_dims", "rev", "iota", "copy"), "reshape"),
    (("threefry", "random_", "rng_"), "dropout"),
)
_ACTIVATIONS = {"relu", "relu6", "gelu", "silu", "swish", "sigmoid", "softmax", "log_softmax", "tanh", "elu", "selu",
                "softplus", "leaky_relu", "hard_sigmoid", "mish"}
_GENERIC = ("elementwise", "reshape", "reduction", "matmul", "other", "transfer")  # what a fusion's name alone says


def _xla_category(op_type: str, segments: list[str]) -> str:
    """An XLA op's category: a library kernel's (cuDNN, cuBLAS) or a collective's from its type;
    a fusion's from the primitive its HLO was made from (`ynn_fusion` running
    `conv_general_dilated` is a convolution), an activation inside `jit(relu)` and the like."""
    if op_type == "copy" or op_type.endswith("copy_fusion"):  # a layout copy in the device's memory
        return "reshape"
    by_type = category_of_type(op_type)
    if by_type not in _GENERIC or op_type.startswith(("cublas", "cudnn", "copy-", "memcpy")):
        return by_type
    primitive = segments[-1].lower()
    for starts, category in _PRIMITIVES:
        if primitive.startswith(starts):
            return category
    if any(seg.startswith(("jit(", "pjit(")) and seg[seg.index("(") + 1:-1] in _ACTIVATIONS for seg in segments):
        return "activation"
    return "elementwise" if primitive and by_type in ("transfer", "other") else by_type


@lru_cache(maxsize=1 << 16)
def scopes_of(op: Op) -> tuple[str, ...]:
    """The scopes an op runs in, outermost first, without the wrappers around a whole call
    (`StatefulPartitionedCall`, `gradient_tape`, `jit(f)`, `jvp(...)`): TF ops from their name,
    XLA ops from their framework's scope path."""
    if op.source:
        out = []
        for seg in op.source.split("/")[:-1]:
            inner, skip = seg, False
            while (m := _TRANSFORM.match(inner)) is not None:
                skip |= m["fn"] in _FUNCTIONS
                inner = m["inner"]
            if not skip and _LAYER_LIKE.match(inner):
                out.append(inner)
        return tuple(out)
    if op.kind not in ("tf", "device"):
        return ()
    return tuple(s for s in op.name.split("/")[:-1] if s and not _is_wrapper(s))


def is_loss_scope(scope: str) -> bool:
    return _is_loss_scope(_bare(scope).lower())


def bare(scope: str) -> str:
    return _bare(scope)


# Op names repeat across steps and traces: judge each op once, its layer per trace.
@lru_cache(maxsize=65536)
def _judge(op: Op) -> tuple[str, str, tuple[str, ...]]:
    """An op's category and phase, and its name scopes."""
    prefix, slash, leaf = op.name.rpartition("/")
    scoped = op.kind in ("tf", "device") and slash
    # Judged by scopes and type: ops that differ only in their own name share a judgement (the
    # 1M-event benchmark capture: 3780 ops, 1709 judged). The op's own name counts only where its
    # type says nothing (`_kernel_category`).
    by_name = category_of_type(op.type) == "other" and op.type not in _BY_TYPE
    return _judge_scoped(op.kind, op.type, tuple(prefix.split("/")) if scoped else (), leaf if by_name else "")


@lru_cache(maxsize=65536)
def _judge_scoped(kind: str, op_type: str, names: tuple[str, ...], leaf: str) -> tuple[str, str, tuple[str, ...]]:
    op = Op(f"{'/'.join(names)}/{leaf}", op_type, kind)  # the name as far as the judgement reads it
    lowered = [s.lower() for s in names]
    backward = any(s in ("gradient_tape", "gradients") or s.endswith("_grad") for s in lowered) \
        or is_gradient_type(op.type) or op.kind == "torch" and is_torch_backward(op.type)
    category = _category(op, names, lowered)
    if category in ("input",) or op.kind == "data":
        phase = "input"
    elif category == "optimizer":
        phase = "optimizer"
    else:
        phase = "backward" if backward else "forward"
    return category, phase, names


INPUT = Attribution("input", "", "input")  # a pipeline op: what tf.data threads run


def is_gradient_type(op_type: str) -> bool:
    """Op types only gradients run (`ReluGrad`, `Conv2DBackpropFilter`, `BiasAddGrad`...)."""
    return op_type.endswith(("Grad", "GradV2", "GradV3")) or "Backprop" in op_type


def _strip(scopes: list[str]) -> set[str]:
    return {_bare(s) for s in scopes}


# Scopes repeat across thousands of ops (the model's and its layers'): judge each one once.
@lru_cache(maxsize=1 << 16)
def _bare(scope: str) -> str:
    """`dense_1` -> `dense`: the scope without the suffix a re-entered scope gets."""
    return UNIQUE_SUFFIX.sub("", scope)


@lru_cache(maxsize=1 << 16)
def _is_wrapper(scope: str) -> bool:
    return _WRAPPER_SCOPES.match(scope) is not None


@lru_cache(maxsize=4096)
def category_of_type(op_type: str) -> str:
    """The category an op type alone implies ("other" when unknown)."""
    if op_type in _BY_TYPE:
        return _BY_TYPE[op_type]
    for prefix in _TYPE_PREFIXES:
        if op_type.startswith(prefix) and op_type[len(prefix):] in _BY_TYPE:
            return _BY_TYPE[op_type[len(prefix):]]
        if op_type.startswith(prefix) and op_type[len(prefix):] in ("Conv2D", "DepthwiseConv2dNative"):
            return "convolution"
    lower = op_type.lower()
    if lower in _BY_TYPE_LOWER:
        return _BY_TYPE_LOWER[lower]
    return _kernel_category(lower)


def _kernel_category(lower: str) -> str:
    """Device kernel and HLO names carry their kind in the text (gemm, conv, reduce...)."""
    if lower.startswith("wrapped_"):  # XLA wraps a lone HLO instruction: `wrapped_subtract`
        inner = category_of_type(lower[len("wrapped_"):])
        if inner != "other":
            return inner
    if names_convolution(lower) and "pool" not in lower and "reduce_window" not in lower:
        return "convolution"
    for needles, cat in _KERNEL_NEEDLES:
        if any(n in lower for n in needles):
            return cat
    return "other"


# In order: the first that matches names the kind (a pooling fusion holds "reduce", a cuDNN
# convolution kernel "gemm"). XLA:CPU hands dots to YNNPACK and oneDNN, whose fusions it names so.
_KERNEL_NEEDLES = (
    (("memcpy", "memset"), "transfer"), (("nccl", "all-reduce", "all_reduce", "all-gather", "all_gather",
                                          "reduce-scatter", "reduce_scatter", "all-to-all", "all_to_all",
                                          "collective-permute", "collective_permute"), "collective"),
    (("reduce_window", "reduce-window", "select_and_scatter", "pool"), "pooling"),
    (("gemm", "matmul", "dot", "ynn_fusion", "xnn_fusion", "onednn"), "matmul"),
    (("softmax", "relu"), "activation"), (("batchnorm", "batch_norm", "batch-norm"), "normalization"),
    (("reduce",), "reduction"), (("transpose",), "reshape"), (("copy",), "transfer"),
    (("random", "philox", "rng"), "dropout"), (("fusion", "elementwise"), "elementwise"),
    (("broadcast", "concatenate", "slice", "gather", "scatter", "bitcast", "pad"), "reshape"),
)


_PYTHON_OPS = ("PyFunc", "EagerPyFunc", "PyFuncStateless")


def _category(op: Op, scopes: tuple[str, ...], lowered: list[str]) -> str:
    if op.kind == "data" or is_pipeline_op(op):  # tf.data stages; making datasets and iterators
        return "input"
    if op.kind == "torch":  # PyTorch's ops carry no scopes: their names say what they are
        return torch_category(op.type)
    by_type = category_of_type(op.type)
    if op.type in _PYTHON_OPS and any(not _is_wrapper(sc) for sc in scopes):
        return "other"  # tf.py_function in the model (a Lambda layer): the model's Python, not tf.data's
    if by_type in ("input", "transfer", "collective"):
        return by_type
    bare = _strip(lowered)
    inner = [s.lower() for s in scopes if not _is_wrapper(s)]
    if inner and _bare(inner[0]) in OPTIMIZER_SCOPES:
        return "optimizer"
    if any("dropout" in s for s in lowered) and not any(s in ("gradient_tape", "gradients") for s in lowered[:1]):
        return "dropout"
    if any(_is_loss_scope(s) for s in bare):
        return "loss"
    if by_type == "other" and op.type not in _BY_TYPE:
        # Fused or vendor ops (`_DLSSuperNode` "DLS-SN-MatMul_221") name their kind in the op name.
        return _kernel_category(op.name.rsplit("/", 1)[-1].lower())
    return by_type


def _is_loss_scope(scope: str) -> bool:
    """Keras 3's `compile_loss`, tf.keras's `sparse_categorical_crossentropy`, `weighted_loss`."""
    return scope in LOSS_SCOPES or "crossentropy" in scope or scope.endswith("_loss")


@lru_cache(maxsize=1 << 16)  # ops of one scope share it
def _layer(scopes: tuple[str, ...], layers: LayerScopes) -> str:
    """The Keras layer a scope path names: the deepest known layer, else the second scope."""
    path = [s for s in scopes if not _is_wrapper(s)]
    if not path:
        return ""
    head = _bare(path[0]).lower()
    if head in OPTIMIZER_SCOPES or _is_loss_scope(head) or head in METRIC_SCOPES:
        return ""
    if layers.names:  # the model's own layer list: only its names are layers
        for i in range(len(path) - 1, -1, -1):
            name = _known(layers.resolve("/".join(path[:i]), path[i]), path[i], layers.names)
            if name:
                return name
        return ""
    # Without the model's own layer list, the scope under the model's is its layer.
    return layers.resolve(path[0], path[1]) if len(path) >= 2 and _LAYER_LIKE.match(path[1]) else ""


@lru_cache(maxsize=1 << 16)
def _known(resolved: str, scope: str, layer_names: frozenset[str]) -> str:
    """The model's layer a scope names: the one the trace's scopes point to (`resolved`), else
    the one of its exact name, else `dense_1_2` -> `dense_1` -> `dense`, the first one known."""
    if resolved in layer_names:
        return resolved
    name = scope
    while True:
        if name in layer_names:
            return name
        stripped = _bare(name)
        if stripped == name:
            return ""
        name = stripped
