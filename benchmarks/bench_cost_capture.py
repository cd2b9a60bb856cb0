"""What recording a step's cost (sidecar `cost` and `host_peaks`) adds to a captured fit, per Keras backend.

    python benchmarks/bench_cost_capture.py            # TensorFlow, JAX and torch, each in its own process
    python benchmarks/bench_cost_capture.py --backend tensorflow

For a small CNN and MobileNetV2 (64x64 inputs, no weights; on TensorFlow also fed by a tf.data
pipeline whose batch dimension the graph leaves open), a fit of 12 batches with TraceCallback (a
default fit window) is timed, and inside it the counting TraceCallback runs once the fit is over
(`cost.count`) and the host's peaks (`cost.host_peaks`: measured on the first call of a process,
cached after). Set against the fit's wall time and the capture's own profiler start and stop (the
sidecar's `capture_cost`). On TensorFlow the trace of the step the counter avoids (it reads the
graph Keras traced) is timed too, as what the count would cost without that. Results are appended
to RESULTS-cost.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _models(keras):
    def small():
        return keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(16, 3, activation="relu"),
                                 keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(),
                                 keras.layers.Dense(10)])

    def mobilenet():
        return keras.applications.MobileNetV2(input_shape=(64, 64, 3), weights=None, classes=10)
    return {"small CNN (32x32)": (small, 32, False), "MobileNetV2 (64x64)": (mobilenet, 64, False),
            "MobileNetV2, tf.data .batch(16)": (mobilenet, 64, True)}


def run(backend: str) -> list[dict]:
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import keras
    import numpy as np

    import tftrace
    from tftrace.capture import step_cost as cost
    timed: dict[str, float] = {}

    def timing(name, fn):
        def wrapped(*args, **kwargs):
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timed[name] = timed.get(name, 0.0) + time.perf_counter() - began
        return wrapped

    cost.count, cost.host_peaks = timing("count", cost.count), timing("peaks", cost.host_peaks)
    rows = []
    for name, (make, side, pipeline) in _models(keras).items():
        if pipeline and backend != "tensorflow":
            continue
        keras.utils.set_random_seed(0)
        model = make()
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        rng = np.random.default_rng(0)
        x, y = rng.random((12 * 16, side, side, 3), dtype=np.float32), rng.integers(0, 10, 12 * 16)
        kwargs = {"x": x, "y": y, "batch_size": 16}
        if pipeline:  # the batch dimension left open in Keras' graph: the counter fixes it in a copy
            import tensorflow as tf
            kwargs = {"x": tf.data.Dataset.from_tensor_slices((x, y)).batch(16), "shuffle": False}
        timed.clear()
        with tempfile.TemporaryDirectory() as log_dir:
            cb = tftrace.TraceCallback(log_dir, evaluate_steps=None, predict_steps=None)
            began = time.perf_counter()
            model.fit(epochs=1, verbose=0, callbacks=[cb], **kwargs)
            fit_s = time.perf_counter() - began
            with open(os.path.join(cb.runs[0], "tftrace_run.json")) as f:
                side_car = json.load(f)
        capture = side_car.get("capture_cost", {})
        row = {"backend": backend, "model": name, "fit_s": fit_s, "count_s": timed.get("count", 0.0),
               "peaks_s": timed.get("peaks", 0.0),
               "profiler_s": (capture.get("start_ms", 0) + capture.get("stop_ms", 0)) / 1e3,
               "source": (side_car.get("cost") or {}).get("source", side_car.get("cost_missing", ""))}
        if backend == "tensorflow":
            from tftrace.capture import batch_spec, cost_tf
            structure = (batch_spec.Leaf((16, side, side, 3), "float32"), batch_spec.Leaf((16,), "int64"))
            began = time.perf_counter()
            cost_tf.step_graph(model, "train", structure)
            row["retrace_s"] = time.perf_counter() - began
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("tensorflow", "jax", "torch"))
    args = parser.parse_args()
    if args.backend:
        print(json.dumps(run(args.backend)))
        return
    rows = []
    for backend in ("tensorflow", "jax", "torch"):
        proc = subprocess.run([sys.executable, __file__, "--backend", backend], capture_output=True, text=True,
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        if proc.returncode != 0:
            print(f"{backend}: failed\n{proc.stderr[-2000:]}")
            continue
        rows += json.loads(proc.stdout.strip().splitlines()[-1])
    lines = ["| backend | model | fit (s) | profiler start+stop (s) | count (s) | count / fit "
             "| peaks (s, once a process) | a fresh trace of the step (s) | counted by |", "|---" * 9 + "|"]
    for r in rows:
        retrace = f"{r['retrace_s']:.2f}" if "retrace_s" in r else "-"
        lines.append(f"| {r['backend']} | {r['model']} | {r['fit_s']:.2f} | {r['profiler_s']:.2f} "
                     f"| {r['count_s']:.3f} | {100 * r['count_s'] / r['fit_s']:.1f}% | {r['peaks_s']:.3f} | {retrace} "
                     f"| {r['source'][:90]} |")
    table = "\n".join(lines)
    print(table)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS-cost.md")
    with open(out, "w") as f:
        f.write("# What recording each step's cost adds to a captured fit\n\nProduced by "
                f"`python benchmarks/bench_cost_capture.py` ({os.cpu_count()} cores, shared; one run, not a median: "
                "a fit of 12 batches of 16 with a default TraceCallback window).\n\n" + table + "\n")


if __name__ == "__main__":
    main()
