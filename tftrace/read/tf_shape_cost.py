"""What a TensorFlow op on a GPU costs, from the input shapes its kernels' annotation records
(`scope/MatMul:MatMul#shape=(half[4,384,1024];half[1024,4096])#`): matmuls only. The shapes do
not suffice for a convolution (no strides, padding or dilation are recorded) nor say which
inputs a matmul transposes: where two readings fit, the untransposed one is taken."""

from __future__ import annotations

import re

_SHAPES = re.compile(r"#shape=\(([^)]*)\)")
_ONE = re.compile(r"([a-z0-9]+)\[([0-9,]*)\]")
_BYTES = {"half": 2, "bfloat16": 2, "float": 4, "double": 8, "int32": 4, "int64": 8, "int8": 1, "uint8": 1}
MATMULS = frozenset({"MatMul", "_FusedMatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
UNCOSTED = frozenset({"Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "Conv2DBackpropFilter",
                      "_FusedConv2D", "Einsum"})  # their shapes alone do not give their FLOPs


def shapes(annotation: str) -> list[tuple[str, list[int]]] | None:
    """The (dtype, dims) of each input the annotation records, or None."""
    found = _SHAPES.search(annotation or "")
    if not found:
        return None
    out = []
    for part in found.group(1).split(";"):
        m = _ONE.fullmatch(part.strip())
        if m is None:
            return None
        out.append((m.group(1), [int(d) for d in m.group(2).split(",") if d]))
    return out


def matmul_cost(op_type: str, inputs: list[tuple[str, list[int]]]) -> tuple[float, float] | None:
    """(FLOPs, bytes) of one matmul from its two inputs' shapes; None where they do not fit."""
    if op_type not in MATMULS or len(inputs) < 2:
        return None
    (dtype, a), (_, b) = inputs[0], inputs[1]
    if len(a) < 2 or len(b) < 2:
        return None
    batch_a, batch_b = a[:-2], b[:-2]
    batch = 1
    for d in (batch_a if len(batch_a) >= len(batch_b) else batch_b):
        batch *= d
    readings = [(a[-2], a[-1], b[-1]) if a[-1] == b[-2] else None,  # m, k, n with no transpose
                (a[-2], a[-1], b[-2]) if a[-1] == b[-1] else None,  # b transposed
                (a[-1], a[-2], b[-1]) if a[-2] == b[-2] else None,  # a transposed
                (a[-1], a[-2], b[-2]) if a[-2] == b[-1] else None]  # both
    m_k_n = next((r for r in readings if r is not None), None)
    if m_k_n is None:
        return None
    m, k, n = m_k_n
    size = _BYTES.get(dtype, 4)
    return float(2 * batch * m * k * n), float(size * batch * (m * k + k * n + m * n))
