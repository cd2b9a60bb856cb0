"""A TensorFlow Keras step's FLOPs per op, counted by TensorFlow's own op statistics on the step's graph for one batch.

The graph is the one Keras traced for the call (Keras 3: its `one_step_on_data` function, or
`predict_function`), copied with the batch's shapes fixed where the trace left the batch
dimension open (TensorFlow's shape inference runs again as the copy is imported: about a
tenth of the time of a trace). Where that graph cannot be had (tf.keras, several batches a call),
the step (`train_step`, `test_step` or `predict_step`, through the model's distribution strategy
as Keras runs it) is traced again for the batch's spec. Neither runs an op, so no variable
changes, and the user's functions are left as they are. Each op that would run (reachable from
the graph's outputs and its stateful ops: TensorFlow prunes the rest, such as a first layer's
input gradient) is counted with the `flops` statistic TensorFlow registers for its type
(`get_stats_for_node_def`: MatMul, Conv2D and its gradients, BiasAdd, elementwise ops...); types
without one count nothing. Loops count their body times their fixed trip count; conditionals
their larger branch; function calls their body."""

from __future__ import annotations

from typing import NamedTuple

_CALLS = ("PartitionedCall", "StatefulPartitionedCall")
_CONDS = ("If", "StatelessIf", "Case", "StatelessCase")
_LOOPS = ("While", "StatelessWhile")


class Counted(NamedTuple):
    """An op's name (its scope path) and type, and its FLOPs (None: shapes too unknown to count)."""

    name: str
    type: str
    flops: float | None


def step_graph(model, mode: str, structure):
    """The graph of one `mode` step (train, test, predict) on a batch of `structure` (Leafs)."""
    import tensorflow as tf
    from tftrace.capture.batch_spec import nest_map
    step = {"train": "train_step", "test": "test_step", "predict": "predict_step"}[mode]
    fn = getattr(model, step)
    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    specs = nest_map(lambda leaf: tf.TensorSpec(leaf.shape, tf.as_dtype(leaf.dtype)), structure)
    # Keras 3 runs its steps without AutoGraph (`do_not_convert`); tf.keras converts them.
    function = tf.function(lambda data: strategy.run(fn, args=(data,)), autograph=not _keras3(model))
    return function.get_concrete_function(specs).graph


def keras_graph(model, mode: str, structure):
    """(The graph Keras traced for this call's step, with the batch's shapes, the graph whose
    functions and pruning it keeps), or None where Keras 3's traced step cannot be had or does
    not take this batch."""
    import tensorflow as tf
    from tftrace.capture.batch_spec import nest_map
    function = _keras_step_function(model, mode)
    if function is None:
        return None
    specs = tf.nest.flatten(nest_map(lambda leaf: tf.TensorSpec(leaf.shape, tf.as_dtype(leaf.dtype)), structure))
    fitting = []
    for concrete in function._list_all_concrete_functions():
        inputs = concrete.graph.inputs[:len(specs)]
        if len(tf.nest.flatten(concrete.structured_input_signature, expand_composites=True)) != len(specs):
            continue
        if all(t.dtype == s.dtype and t.shape.is_compatible_with(s.shape) for t, s in zip(inputs, specs)):
            fitting.append(concrete.graph)
    if not fitting:
        return None
    exact = [g for g in fitting if all(t.shape == s.shape for t, s in zip(g.inputs, specs))]
    if exact:
        return exact[0], exact[0]
    return _shaped(fitting[0], specs), fitting[0]


def _keras_step_function(model, mode: str):
    """Keras 3's tf.function of one step: `one_step_on_data` inside train_function / test_function
    (with a batch a call), `predict_function` itself (its step is traced inline)."""
    if not _keras3(model):
        return None
    if mode == "predict":
        fn = getattr(model, "predict_function", None)
        return fn if hasattr(fn, "_list_all_concrete_functions") and _steps_per_execution(model) == 1 else None
    fn = getattr(model, {"train": "train_function", "test": "test_function"}[mode], None)
    cells = dict(zip(getattr(getattr(fn, "__code__", None), "co_freevars", ()), getattr(fn, "__closure__", None) or ()))
    try:
        inner = cells["one_step_on_data"].cell_contents
    except (KeyError, ValueError):
        return None
    inner = getattr(inner, "__wrapped__", inner)  # Keras' wrapper turning optional inputs to None
    return inner if hasattr(inner, "_list_all_concrete_functions") else None


