"""Right attribution: pipeline ops are input, layers are the model's, eager ops go to the layer that ran them."""

from __future__ import annotations

import json
import os

import pytest

from conftest import SAMPLE_RUNS, sample
from tftrace.analysis.eager_layers import eager_layers
from tftrace.analysis.ops import op_stats, op_table
from tftrace.analysis.run import analyze_trace
from tftrace.api import analyze
from tftrace.read.loader import load
from tiny import tiny_trace


# -- 1. ops on tf.data threads are the input pipeline's ------------------------------------------
def test_ops_on_tf_data_threads_are_input_even_when_the_model_runs_the_same_type():
    trace = tiny_trace([
        ("python", "train", 0, 200, {"_r": 1, "step_num": 0}),
        ("tf_Compute/1", "model/dense/MatMul:MatMul", 0, 30),
        ("tf_Compute/1", "model/dense/Relu:Relu", 30, 5),
        # A Dataset.map function: a bigger MatMul, a decode and a Relu, on a tf.data thread.
        ("tf_data_private_threadpool/7", "MatMul:MatMul", 0, 80),
        ("tf_data_private_threadpool/7", "DecodeJpeg:DecodeJpeg", 80, 40),
        ("tf_data_private_threadpool/7", "model/dense/Relu:Relu", 120, 10),  # same name as the model's
    ])
    stats = op_stats(trace)
    rows = {(o.name, o.category): o for o in stats.ops}
    for name in ("MatMul", "DecodeJpeg", "model/dense/Relu"):
        row = rows[(name, "input")]
        assert (row.phase, row.layer, row.device) == ("input", "", "host")
    assert rows[("model/dense/Relu", "activation")].self_ps == 5_000_000  # the model's own stays apart
    assert stats.model_op.name == "model/dense/MatMul" and stats.model_op.category == "matmul"
    cats = {c.category: c.self_ps for c in stats.categories}
    assert cats == {"input": 130_000_000, "matmul": 30_000_000, "activation": 5_000_000}
    assert [(r.layer, r.self_ps) for r in stats.layers] == [("dense", 35_000_000)]


def test_building_datasets_and_iterators_is_input_not_the_model():
    trace = tiny_trace([("python", "EagerLocalExecute: MakeIterator", 0, 100),
                        ("python", "EagerLocalExecute: TensorSliceDataset", 100, 20),
                        ("tf_Compute/1", "model/conv/Conv2D:Conv2D", 0, 10)])
    stats = op_stats(trace)
    assert {o.type: o.category for o in stats.ops} == {"MakeIterator": "input", "TensorSliceDataset": "input",
                                                       "Conv2D": "convolution"}
    assert stats.model_op.type == "Conv2D"


@pytest.mark.parametrize("variant", ["light", "heavy"])
def test_predict_loops_name_a_model_op_not_the_iterator(variant):
    stats = op_stats(load(sample("predict_loop", variant)))
    assert stats.model_op.category in ("convolution", "matmul") and stats.model_op.layer


# -- 2. layer names are the model's ------------------------------------------------------------
def _layers(scopes, sidecar=None):
    """Layer of each scope path's op, from a tiny trace of one op per path."""
    events = [("tf_Compute/1", f"{path}/Op{i}:MatMul", i * 10, 5) for i, path in enumerate(scopes)]
    stats = op_stats(tiny_trace(events, sidecar=sidecar))
    return {o.name.rsplit("/", 1)[0]: o.layer for o in stats.ops}


KERAS3 = ["functional_1/conv2d_1", "functional_1/conv2d_1_2", "functional_1/dense_1", "functional_1/dense_1_2",
          "functional_1/dense_2_1", "gradient_tape/functional_1/conv2d_1_2"]


def test_keras3_scopes_are_second_entries_of_the_layers():
    # Keras 3 enters a layer's scope twice per call, the ops land in the second: layers conv2d,
    # conv2d_1, dense, dense_1, dense_2 run in these scopes.
    expected = {"functional_1/conv2d_1": "conv2d", "functional_1/conv2d_1_2": "conv2d_1",
                "functional_1/dense_1": "dense", "functional_1/dense_1_2": "dense_1",
                "functional_1/dense_2_1": "dense_2", "gradient_tape/functional_1/conv2d_1_2": "conv2d_1"}
    assert _layers(KERAS3) == expected
    names = {"layer_names": ["conv2d", "conv2d_1", "dense", "dense_1", "dense_2"]}
    assert _layers(KERAS3, names) == expected  # the model's names agree, and keep conv2d apart from conv2d_1


def test_tf_keras_scopes_are_the_layer_names():
    first = ["sequential/conv2d", "sequential/conv2d_1", "sequential/dense", "sequential/dense_1"]
    assert _layers(first) == {p: p.split("/")[1] for p in first}
    # A session's second model: Keras numbered its layers on; two Dense must not fold into one.
    second = ["sequential_1/dense_2", "sequential_1/dense_3", "sequential_1/dropout_1"]
    assert _layers(second) == {p: p.split("/")[1] for p in second}
    assert _layers(second, {"layer_names": ["dense_2", "dense_3", "dropout_1"]}) == {p: p.split("/")[1] for p in second}


