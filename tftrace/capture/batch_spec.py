"""The shapes and dtypes of the batches a Keras call feeds its step, read from its data without taking a batch."""

from __future__ import annotations

import sys
from typing import NamedTuple


class Unknown(Exception):
    """The batch's shapes cannot be known here; the message says why, in one line."""


class Leaf(NamedTuple):
    """One tensor of a batch: its shape (None where a dimension is not fixed) and dtype name."""

    shape: tuple
    dtype: str


class BatchSpec(NamedTuple):
    """A batch as the step function takes it: `structure` nests Leafs in the data's tuples, lists and
    dicts (None where the data has none); `how` says where it was read."""

    structure: object
    batch_size: int
    how: str

    def leaves(self) -> list[Leaf]:
        return flatten(self.structure)

    def shapes(self) -> list[list[int]]:
        return [list(leaf.shape) for leaf in self.leaves()]


def nest_map(fn, structure):
    """`fn` on each leaf of tuples, lists and dicts (None stays None)."""
    if structure is None:
        return None
    if isinstance(structure, Leaf):
        return fn(structure)
    if isinstance(structure, dict):
        return {k: nest_map(fn, v) for k, v in structure.items()}
    if isinstance(structure, (tuple, list)):
        mapped = [nest_map(fn, v) for v in structure]
        return type(structure)(mapped) if type(structure) in (tuple, list) else tuple(mapped)
    return fn(structure)


def flatten(structure) -> list:
    out: list = []
    nest_map(out.append, structure)
    return out


