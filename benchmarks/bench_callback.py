"""Per-step overhead of TraceCallback outside its windows, against plain `fit`, in one process.

    python benchmarks/bench_callback.py

A small real Keras model trains for many short epochs; the callback's windows are set in an
epoch that never runs, so every step pays only the callback's hooks. Plain and with-callback
epochs alternate (this machine is shared and noisy) and the medians are compared.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(rounds: int = 15, steps: int = 200) -> None:
    import keras
    import numpy as np

    import tftrace
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random((steps * 8, 32)).astype("float32"), rng.integers(0, 10, steps * 8)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # warm up
    with tempfile.TemporaryDirectory() as log_dir:
        cb = tftrace.TraceCallback(log_dir, epochs=(10_000,), evaluate_steps=None, predict_steps=None)
        plain, traced = [], []
        for _ in range(rounds):
            for sink, callbacks in ((plain, []), (traced, [cb])):
                t0 = time.perf_counter()
                model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=callbacks)
                sink.append((time.perf_counter() - t0) / steps)
    p, t = statistics.median(plain), statistics.median(traced)
    line = (f"plain fit: {p * 1e6:.1f} us/step; with TraceCallback (outside windows): {t * 1e6:.1f} us/step; "
            f"overhead {100 * (t - p) / p:+.2f}% (median of {rounds} alternating epochs of {steps} steps)")
    print(line)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS-callback.md")
    with open(out, "w") as f:
        f.write("# TraceCallback overhead outside its windows\n\nProduced by `python benchmarks/bench_callback.py` "
                f"(Keras {keras.__version__}, {os.cpu_count()} cores).\n\n{line}\n")


if __name__ == "__main__":
    main()