def test_exact_layer_names_win_and_unknown_suffixes_strip_to_a_known_layer():
    names = {"layer_names": ["block", "block_1", "head"]}
    assert _layers(["model/block", "model/block_1", "model/head_3/inner"], names) == {
        "model/block": "block", "model/block_1": "block_1", "model/head_3/inner": "head"}


def test_a_layer_called_twice_keeps_two_rows_rather_than_folding_distinct_layers():
    # tf.keras: `shared`, `shared_1` could as well be two layers of one class; neither reading
    # may merge them.
    assert _layers(["m/shared", "m/shared_1"]) == {"m/shared": "shared", "m/shared_1": "shared_1"}


@pytest.mark.parametrize("variant,expected", [
    ("predict_light", {"conv1", "conv2", "pool1", "pool2", "fc", "logits"}),
    ("predict_heavy", {"conv1", "conv2", "conv3", "pool1", "pool2", "pool3", "fc", "logits"}),
    ("fit_tensorboard", {"base", "flatten", "head_dense", "logits"}),
])
def test_stock_keras3_captures_name_the_layers_without_a_sidecar(variant, expected):
    assert {r.layer for r in op_stats(load(sample("stock", variant))).layers} == expected


@pytest.mark.parametrize("scenario,variant", [r for r in SAMPLE_RUNS if r[0] != "stock" or r[1] == "trace_nosteps"])
def test_layers_of_sample_traces_are_the_models_layers(scenario, variant):
    folder = sample(scenario, variant)
    names = json.load(open(os.path.join(folder, "plugins", "profile", "run", "tftrace_run.json")))["layer_names"]
    layers = analyze(folder, top=None).runs[0].layers
    assert layers and {r.layer for r in layers} <= set(names)


# -- 3. eager ops go to the layer that ran them ------------------------------------------------
LAYERS = {"layers": [{"name": "conv", "class": "Conv2D"}, {"name": "flat", "class": "Flatten"},
                     {"name": "hidden", "class": "Dense"}, {"name": "out", "class": "Dense"}]}
# One `fit` step with run_eagerly=True as Keras 3 runs it (op types in the order of a real
# capture, shortened): forward, loss, loss gradient, backward in reverse layer order, Adam.
FORWARD = ["IteratorGetNext", "ReadVariableOp", "Conv2D", "ReadVariableOp", "_EagerConst", "Reshape", "Squeeze",
           "BiasAdd", "Relu", "Shape", "_EagerConst", "Reshape", "ReadVariableOp", "MatMul", "ReadVariableOp",
           "BiasAdd", "Relu", "ReadVariableOp", "MatMul", "ReadVariableOp", "BiasAdd"]
LOSS = ["Cast", "Cast", "Shape", "SparseSoftmaxCrossEntropyWithLogits", "Sum", "DivNoNan", "ReadVariableOp",
        "AddV2", "AssignVariableOp", "DivNoNan", "Neg", "Mul", "Shape", "BroadcastGradientArgs", "Sum", "Reshape",
        "Tile", "ExpandDims", "Mul"]
