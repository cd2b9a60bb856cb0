"""The tiny Keras model and data both capture runners train (tests/jax_capture_run.py,
torch_capture_run.py): the backend is theirs, the model the same."""

from __future__ import annotations

import numpy as np


def tiny_model(keras, seed: int = 0):
    """A compiled Dense-Dropout-Dense model, its weights from `seed`."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu", name="hidden"),
                              keras.layers.Dropout(0.1, name="drop"), keras.layers.Dense(1, name="out")],
                             name="tiny")
    model.compile("adam", "mse")
    return model


def tiny_data(n: int = 96):
    rng = np.random.default_rng(0)
    return rng.random((n, 8)).astype("float32"), rng.random((n, 1)).astype("float32")