def _shaped(graph, specs):
    """A copy of `graph` whose data inputs have the batch's shapes: imported with each data input,
    and each variable read (whose shape the copy could not know), replaced by a placeholder of its
    shape, so TensorFlow's shape inference fixes every shape that follows from them."""
    import tensorflow as tf
    definition = graph.as_graph_def()
    with tf.Graph().as_default() as copy:
        replace = {t.name: tf.compat.v1.placeholder(s.dtype, s.shape) for t, s in zip(graph.inputs, specs)}
        for op in graph.get_operations():
            if op.type == "ReadVariableOp" and op.outputs[0].shape.is_fully_defined():
                out = op.outputs[0]
                replace[out.name] = tf.compat.v1.placeholder(out.dtype, out.shape)
        tf.graph_util.import_graph_def(definition, input_map=replace, name="")
    return copy


def count_ops(graph, original=None) -> list[Counted]:
    """Every op of `graph` that runs, with its FLOPs; `original`: the graph `graph` was copied
    from (which ops run, and nested functions' graphs, are read there)."""
    from tensorflow.python.util import deprecation
    with deprecation.silence():  # the stats functions call a v1 shape helper that warns once
        running = {op.name for op in _running(original)} if original is not None and original is not graph else None
        return _count(graph, "", 1.0, depth=0, running=running, library=original)


def _count(graph, prefix: str, times: float, depth: int, running=None, library=None) -> list[Counted]:
    from tensorflow.python.framework import ops
    out: list[Counted] = []
    chosen = _running(graph) if running is None else [op for op in graph.get_operations() if op.name in running]
    for op in chosen:
        name = op.name if not prefix or op.name.startswith(prefix) else f"{prefix}/{op.name}"
        if op.type in _CALLS + _CONDS + _LOOPS:
            out += _nested(library if library is not None else graph, op, name, times, depth)
            continue
        try:  # a type with no statistic registered (most ops) gives None: nothing to count
            value = ops.get_stats_for_node_def(graph, op.node_def, "flops").value
        except Exception:  # a statistic that needs a shape the graph does not know
            out.append(Counted(name, op.type, None))
            continue
        if value:
            out.append(Counted(name, op.type, float(value) * times))
    return out


def _nested(graph, op, name: str, times: float, depth: int) -> list[Counted]:
    """The ops a call, a conditional or a loop runs, named under the op's own scope."""
    scope = name.rpartition("/")[0]
    if depth > 8:
        return [Counted(name, op.type, None)]
    if op.type in _CALLS:
        body = _function(graph, op, "f")
        return _count(body, scope, times, depth + 1) if body is not None else [Counted(name, op.type, None)]
    if op.type in _CONDS:
        branches = [_function(graph, op, a) for a in ("then_branch", "else_branch")] if "If" in op.type \
            else [_function_of(graph, f.name) for f in op.get_attr("branches")]
        if any(b is None for b in branches):
            return [Counted(name, op.type, None)]
        counted = [_count(b, scope, times, depth + 1) for b in branches]
        return max(counted, key=lambda c: sum(x.flops or 0 for x in c))  # the larger branch
    body, trips = _function(graph, op, "body"), _trip_count(op)
    if body is None or trips is None:
        return [Counted(name, op.type, None)]
    return _count(body, scope, times * trips, depth + 1)


def _trip_count(op) -> int | None:
    """A While's fixed trip count: its `maximum_iterations` input (the second), when constant
    (Keras' recurrent layers pass the max over their fixed timesteps)."""
    try:
        value = _static(op.inputs[1])
        return int(value) if value is not None and int(value) >= 0 else None
    except Exception:
        return None


def _static(tensor, depth: int = 0):
    """A tensor's value where the graph fixes it: what TensorFlow's constant folding in Python
    gives, and a Max or Min over such values."""
    import numpy as np
    import tensorflow as tf
    value = tf.get_static_value(tensor)
    if value is not None or depth > 4:
        return value
    op = tensor.op
    if op.type in ("Max", "Min") and len(op.inputs) == 2:
        data, axis = _static(op.inputs[0], depth + 1), _static(op.inputs[1], depth + 1)
        if data is not None and axis is not None:
            reduce = np.max if op.type == "Max" else np.min
            return reduce(data, axis=tuple(np.atleast_1d(axis).tolist()), keepdims=op.get_attr("keep_dims"))
    return None


