"""Categories and phases of PyTorch's ops (`aten::addmm`, `autograd::engine::evaluate_function: ReluBackward0`)."""

from __future__ import annotations

import re

from tftrace.model.names import DATALOADER, names_convolution

_BACKWARD_OF = "autograd::engine::evaluate_function: "
_SUFFIX = re.compile(r"(_backward\d*|_forward|_with_indices|_data|_out|_)+\Z")
_NAMES = {
    "matmul": ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "dot", "einsum", "_addmm_activation",
               "scaled_dot_product_attention", "_scaled_dot_product_efficient_attention",
               "_scaled_dot_product_flash_attention", "_efficient_attention", "_flash_attention"),
    "normalization": ("batch_norm", "native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index",
                      "layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "instance_norm", "rms_norm",
                      "_fused_rms_norm"),
    "activation": ("relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "_softmax", "log_softmax", "_log_softmax",
                   "hardtanh", "leaky_relu", "threshold", "elu", "mish", "hardswish", "hardsigmoid", "softplus"),
    "pooling": ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d",
                "_adaptive_avg_pool2d", "adaptive_max_pool2d", "max_pool2d_with_indices"),
    "dropout": ("dropout", "native_dropout", "bernoulli", "feature_dropout"),  # not randn: data and init use it
    "loss": ("cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d", "mse_loss", "l1_loss", "smooth_l1_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss", "kl_div"),
    "reduction": ("sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "norm", "linalg_vector_norm", "var",
                  "std", "prod", "cumsum", "logsumexp", "topk", "sort"),
    "reshape": ("view", "reshape", "_reshape_alias", "t", "transpose", "permute", "contiguous", "expand", "expand_as",
                "squeeze", "unsqueeze", "flatten", "cat", "stack", "slice", "select", "narrow", "split", "chunk",
                "as_strided", "index_select", "gather", "scatter", "index", "unbind", "alias", "detach", "pad",
                "constant_pad_nd", "repeat", "roll", "flip", "embedding", "embedding_dense"),
    "transfer": ("to", "_to_copy", "copy", "pin_memory", "_pin_memory", "record_stream"),
    "elementwise": ("add", "sub", "rsub", "mul", "div", "pow", "sqrt", "rsqrt", "exp", "log", "neg", "abs", "where",
                    "clamp", "clamp_min", "clamp_max", "addcmul", "addcdiv", "lerp", "maximum", "minimum", "fill",
                    "zero", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "eq", "ne", "lt", "le",
                    "gt", "ge", "sign", "reciprocal", "masked_fill", "erf", "sin", "cos", "floor", "ceil", "round"),
    "collective": ("all_reduce", "allreduce", "all_gather", "_allgather_base", "reduce_scatter", "_reduce_scatter_base",
                   "broadcast", "barrier", "alltoall", "all_to_all"),
}
_CATEGORY = {name: cat for cat, names in _NAMES.items() for name in names}


def torch_category(op_type: str) -> str:
    """The category a PyTorch op's name implies; a backward function is its forward op's
    (`ConvolutionBackward0` convolution, `AddmmBackward0` matmul); "other" when unknown
    (allocations such as `aten::empty`, autograd's `AccumulateGrad`)."""
    if op_type == DATALOADER:
        return "input"
    name = op_type[len(_BACKWARD_OF):] if op_type.startswith(_BACKWARD_OF) else op_type
    name = name.rsplit("::", 1)[-1]
    if name.startswith("_foreach_") or name.startswith(("_fused_adam", "_fused_sgd", "_fused_adagrad")):
        return "optimizer"  # the optimizers' multi-tensor (foreach) and fused updates
    lower = _camel(name)
    bare = _SUFFIX.sub("", lower)
    for key in (name, lower, bare, bare.lstrip("_")):
        if key in _CATEGORY:
            return _CATEGORY[key]
    if names_convolution(bare):
        return "convolution"
    return "other"


def is_torch_backward(op_type: str) -> bool:
    """Ops only the backward pass runs: autograd's functions and `*_backward` kernels."""
    return op_type.startswith("autograd::") or "backward" in op_type.lower()


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z][a-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _camel(name: str) -> str:
    """`NativeBatchNorm` -> `native_batch_norm`, `Addmm` -> `addmm`: autograd names its
    functions after the forward op in CamelCase."""
    return _CAMEL.sub("_", name).lower()
