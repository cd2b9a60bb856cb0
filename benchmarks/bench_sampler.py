"""The Python sampler's cost on a training step: fit with and without it, in one process.

    python benchmarks/bench_sampler.py

A small Keras model trains from a `keras.utils.PyDataset` (so the input pipeline's Python runs
on tf.data's threads, the case the sampler exists for) for short epochs; epochs with the sampler
on (at each interval) and off alternate, as this machine is shared and noisy, and the medians
are compared. The sampler's own busy time is reported beside it.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INTERVALS_S = (0.005, 0.002, 0.001)


def main(rounds: int = 9, batches: int = 40) -> None:
    import keras
    import numpy as np

    from tftrace.capture.sampler import DEFAULT_INTERVAL_S, PythonSampler

    class Batches(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.x, self.y = rng.random((batches * 16, 32, 32, 3)).astype("float32"), rng.integers(0, 10, batches * 16)

        def __len__(self):
            return batches

        def __getitem__(self, i):
            x = self.x[i * 16:(i + 1) * 16]
            return np.clip(x + 0.01 * np.sin(x), 0, 1), self.y[i * 16:(i + 1) * 16]

    model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(16, 3, activation="relu"),
                              keras.layers.Flatten(), keras.layers.Dense(10)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = Batches()
    model.fit(data, epochs=1, verbose=0)  # warm up: tracing
    times: dict = {None: [], **{i: [] for i in INTERVALS_S}}
    busy: dict = {i: [] for i in INTERVALS_S}
    for _ in range(rounds):
        for interval in times:
            sampler = PythonSampler(interval) if interval else None
            if sampler:
                sampler.start()
            t0 = time.perf_counter()
            model.fit(data, epochs=1, verbose=0)
            elapsed = time.perf_counter() - t0
            if sampler:
                sampler.stop()
                busy[interval].append(sampler.busy_ns / 1e9 / elapsed)
            times[interval].append(elapsed / batches)
    base = statistics.median(times[None])
    lines = [f"plain fit: {base * 1e3:.2f} ms/step (median of {rounds} alternating epochs of {batches} steps)"]
    for interval in INTERVALS_S:
        t = statistics.median(times[interval])
        default = " (default)" if interval == DEFAULT_INTERVAL_S else ""
        lines.append(f"sampler every {interval * 1e3:g} ms{default}: {t * 1e3:.2f} ms/step, "
                     f"{100 * (t - base) / base:+.1f}% step time; the sampler itself busy "
                     f"{100 * statistics.median(busy[interval]):.1f}% of the time")
    print("\n".join(lines))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS-sampler.md")
    with open(out, "w") as f:
        f.write("# Python sampler cost on a training step\n\nProduced by `python benchmarks/bench_sampler.py` "
                f"(Keras {keras.__version__}, {os.cpu_count()} cores; other work on the machine adds noise).\n\n"
                + "\n".join(f"- {line}" for line in lines) + "\n")


if __name__ == "__main__":
    main()