def _function(graph, op, attr: str):
    try:
        return _function_of(graph, op.get_attr(attr).name)
    except Exception:
        return None


def _function_of(graph, name: str):
    """The graph of a function in `graph`'s library (or an outer graph's)."""
    while graph is not None:
        fn = graph._get_function(name) if hasattr(graph, "_get_function") else None
        if fn is not None:
            return getattr(fn, "graph", None)
        graph = getattr(graph, "outer_graph", None)
    return None


def _running(graph) -> list:
    """The ops that run: reachable from the graph's outputs and control outputs (TensorFlow keeps
    these and the stateful ops they order; it prunes everything else from a function's body)."""
    roots = [t.op for t in getattr(graph, "outputs", [])] + list(getattr(graph, "control_outputs", []))
    if not roots:  # not a function graph: every op
        return graph.get_operations()
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return [op for op in graph.get_operations() if op.name in seen]


def _steps_per_execution(model) -> int:
    try:
        return int(getattr(model, "steps_per_execution", 1) or 1)
    except (TypeError, ValueError):
        return 1


def _keras3(model) -> bool:
    return any(c.__module__.startswith("keras.") for c in type(model).__mro__ if c.__name__ == "Model")


class Tally(NamedTuple):
    """Counted ops summed by owner: `layers` {layer: {"forward", "backward"}}, `other` {"loss",
    "optimizer", "metrics", "rest"}, `unknown` the layers with an op whose shapes were not known
    (their counts are partial), `unowned_unknown` such ops outside any layer."""

    layers: dict
    other: dict
    unknown: set
    unowned_unknown: int


def tally(counted: list[Counted], layer_names, optimizer: str = "") -> Tally:
    """Owners as the report names them: each op's layer and phase by tftrace's own reading of
    TensorFlow's scopes (tftrace.analysis.classify) with the model's layer names, so the keys are
    the layers the report lists; `optimizer`: the optimizer's name (its scope, `adam_1_1` for a
    session's second Adam, is its update's whatever the reading of scopes says)."""
    from tftrace.analysis.classify import classify, layer_scopes
    from tftrace.model.names import Op
    ops = [Op(c.name, c.type, "tf") for c in counted]
    scopes = layer_scopes(ops, layer_names)
    layers: dict = {}
    other = {"loss": 0.0, "optimizer": 0.0, "metrics": 0.0, "rest": 0.0}
    unknown: set = set()
    unowned_unknown = 0
    for op, c in zip(ops, counted):
        owner = classify(op, scopes)
        if optimizer and _in_scope(op, optimizer):
            owner = owner._replace(layer="", phase="optimizer")
        if c.flops is None:
            if owner.layer:
                unknown.add(owner.layer)
            else:
                unowned_unknown += 1
            continue
        if owner.layer:
            phase = "backward" if owner.phase == "backward" else "forward"
            entry = layers.setdefault(owner.layer, {"forward": 0.0, "backward": 0.0})
            entry[phase] += c.flops
        elif owner.phase == "optimizer":
            other["optimizer"] += c.flops
        elif owner.category == "loss":
            other["loss"] += c.flops
        elif _in_metrics(c.name):
            other["metrics"] += c.flops
        else:
            other["rest"] += c.flops
    return Tally(layers, other, unknown, unowned_unknown)


def _in_scope(op, scope: str) -> bool:
    """Is the op's first scope below the step's wrappers `scope` (or `scope_N`, re-entered)?"""
    import re

    from tftrace.analysis.classify import scopes_of
    first = next(iter(scopes_of(op)), "")
    return first == scope or re.fullmatch(re.escape(scope) + r"(_\d+)+", first) is not None


def _in_metrics(name: str) -> bool:
    from tftrace.analysis.classify import METRIC_SCOPES, bare
    return any(bare(s).lower() in METRIC_SCOPES for s in name.split("/")[:-1])
