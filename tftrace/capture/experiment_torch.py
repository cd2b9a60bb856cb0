"""confirm's calls on Keras' torch backend: the call's batches read again, the trainer's step on a
held batch, and torch's and NumPy's random state put back afterwards."""

from __future__ import annotations

import copy

from tftrace.capture.data_source import Unavailable
from tftrace.capture.step_functions import STEP_FUNCTIONS

# Adapters whose batches `get_torch_dataloader()` gives again from the start.
_RELOADABLE = ("TorchDataLoaderAdapter", "TFDatasetAdapter", "GrainDatasetAdapter")


def batches(epoch_iterator):
    """A fresh iterator over the call's batches, as its step function receives them."""
    adapter = epoch_iterator.data_adapter
    kind = type(adapter).__name__
    if kind == "GeneratorDataAdapter":
        raise Unavailable("a Python generator cannot be read twice without taking batches from your training; "
                          "pass a keras.utils.PyDataset, a torch DataLoader or arrays to time the input alone")
    if kind == "PyDatasetAdapter":
        dataset = adapter.py_dataset
        try:
            count = int(len(dataset))
        except (TypeError, ValueError, NotImplementedError):
            count = 10 ** 9
        return (dataset[i] for i in range(count))
    if kind == "ArrayDataAdapter":
        # A copy that does not shuffle: shuffling draws from torch's generator, and the user's next
        # epoch (with a seed set) would see another order than without the experiment.
        fresh = copy.copy(adapter)
        fresh._shuffle = False
        return iter(fresh.get_torch_dataloader())
    if kind in _RELOADABLE:
        return iter(adapter.get_torch_dataloader())
    raise Unavailable(f"reading a {kind}'s data again is not supported on the torch backend yet; pass arrays, "
                      "a keras.utils.PyDataset or a torch DataLoader to time the input alone")


def step_call(model, call: str, batch):
    """One step of the call's own step function on `batch`, held in memory (Keras' torch trainer
    takes a list holding the batch, as its epoch iterator hands it one)."""
    name = STEP_FUNCTIONS[call]
    getattr(model, "make_" + name)()  # built by the call already; built here if it was not
    fn = getattr(model, name)
    return lambda: fn([batch])


def flatten(value) -> list:
    import keras
    return [keras.ops.convert_to_numpy(v) for v in keras.tree.flatten(value)]


class RandomState:
    """torch's (CPU and every GPU) and NumPy's global random state now; `restore()` puts them back:
    a DataLoader draws its base seed from torch's generator, a dropout step from it too."""

    def __init__(self):
        import numpy as np
        import torch
        self._numpy = np.random.get_state()
        self._cpu = torch.get_rng_state()
        self._gpus = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None

    def restore(self) -> None:
        import numpy as np
        import torch
        np.random.set_state(self._numpy)
        torch.set_rng_state(self._cpu)
        if self._gpus is not None:
            torch.cuda.set_rng_state_all(self._gpus)
