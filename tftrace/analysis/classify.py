"""Name an op's category, Keras layer and phase from its type and name scopes."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from tftrace.names import Op

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
              "OptionalHasValue", "MultiDeviceIteratorGetNextFromShard", "Iterator", "InfeedDequeue",
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
OPTIMIZER_SCOPES = {"adam", "adamw", "sgd", "rmsprop", "adagrad", "adadelta", "adamax", "nadam",
                     "ftrl", "lion", "optimizer", "sgd_optimizer", "momentum", "lamb", "adafactor"}
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


@lru_cache(maxsize=65536)
def classify(op: Op, layer_names: frozenset[str] = frozenset()) -> Attribution:
    """Category, layer and phase of one op; `layer_names` (from a sidecar) resolves `_N` scopes."""
    scopes = op.name.split("/")[:-1] if op.kind in ("tf", "device") else []
    lowered = [s.lower() for s in scopes]
    backward = any(s in ("gradient_tape", "gradients") or s.endswith("_grad") for s in lowered) \
        or op.type.endswith(("Grad", "GradV2", "GradV3")) or "Backprop" in op.type
    category = _category(op, scopes, lowered)
    if category in ("input",) or op.kind == "data":
        phase = "input"
    elif category == "optimizer":
        phase = "optimizer"
    else:
        phase = "backward" if backward else "forward"
    return Attribution(category, _layer(scopes, layer_names), phase)


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
    for needle, cat in (("memcpy", "transfer"), ("nccl", "collective"), ("all-reduce", "collective"),
                        ("all_reduce", "collective"), ("conv", "convolution"), ("gemm", "matmul"),
                        ("matmul", "matmul"), ("dot", "matmul"), ("softmax", "activation"),
                        ("relu", "activation"), ("reduce", "reduction"), ("batchnorm", "normalization"),
                        ("batch_norm", "normalization"), ("pool", "pooling"), ("transpose", "reshape"),
                        ("copy", "transfer"), ("random", "dropout"), ("philox", "dropout"),
                        ("fusion", "elementwise"), ("elementwise", "elementwise"), ("broadcast", "reshape")):
        if needle in lower:
            return cat
    return "other"


def _category(op: Op, scopes: list[str], lowered: list[str]) -> str:
    if op.kind == "data":
        return "input"
    by_type = category_of_type(op.type)
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


def _layer(scopes: list[str], layer_names: frozenset[str]) -> str:
    """The Keras layer a scope path names: the deepest known layer, else the second scope."""
    path = [s for s in scopes if not _is_wrapper(s)]
    if not path:
        return ""
    head = _bare(path[0]).lower()
    if head in OPTIMIZER_SCOPES or _is_loss_scope(head) or head in METRIC_SCOPES:
        return ""
    if layer_names:  # the model's own layer list: only its names are layers
        return next((name for name in map(lambda sc: _known(sc, layer_names), reversed(path)) if name), "")
    # Without the model's own layer list, the scope under the model's is its layer.
    return path[1] if len(path) >= 2 and _LAYER_LIKE.match(path[1]) else ""


@lru_cache(maxsize=1 << 16)
def _known(scope: str, layer_names: frozenset[str]) -> str:
    """`dense_1` is layer `dense_1` if the model has one, else layer `dense` re-entered."""
    name = scope
    while True:
        if name in layer_names:
            return name
        stripped = _bare(name)
        if stripped == name:
            return ""
        name = stripped
