"""The model whose step cost the capture tests count (tests/test_capture_cost.py, cost_capture_run.py), and
its FLOPs worked out by hand: a multiply-add is two FLOPs, a bias add one per output."""

from __future__ import annotations

import numpy as np

BATCH = 16
# A 3x3 window over 12 positions with 'same' padding: 3 taps at the 10 inner positions, 2 at each edge.
TAPS, TAPS_IN_BOUNDS = 12 * 3, 10 * 3 + 2 * 2
# (layer, multiply-adds per example, outputs per example, first layer: its input needs no gradient,
# a convolution: its taps on the padding multiply zeros)
LAYERS = (("conv_a", 12 * 12 * 8 * 3 * 3 * 3, 12 * 12 * 8, True, True),
          ("conv_b", 12 * 12 * 16 * 3 * 3 * 8, 12 * 12 * 16, False, True),
          ("dense_a", 12 * 12 * 16 * 32, 32, False, False),
          ("dense_b", 32 * 10, 10, False, False))


def cnn(keras, seed: int = 0):
    """Conv2D (padding 'same') -> Conv2D -> Flatten -> Dropout -> Dense -> BatchNormalization -> Dense, Adam,
    sparse cross-entropy."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((12, 12, 3)),
                              keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv_a"),
                              keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv_b"),
                              keras.layers.Flatten(name="flat"), keras.layers.Dropout(0.1, name="drop"),
                              keras.layers.Dense(32, activation="relu", name="dense_a"),
                              keras.layers.BatchNormalization(name="norm"),  # a training call moves its statistics
                              keras.layers.Dense(10, name="dense_b")], name="cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def data(n: int = 160):
    rng = np.random.default_rng(0)
    return rng.random((n, 12, 12, 3)).astype("float32"), rng.integers(0, 10, n)


def analytic(bias: bool, padding_aware: bool = False) -> dict:
    """{layer: (forward, backward)} FLOPs of one training step of BATCH examples: the backward pass
    takes the weights' gradient (a forward's multiply-adds) and, past the first layer, the input's
    (another); `bias`: count the bias adds and their gradient's sums (TensorFlow does, torch does not);
    `padding_aware`: leave out a convolution's taps on its padding (XLA does, TensorFlow and torch not)."""
    out = {}
    for name, macs, outputs, first, conv in LAYERS:
        if conv and padding_aware:
            macs = macs * TAPS_IN_BOUNDS ** 2 // TAPS ** 2
        extra = BATCH * outputs if bias else 0
        forward = 2 * BATCH * macs + extra
        backward = 2 * BATCH * macs * (1 if first else 2) + extra
        out[name] = (forward, backward)
    return out