def of_call(model, call: str) -> BatchSpec:
    """The batch of the running `model.fit` / `evaluate` / `predict` (`call`), found in its frame:
    Keras 3's epoch iterator or tf.keras' data handler. Raises Unknown."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == call and frame.f_locals.get("self") is model:
            local = frame.f_locals
            if local.get("epoch_iterator") is not None:
                return _keras3(local["epoch_iterator"], local)
            if local.get("data_handler") is not None:
                return _tf_keras(local["data_handler"])
            break
        frame = frame.f_back
    raise Unknown(f"the data of this {call} call was not found")


def _keras3(epoch_iterator, local: dict) -> BatchSpec:
    adapter = epoch_iterator.data_adapter
    kind = type(adapter).__name__
    size = _int(getattr(adapter, "batch_size", None))
    distributed = getattr(epoch_iterator, "_distributed_dataset", None)  # TensorFlow's epoch iterator
    if distributed is not None and _all_specs(getattr(distributed, "element_spec", None)):
        structure, how = _from_specs(distributed.element_spec), f"the tf.data element spec of Keras' {kind}"
    elif kind == "ArrayDataAdapter" and size:
        structure, how = _from_arrays(adapter._inputs, size), "the arrays given to the call"
    elif kind == "TFDatasetAdapter":
        structure, how = _from_specs(adapter._dataset.element_spec), "the tf.data dataset's element spec"
    elif getattr(adapter, "_output_signature", None) is not None:
        structure, how = _from_specs(adapter._output_signature), f"the element spec Keras read from its {kind}"
    elif local.get("data") is not None and _arrays(local["data"]):
        # Keras on torch keeps the last batch it fed the step ([batch] a call); its batch dimension
        # may be a short last batch's: the adapter's batch size, where known, replaces it.
        structure, how = _from_arrays(_one(local["data"]), None), "the last batch the call fed its step"
    else:
        raise Unknown(f"the shapes of the batches of Keras' {kind} are not known without reading one")
    dataset = getattr(adapter, "_dataset", None)
    size = size or _static_batch(structure) or _dataset_batch(dataset) \
        or _int(getattr(getattr(adapter, "py_dataset", None), "batch_size", None)) or _first_dim(structure)
    return fixed(structure, size, how)


def leaves_of(arrays):
    """A structure of arrays or tensors (NumPy, TensorFlow, JAX, torch) as Leafs."""
    return _from_arrays(arrays, None)


def _tf_keras(handler) -> BatchSpec:
    spec = getattr(handler._dataset, "element_spec", None)
    if not _all_specs(spec):
        raise Unknown("the element spec of this tf.keras call's data is not a plain tensor spec")
    structure = _from_specs(spec)
    adapter = getattr(handler, "_adapter", None)
    size = None
    try:
        size = _int(adapter.batch_size()) if adapter is not None else None
    except Exception:  # adapters that cannot tell
        pass
    size = size or _static_batch(structure) or _dataset_batch(getattr(adapter, "_dataset", None))
    return fixed(structure, size, "the tf.data element spec of tf.keras' data handler")


def fixed(structure, size: int | None, how: str) -> BatchSpec:
    """The structure with its batch dimension set to `size` (None: the one its leaves share); every
    dimension must then be known. Raises Unknown."""
    size = size or _static_batch(structure)
    if not size:
        raise Unknown(f"the batch size is not fixed in {how}")

    def fix(leaf: Leaf) -> Leaf:
        shape = tuple(leaf.shape)
        if shape and shape[0] is None:
            shape = (size, *shape[1:])
        elif shape and shape[0] != size and how.startswith("the last batch"):
            shape = (size, *shape[1:])
        if any(d is None for d in shape):
            raise Unknown(f"a dimension of the batch is not fixed ({leaf.shape}, from {how})")
        return Leaf(shape, leaf.dtype)

    return BatchSpec(nest_map(fix, structure), int(size), how)


def _all_specs(spec) -> bool:
    if spec is None:
        return False
    leaves: list = []
    _walk(spec, leaves.append)
    return bool(leaves) and all(type(s).__name__ == "TensorSpec" for s in leaves)


def _walk(structure, fn) -> None:
    if isinstance(structure, dict):
        for v in structure.values():
            _walk(v, fn)
    elif isinstance(structure, (tuple, list)):
        for v in structure:
            _walk(v, fn)
    elif structure is not None:
        fn(structure)


def _from_specs(spec):
    """TensorFlow TensorSpecs as Leafs (ragged and sparse ones cannot be counted)."""
    def leaf(s):
        if type(s).__name__ != "TensorSpec":
            raise Unknown(f"the batch holds a {type(s).__name__}")
        return Leaf(tuple(s.shape.as_list()) if s.shape.rank is not None else (None,), s.dtype.name)
    return _map_raw(leaf, spec)


def _from_arrays(arrays, size: int | None):
    def leaf(a):
        shape = tuple(None if d is None else int(d) for d in a.shape)
        return Leaf(((size,) + shape[1:]) if size and shape else shape, dtype_name(a.dtype))
    return _map_raw(leaf, arrays)


def _map_raw(fn, structure):
    if structure is None:
        return None
    if isinstance(structure, dict):
        return {k: _map_raw(fn, v) for k, v in structure.items()}
    if isinstance(structure, (tuple, list)):
        return tuple(_map_raw(fn, v) for v in structure) if isinstance(structure, tuple) \
            else [_map_raw(fn, v) for v in structure]
    return fn(structure)


def _arrays(structure) -> bool:
    leaves: list = []
    _walk(structure, leaves.append)
    return bool(leaves) and all(hasattr(a, "shape") and hasattr(a, "dtype") for a in leaves)


def _one(data):
    """A torch step's `[batch]` (one batch a call) as the batch."""
    return data[0] if isinstance(data, list) and len(data) == 1 else data


def dtype_name(dtype) -> str:
    """`float32` for NumPy, JAX, TensorFlow and torch dtypes alike."""
    name = getattr(dtype, "name", None)
    if isinstance(name, str) and not str(dtype).startswith("torch."):
        return name
    return str(dtype).replace("torch.", "")


def _static_batch(structure) -> int | None:
    leaves = flatten(structure)
    dims = {leaf.shape[0] for leaf in leaves if leaf.shape}
    return _int(dims.pop()) if len(dims) == 1 else None


def _first_dim(structure) -> int | None:
    leaves = flatten(structure)
    return _int(leaves[0].shape[0]) if leaves and leaves[0].shape else None


def _dataset_batch(dataset) -> int | None:
    """The batch size of the last `batch` / `padded_batch` in a tf.data pipeline, where fixed; a
    pipeline that unbatches or rebatches after it has none."""
    seen = 0
    while dataset is not None and seen < 64:
        name = type(dataset).__name__
        if "Unbatch" in name or "Rebatch" in name:
            return None
        size = getattr(dataset, "_batch_size", None)
        if size is not None:
            try:
                import tensorflow as tf
                return _int(tf.get_static_value(size))
            except Exception:
                return None
        dataset, seen = getattr(dataset, "_input_dataset", None), seen + 1
    return None


def _int(value) -> int | None:
    try:
        return int(value) if value is not None and int(value) > 0 else None
    except (TypeError, ValueError):
        return None
