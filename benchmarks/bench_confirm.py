"""What `TraceCallback(confirm=True)` adds to a fit, against the capture window's own time.

    python benchmarks/bench_confirm.py

For an input-bound and a compute-bound program, fits with confirm=False and confirm=True
alternate (this machine is shared and noisy); the extra time of a confirmed fit (median of the
differences) is divided by the window's wall time (its steps, as the trace measured them). The
issue's bound: about 2x the window, once per fit.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def programs():
    import keras
    import numpy as np
    import tensorflow as tf

    def model(width, depth, features):
        layers = [keras.Input((features,))] + [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
        m = keras.Sequential(layers + [keras.layers.Dense(4)])
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    def slow_input():
        def gen():
            rng = np.random.default_rng(0)
            for _ in range(16):
                time.sleep(0.015)
                yield rng.random((32, 32), dtype=np.float32), rng.integers(0, 4, 32)
        spec = (tf.TensorSpec((32, 32), tf.float32), tf.TensorSpec((32,), tf.int64))
        return tf.data.Dataset.from_generator(gen, output_signature=spec).prefetch(2)

    def heavy_input():
        rng = np.random.default_rng(0)
        x, y = rng.random((16 * 64, 512), dtype=np.float32), rng.integers(0, 4, 16 * 64)
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(64).cache().prefetch(tf.data.AUTOTUNE)

    return {"input-bound (slow generator)": (lambda: model(64, 1, 32), slow_input),
            "compute-bound (dense 1024x3)": (lambda: model(1024, 3, 512), heavy_input)}


def fit_s(make_model, make_data, confirm: bool, log_dir: str) -> tuple[float, float, float]:
    """(fit wall seconds, the window's wall seconds as its trace measured them, the experiment's
    own wall seconds: the callback's `_confirm`, timed around it)."""
    import tftrace
    model, data = make_model(), make_data()
    cb = tftrace.TraceCallback(log_dir, evaluate_steps=None, predict_steps=None, confirm=confirm)
    spent = []
    experiment = cb._confirm

    def timed(mode):
        t = time.perf_counter()
        experiment(mode)
        spent.append(time.perf_counter() - t)
    cb._confirm = timed
    t0 = time.perf_counter()
    model.fit(data, epochs=1, verbose=0, callbacks=[cb])
    elapsed = time.perf_counter() - t0
    run = tftrace.analyze(cb.runs[-1]).runs[0]
    window = sum(s.dur_ps + s.idle_ps for s in run.steps.steps) / 1e12
    return elapsed, window, sum(spent)


def main(rounds: int = 5) -> None:
    import warnings
    warnings.filterwarnings("ignore")
    print("| program | fit s, confirm=False | fit s, confirm=True | extra s | window s | extra / window "
          "| experiment s | experiment / window |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (make_model, make_data) in programs().items():
        plain, confirmed, extra, windows, own = [], [], [], [], []
        with tempfile.TemporaryDirectory() as log_dir:
            fit_s(make_model, make_data, False, log_dir)  # warm-up: imports, first traces
            for _ in range(rounds):
                p, w, _ = fit_s(make_model, make_data, False, log_dir)
                c, _, x = fit_s(make_model, make_data, True, log_dir)
                plain.append(p), confirmed.append(c), extra.append(c - p), windows.append(w), own.append(x)
        e, w, x = statistics.median(extra), statistics.median(windows), statistics.median(own)
        print(f"| {name} | {statistics.median(plain):.2f} | {statistics.median(confirmed):.2f} | {e:.2f} | "
              f"{w:.3f} | {e / w:.2f} | {x:.2f} | {x / w:.2f} |")


if __name__ == "__main__":
    main()
