"""What TensorFlow's profiler costs the work it records, by kind of work, against the events it records.

    python benchmarks/bench_tf_profiler.py        # every case; the table into RESULTS.md

Each case runs blocks of calls (or of Keras `fit` steps), alternately with the profiler on and off
in one process; a block's figure is its median call (for `fit`, the median gap from one batch's
begin hook to the next), and the profiler's cost is the median of the on-minus-off differences of
the pairs, beside their quartiles. The events are those one traced block recorded, per call, as
tftrace reads them. The question is whether the trace can price its own cost, as XLA:CPU's and
PyTorch's op events do at ~0.25 us each (analysis/profiler_cost.py): it can only where the cost per
event is the same from case to case.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PAIRS = 8
CALLS = 400  # a block's calls
FIT_STEPS = 300  # a block's fit steps (one epoch)
_BEGIN, _END = "<!-- bench_tf_profiler begin -->", "<!-- bench_tf_profiler end -->"


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2


def _quartiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 4], xs[(3 * len(xs)) // 4]


def _events(logdir: str, units: int) -> tuple[float, float]:
    """Events a unit, and tf.function calls a unit (the Python-side events that carry the call's stat)."""
    from tftrace.read.loader import load
    trace = load(glob.glob(os.path.join(logdir, "plugins", "profile", "*"))[0])
    calls = int((trace.stats["fn_call"] >= 0).sum())
    return len(trace.events) / units, calls / units


def _paired(run_block, units: int) -> dict:
    """run_block(profiled) -> the block's median unit in us; the pairs alternate which goes first."""
    import tensorflow as tf
    run_block(False)
    on, off, seen = [], [], None
    for p in range(PAIRS):
        for profiled in ((True, False) if p % 2 else (False, True)):
            if not profiled:
                off.append(run_block(False))
                continue
            logdir = tempfile.mkdtemp(prefix="tfprof")
            tf.profiler.experimental.start(logdir)
            try:
                on.append(run_block(True))
            finally:
                tf.profiler.experimental.stop()
            if seen is None:
                seen = _events(logdir, units)
    diffs = [a - b for a, b in zip(on, off)]
    events, calls = seen
    return dict(untraced_us=_median(off), cost_us=_median(diffs), quartiles=_quartiles(diffs), events=events,
                calls=calls, us_per_event=_median(diffs) / events if events else 0.0)


def _calls_case(fn) -> dict:
    def block(_profiled: bool) -> float:
        times = []
        for _ in range(CALLS):
            t = time.perf_counter_ns()
            fn()
            times.append(time.perf_counter_ns() - t)
        return _median(times) / 1e3
    for _ in range(50):
        fn()
    return _paired(block, CALLS)


def _fit_case(depth: int) -> dict:
    import keras
    import numpy as np
    keras.utils.set_random_seed(0)
    layers = [keras.Input((32,))] + [keras.layers.Dense(64, activation="relu") for _ in range(depth)]
    model = keras.Sequential(layers + [keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random((FIT_STEPS * 32, 32), dtype=np.float32), rng.integers(0, 10, FIT_STEPS * 32)

    class Begins(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.at = []

        def on_train_batch_begin(self, batch, logs=None):
            self.at.append(time.perf_counter_ns())

    begins = Begins()

    def block(_profiled: bool) -> float:
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[begins])
        gaps = [b - a for a, b in zip(begins.at[10:], begins.at[11:])]
        return _median(gaps) / 1e3
    return _paired(block, FIT_STEPS)


def cases() -> dict:
    import numpy as np
    import tensorflow as tf
    x = tf.constant(np.random.default_rng(0).random((8, 8), dtype=np.float32))
    fns = [tf.function(lambda v: tf.matmul(v, v)) for _ in range(4)]
    plain = iter(tf.data.Dataset.range(10 ** 9))
    mapped = tf.data.Dataset.range(10 ** 9)
    for _ in range(4):
        mapped = mapped.map(lambda v: v + 1)
    mapped = iter(mapped)
    batches = iter(tf.data.Dataset.from_tensor_slices(np.zeros((4096, 8), np.float32)).batch(8).repeat()
                   .prefetch(tf.data.AUTOTUNE))

    @tf.function
    def reads(it):  # a step function's shape: its batch from the iterator, inside the call
        v = next(it)
        return tf.matmul(v, v, transpose_b=True)
    return {
        "a tf.function call (one 8x8 matmul)": lambda: _calls_case(lambda: fns[0](x)),
        "four tf.function calls": lambda: _calls_case(lambda: [f(x) for f in fns]),
        "ten eager ops (tf.add)": lambda: _calls_case(lambda: [tf.add(x, x) for _ in range(10)]),
        "next() on Dataset.range": lambda: _calls_case(lambda: next(plain)),
        "next() on Dataset.range with four maps": lambda: _calls_case(lambda: next(mapped)),
        "a tf.function call reading a prefetched dataset (one matmul)": lambda: _calls_case(lambda: reads(batches)),
        "Keras fit step, MLP of 1 hidden layer": lambda: _fit_case(1),
        "Keras fit step, MLP of 8 hidden layers": lambda: _fit_case(8),
        "Keras fit step, MLP of 32 hidden layers": lambda: _fit_case(32),
    }


def table(rows: dict) -> str:
    out = ["| work (a unit) | untraced us | profiler's cost us (quartiles) | events a unit | tf.function calls a unit "
           "| us an event |", "|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lo, hi = r["quartiles"]
        out.append(f"| {name} | {r['untraced_us']:.1f} | {r['cost_us']:+.1f} ({lo:+.1f} to {hi:+.1f}) | "
                   f"{r['events']:.1f} | {r['calls']:.0f} | {r['us_per_event']:.2f} |")
    return "\n".join(out)


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf
    from results import put_block
    rows = {}
    for name, case in cases().items():
        rows[name] = case()
        print(json.dumps({name: rows[name]}), flush=True)
    text = (f"Produced by `python benchmarks/bench_tf_profiler.py` (tensorflow {tf.__version__}, CPU, this 2-core "
            f"shared machine; {PAIRS} alternating pairs of blocks, each of {CALLS} calls or one {FIT_STEPS}-step "
            "epoch).\n\n" + table(rows))
    put_block(os.path.join(ROOT, "benchmarks", "RESULTS.md"), f"{_BEGIN}\n{text}\n{_END}", _BEGIN, _END,
              heading="## What TensorFlow's profiler costs the work it records")
    print(text)


if __name__ == "__main__":
    main()
