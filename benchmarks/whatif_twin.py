"""The twin of bench_whatif's planted metric, timed without tftrace in a process of its own:
`python benchmarks/whatif_twin.py` prints the step with the metric and without it (ms: each
step from one batch's begin to the next in Keras' fit on one batch held in memory, the median of
five rounds' medians, the two models in turns)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import keras  # noqa: E402
import numpy as np  # noqa: E402

from test_whatif import auc_model, data  # noqa: E402


class _Starts(keras.callbacks.Callback):
    """When each batch begins: a step's time is from its begin to the next's, as a long epoch sees
    it (the fit call's own start-up and end left out)."""

    def __init__(self):
        super().__init__()
        self.at = []

    def on_train_batch_begin(self, batch, logs=None):
        self.at.append(time.perf_counter())


def main(steps: int = 24, rounds: int = 5) -> None:
    x, y = data()
    x, y = x[:64], y[:64]
    xs, ys = np.concatenate([x] * steps), np.concatenate([y] * steps)
    models = [auc_model(True), auc_model(False)]
    for m in models:
        m.fit(xs, ys, batch_size=64, epochs=1, steps_per_epoch=2, verbose=0, shuffle=False)
    medians = [[], []]
    for _ in range(rounds):
        for m, out in zip(models, medians):
            starts = _Starts()
            m.fit(xs, ys, batch_size=64, epochs=1, verbose=0, shuffle=False, callbacks=[starts])
            out.append(statistics.median(b - a for a, b in zip(starts.at[1:], starts.at[2:])) * 1e3)
    print(json.dumps({"slow_ms": statistics.median(medians[0]), "fixed_ms": statistics.median(medians[1])}))


if __name__ == "__main__":
    main()
