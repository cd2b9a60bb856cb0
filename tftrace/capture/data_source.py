"""The data a Keras call reads, reopened for an experiment without moving the user's own iterator."""

from __future__ import annotations

import copy
import sys

_SHUFFLES = {"ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3"}  # input 0: the dataset shuffled


class Unavailable(Exception):
    """The call's data cannot be read again; the message says why, in one line."""


def keras_epoch_iterator(model, call: str):
    """The epoch iterator of the running `model.fit` / `evaluate` / `predict` (Keras 3), found in
    the call's frame: Keras hands callbacks the model, never the data."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == call and frame.f_locals.get("self") is model:
            found = frame.f_locals.get("epoch_iterator")
            if found is not None and hasattr(found, "data_adapter"):
                return found
            break
        frame = frame.f_back
    raise Unavailable(f"the data of this {call} call was not found (Keras 3's epoch iterator; "
                      "tf.keras is not supported yet)")


def batches(epoch_iterator, jax: bool = False):
    """A fresh iterator over the call's batches, as its step function receives them; `jax`: on
    Keras' JAX backend (arrays as JAX arrays, and TensorFlow left alone unless the data is tf.data)."""
    adapter = epoch_iterator.data_adapter
    kind = type(adapter).__name__
    if kind == "GeneratorDataAdapter":
        instead = "a keras.utils.PyDataset or arrays" if jax else \
            "a tf.data.Dataset.from_generator over a function, a keras.utils.PyDataset or arrays"
        raise Unavailable("a Python generator cannot be read twice without taking batches from your training; "
                          f"pass {instead} to time the input alone")
    if kind == "PyDatasetAdapter":
        dataset = adapter.py_dataset
        count = _length(dataset)
        return (dataset[i] for i in range(count if count is not None else 10**9))
    if jax:
        return _jax_batches(adapter, kind)
    return iter(unshuffled(adapter.get_tf_dataset()))


def _jax_batches(adapter, kind: str):
    if kind == "ArrayDataAdapter":
        # A copy that does not shuffle: shuffling draws from NumPy's global generator, and the
        # user's next epoch (with a seed set) would see another order than without the experiment.
        fresh = copy.copy(adapter)
        fresh._shuffle = False
        return iter(fresh.get_jax_iterator())
    if kind == "TFDatasetAdapter":  # tf.data given to Keras on JAX: TensorFlow is imported already
        return unshuffled(adapter.get_tf_dataset()).as_numpy_iterator()
    raise Unavailable(f"reading a {kind}'s data again is not supported on the JAX backend yet; "
                      "pass arrays, a keras.utils.PyDataset or a tf.data.Dataset to time the input alone")


def _length(dataset) -> int | None:
    try:
        return int(len(dataset))
    except (TypeError, ValueError, NotImplementedError):
        return None


def unshuffled(dataset):
    """A copy of a tf.data pipeline, its shuffles left out. An iterator of the dataset itself would
    advance the shuffle's seed generator (shared by every iterator of that dataset): with a
    fixed seed, the user's next epochs would see another order than without the experiment.
    Shuffling costs little per batch, and its buffer fills before the first batch, which is
    not timed. A pipeline that cannot be copied is read as it is."""
    import tensorflow as tf
    try:
        from tensorflow.python.data.ops import dataset_ops
        graph = tf.compat.v1.GraphDef()
        graph.ParseFromString(tf.raw_ops.DatasetToGraphV2(
            input_dataset=dataset._variant_tensor, external_state_policy=0, strip_device_assignment=True).numpy())
        bypass = {n.name: n.input[0] for n in graph.node if n.op in _SHUFFLES}
        if not bypass:
            return dataset
        for node in graph.node:
            for i, name in enumerate(node.input):
                while name.split(":")[0] in bypass:  # shuffles in a row
                    name = bypass[name.split(":")[0]]
                node.input[i] = name
        kept = [n for n in graph.node if n.name not in bypass]
        del graph.node[:]
        graph.node.extend(kept)
        variant = tf.raw_ops.DatasetFromGraph(graph_def=graph.SerializeToString())
        return dataset_ops._VariantDataset(variant, dataset.element_spec)
    except Exception:  # private API or an unserialisable stage: read the dataset itself
        return dataset
