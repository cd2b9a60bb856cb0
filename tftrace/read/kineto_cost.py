"""What a PyTorch op costs, from the input shapes the profiler records with `record_shapes=True`
(`Input Dims`, `Input type`, `Concrete Inputs`): GEMMs, convolutions (forward and backward) and
scaled dot-product attention, with the formulas of `torch.utils.flop_counter`. Only the ops that
do the work are counted (`aten::mm`, not the `aten::linear` around it), so nothing counts twice."""

from __future__ import annotations

import ast
from math import prod

_FMA = 2
_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8, "signed char": 1,
          "unsigned char": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "bool": 1}
_GEMMS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
# The fused attention ops ([batch, heads, length, dim] inputs); the kernels they call inside
# (`aten::_flash_attention_forward`...) would count them twice.
_SDPA = ("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
         "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu")
_SDPA_BACKWARD = ("aten::_scaled_dot_product_flash_attention_backward",
                  "aten::_scaled_dot_product_efficient_attention_backward",
                  "aten::_scaled_dot_product_cudnn_attention_backward",
                  "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
COUNTED = frozenset({*_GEMMS, "aten::convolution", "aten::convolution_backward", *_SDPA, *_SDPA_BACKWARD})


def op_cost(name: str, args: dict) -> tuple[float, float] | None:
    """(FLOPs, bytes) of one run of a counted op from its recorded inputs; None where they do
    not say (no shapes recorded, or shapes the formula cannot read)."""
    dims = args.get("Input Dims")
    if not isinstance(dims, list):
        return None
    types = args.get("Input type") if isinstance(args.get("Input type"), list) else []
    concrete = args.get("Concrete Inputs") if isinstance(args.get("Concrete Inputs"), list) else []
    try:
        if name in _GEMMS:
            return _gemm(name, dims, types)
        if name == "aten::convolution":
            return _convolution(dims, types, concrete)
        if name == "aten::convolution_backward":
            return _convolution_backward(dims, types, concrete)
        if name in _SDPA or name in _SDPA_BACKWARD:
            return _attention(name, dims, types)
    except (IndexError, TypeError, ValueError, SyntaxError, ZeroDivisionError, MemoryError, RecursionError):
        return None
    return None


def _size(shape, dtype: str) -> float:
    return float(prod(shape) * _BYTES.get(dtype, 4)) if shape else 0.0


def _gemm(name: str, dims: list, types: list) -> tuple[float, float]:
    a_i, b_i = _GEMMS[name]
    a, b = dims[a_i], dims[b_i]
    dtype = types[a_i] if a_i < len(types) else "float"
    if len(a) == 3:  # bmm: [b, m, k] x [b, k, n]
        out = [a[0], a[1], b[2]]
        flops = _FMA * a[0] * a[1] * a[2] * b[2]
    else:
        out = [a[0], b[1]]
        flops = _FMA * a[0] * a[1] * b[1]
    moved = _size(a, dtype) + _size(b, dtype) + _size(out, dtype)
    if name in ("aten::addmm", "aten::baddbmm"):
        moved += _size(dims[0], types[0] if types else dtype)
    return float(flops), moved


def _value(text: str):
    """A `Concrete Inputs` entry (`[2, 2]`, `1`, `False`) as a Python value."""
    return ast.literal_eval(text) if text not in ("", None) else None


def _out_spatial(x: list, w: list, stride, padding, dilation, transposed: bool, output_padding) -> list[int]:
    n = len(x) - 2
    stride, padding, dilation = (_per_dim(v, n, d) for v, d in ((stride, 1), (padding, 0), (dilation, 1)))
    output_padding = _per_dim(output_padding, n, 0)
    out = []
    for i in range(n):
        k = w[2 + i]
        if transposed:
            out.append((x[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + output_padding[i] + 1)
        else:
            out.append((x[2 + i] + 2 * padding[i] - dilation[i] * (k - 1) - 1) // stride[i] + 1)
    return out


def _per_dim(v, n: int, default: int) -> list[int]:
    if v is None:
        return [default] * n
    if isinstance(v, int):
        return [v] * n
    return list(v) if len(v) == n else [v[0]] * n


def _conv_flops(x_shape: list, w_shape: list, out_shape: list, transposed: bool) -> float:
    """torch.utils.flop_counter's conv count: every output (or, transposed, input) position
    times the filter, per batch element and channel pair."""
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *kernel = w_shape
    return float(prod(spatial) * prod(kernel) * x_shape[0] * c_out * c_in * _FMA)


def _convolution(dims: list, types: list, concrete: list) -> tuple[float, float]:
    x, w = dims[0], dims[1]
    transposed = bool(_value(concrete[6])) if len(concrete) > 6 else False
    out = [x[0], w[1] if transposed else w[0]] + _out_spatial(
        x, w, _value(concrete[3]) if len(concrete) > 3 else None, _value(concrete[4]) if len(concrete) > 4 else None,
        _value(concrete[5]) if len(concrete) > 5 else None, transposed,
        _value(concrete[7]) if len(concrete) > 7 else None)
    dtype = types[0] if types else "float"
    moved = _size(x, dtype) + _size(w, dtype) + _size(out, dtype) + (_size(dims[2], dtype) if len(dims) > 2 else 0)
    return _conv_flops(x, w, out, transposed), moved


def _t(shape: list) -> list:
    return [shape[1], shape[0]] + list(shape[2:])


def _convolution_backward(dims: list, types: list, concrete: list) -> tuple[float, float]:
    grad_out, x, w = dims[0], dims[1], dims[2]
    transposed = bool(_value(concrete[7])) if len(concrete) > 7 else False
    mask = _value(concrete[10]) if len(concrete) > 10 else [True, True, True]
    flops = 0.0
    if mask[0]:  # the input's gradient: a convolution of the output's gradient with the filter
        flops += _conv_flops(grad_out, w, x, not transposed)
    if mask[1]:  # the filter's gradient
        flops += _conv_flops(_t(grad_out), _t(x), _t(w), False) if transposed else \
            _conv_flops(_t(x), _t(grad_out), _t(w), False)
    dtype = types[0] if types else "float"
    moved = _size(grad_out, dtype) + _size(x, dtype) + _size(w, dtype) + (_size(x, dtype) if mask[0] else 0) \
        + (_size(w, dtype) if mask[1] else 0)
    return flops, moved


def _attention(name: str, dims: list, types: list) -> tuple[float, float]:
    """Scaled dot-product attention: Q.K^T and the scores times V (x2 FLOPs each); the backward
    pass recomputes the scores and makes dV, the scores' gradient, dQ and dK: five products."""
    first = 1 if name in _SDPA_BACKWARD else 0
    q, k, v = dims[first], dims[first + 1], dims[first + 2]
    b, h, lq, d_qk = q[0], q[1], q[2], q[3]
    lk, d_v = k[2], v[3]
    products = (3 * d_qk + 2 * d_v) if name in _SDPA_BACKWARD else (d_qk + d_v)
    flops = _FMA * b * h * lq * lk * products
    dtype = types[first] if len(types) > first else "float"
    out = [b, h, lq, d_v]
    moved = sum(_size(s, dtype) for s in (q, k, v, out))
    return float(flops), moved * (2 if name in _SDPA_BACKWARD else 1)