BACKWARD = ["BiasAddGrad", "MatMul", "MatMul", "ReluGrad", "BiasAddGrad", "MatMul", "MatMul", "Shape", "Reshape",
            "ReluGrad", "BiasAddGrad", "ShapeN", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Shape", "Reshape"]
# Adam: the first variable's moments, computed before any write (nothing yet tells them from
# other ops), then updates variable by variable up to the last weight update.
PRELUDE = ["Identity", "ReadVariableOp", "Cast", "AddV2", "Pow", "Sub", "Sqrt", "Mul", "RealDiv", "ReadVariableOp"]
UPDATES = ["AssignAddVariableOp", "Square", "ReadVariableOp", "Sub", "Mul", "AssignAddVariableOp", "Sqrt", "RealDiv",
           "AssignSubVariableOp", "Sub", "Mul", "ResourceApplyAdam"]
# The iteration count and an accuracy metric, written the same way, then the next batch.
METRICS = ["Cast", "ReadVariableOp", "AddV2", "AssignVariableOp", "ArgMax", "Equal", "Sum", "AssignAddVariableOp",
           "DivNoNan", "OptionalFromValue", "OptionalHasValue", "OptionalGetValue"]
STEP = FORWARD + LOSS + BACKWARD + PRELUDE + UPDATES + METRICS
EXPECTED = (["", "conv", "conv", "conv", "conv", "conv", "conv", "conv", "conv", "flat", "flat", "flat", "hidden",
             "hidden", "hidden", "hidden", "hidden", "out", "out", "out", "out"]
            + [""] * len(LOSS)
            + ["out"] * 3 + ["hidden"] * 4 + ["flat"] * 2 + ["conv"] * 7
            + [""] * len(PRELUDE + UPDATES + METRICS))


def _eager_steps(steps: int = 2, markers: bool = True):
    events, t = [], 0
    for step in range(steps):
        if markers:
            events.append(("python", "train", t, len(STEP) * 10, {"_r": 1, "step_num": step}))
        events += [("python", f"EagerLocalExecute: {op}", t + i * 10 + 1, 8) for i, op in enumerate(STEP)]
        t += len(STEP) * 10 + 5
    return tiny_trace(events, sidecar=LAYERS)


@pytest.mark.parametrize("markers", [True, False])
def test_eager_training_ops_go_forward_then_backward_through_the_layers(markers):
    trace = _eager_steps(markers=markers)
    label, labels = eager_layers(trace, (0, (len(STEP) * 10 + 5) * 1_000_000) if markers else ())
    ev = trace.events
    eager = [i for i in ev["start_ps"].argsort(kind="stable").tolist()
             if getattr(trace.ops.get(int(ev["name"][i])), "kind", "") == "eager"]
    got = [labels[label[i]].layer if label[i] >= 0 else "" for i in eager]
    assert got == EXPECTED * 2
    phases = [labels[label[i]].phase if label[i] >= 0 else "" for i in eager[:len(STEP)]]
    assert phases == ([""] * len(FORWARD + LOSS) + ["backward"] * len(BACKWARD) + [""] * len(PRELUDE)
                      + ["optimizer"] * len(UPDATES) + [""] * len(METRICS))


def test_eager_training_layer_totals_hold_no_loss_or_optimizer_time():
    run = analyze_trace(_eager_steps(), "t", top=None)
    assert run.mode == "train" and run.eager
    layers = {r.layer: r.self_ps for r in run.layers}
    # Each op is 8 us: per step, conv runs 8 ops forward and 7 backward, out 4 and 3.
    assert layers == {"conv": 2 * 15 * 8_000_000, "flat": 2 * 5 * 8_000_000, "hidden": 2 * 9 * 8_000_000,
                      "out": 2 * 7 * 8_000_000}
    rows = {(o.type, o.layer, o.phase): o for o in run.ops}
    assert rows[("MatMul", "out", "backward")].count == 4 and rows[("MatMul", "out", "forward")].count == 2
    assert rows[("Conv2DBackpropFilter", "conv", "backward")].count == 2
    optimizer = [o for o in run.ops if o.category == "optimizer"]
    assert all((o.layer, o.phase) == ("", "optimizer") for o in optimizer)
    assert sum(o.count for o in optimizer) == 2 * len(UPDATES)
    # The loss tracker's write before the gradients, the metrics' after the updates: not the optimizer's.
    assert {o.count for o in run.ops if o.type == "AssignVariableOp"} == {2 * 2}
    assert all(o.layer == "" for o in run.ops if o.type in ("SparseSoftmaxCrossEntropyWithLogits", "Sqrt", "Pow"))


def test_eager_inference_keeps_forward_attribution_and_a_convolutions_bias_reshape():
    trace = tiny_trace([("python", f"EagerLocalExecute: {op}", i * 10, 8) for i, op in enumerate(FORWARD + ["ArgMax"])],
                       sidecar=LAYERS)
    table = op_table(trace, *eager_layers(trace, ()))
    layer_ps = {}
    for e in table:
        layer_ps[e.layer] = layer_ps.get(e.layer, 0) + e.count
    # conv 8 ops (its kernel read included), flat 3, hidden 5, out 4; the caller's ArgMax and
    # the iterator are nobody's.
    assert layer_ps == {"": 2, "conv": 8, "flat": 3, "hidden": 5, "out": 4}


def test_backward_ops_of_unknown_layers_stay_unattributed_rather_than_wrong():
    # A GlobalAveragePooling2D has no gradient op to tell it by: its gradient (Tile, RealDiv) sits
    # between the Dense's and the convolution's and goes to neither.
    sidecar = {"layers": [{"name": "conv", "class": "Conv2D"}, {"name": "gap", "class": "GlobalAveragePooling2D"},
                          {"name": "out", "class": "Dense"}]}
    ops = ["Conv2D", "BiasAdd", "Relu", "Mean", "MatMul", "BiasAdd", "SparseSoftmaxCrossEntropyWithLogits",
           "BroadcastGradientArgs", "BiasAddGrad", "MatMul", "MatMul", "Tile", "RealDiv", "ReluGrad", "BiasAddGrad",
           "Conv2DBackpropFilter", "Identity", "AssignSubVariableOp"]
    trace = tiny_trace([("python", f"EagerLocalExecute: {op}", i * 10, 8) for i, op in enumerate(ops)], sidecar=sidecar)
    label, labels = eager_layers(trace, ())
    got = [labels[x].layer if x >= 0 else "" for x in label.tolist()]
    assert got == ["conv", "conv", "conv", "gap", "out", "out", "", "", "out", "out", "out", "", "", "conv", "conv",
                   "conv", "", ""]
