"""TensorFlow on GPU: a matmul's FLOPs from the input shapes its kernel's annotation records
(unit cases: no trace here records a matmul's shapes), and none for ops whose shapes do not
suffice."""

from __future__ import annotations

import pytest

from tftrace.read.tf_shape_cost import UNCOSTED, matmul_cost, shapes


def test_shapes_are_read_from_a_kernel_annotation():
    text = "replica_4/bert/encoder/layer_0/MatMul:BatchMatMulV2#shape=(half[4,384,1024];half[1024,4096])#"
    assert shapes(text) == [("half", [4, 384, 1024]), ("half", [1024, 4096])]
    assert shapes("replica_4/truediv:Mul#shape=(half[];half[4])#") == [("half", []), ("half", [4])]
    assert shapes("no shapes here") is None


@pytest.mark.parametrize("a,b,flops", [
    ([64, 128], [128, 32], 2 * 64 * 128 * 32),  # a @ b
    ([64, 128], [32, 128], 2 * 64 * 128 * 32),  # a @ b.T
    ([128, 64], [128, 32], 2 * 64 * 128 * 32),  # a.T @ b
    ([8, 64, 128], [128, 32], 2 * 8 * 64 * 128 * 32),  # a batch against one matrix
])
def test_a_matmuls_flops_fit_its_shapes(a, b, flops):
    cost = matmul_cost("BatchMatMulV2" if len(a) > 2 else "MatMul", [("float", a), ("float", b)])
    assert cost[0] == flops
    assert cost[1] > 0


def test_shapes_that_do_not_fit_and_ops_they_do_not_price_give_none():
    assert matmul_cost("MatMul", [("float", [3, 5]), ("float", [7, 11])]) is None
    assert matmul_cost("Conv2D", [("float", [8, 32, 32, 3]), ("float", [3, 3, 3, 16])]) is None
    assert "Conv2D" in UNCOSTED
