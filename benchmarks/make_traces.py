"""Make large real traces for the benchmarks: `python benchmarks/make_traces.py [--events N]`.

1. Capture: a long TraceCallback window over `fit` of a real Keras model with many small layers
   (many ops per step), until the trace holds about a million events (`--steps`).
2. Capture as users do (`keras_tb`): Keras' own `TensorBoard(profile_batch=(2, 500))` around `fit`
   of a 12-layer MLP with Dropout, no tftrace marker: another million-event trace.
3. Scale: for 2x-10x sizes, repeat the captured steps later in time on every line (the copies
   keep each line's nesting and order, and XProf still reads them), so time can be measured up
   to ~10M events without hours of capture.

Output: benchmarks/data/<name>/plugins/profile/run/host.xplane.pb (git-ignored).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, os.path.dirname(HERE))


def trace_path(name: str) -> str:
    return os.path.join(DATA, name, "plugins", "profile", "run", "host.xplane.pb")


def capture(name: str, steps: int) -> str:
    """Train a deep narrow MLP for `steps` steps inside one TraceCallback window."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np

    import tftrace
    layers = [keras.Input((64,))]
    for i in range(24):
        layers += [keras.layers.Dense(64, activation="relu", name=f"dense{i}"),
                   keras.layers.LayerNormalization(name=f"norm{i}")]
    layers.append(keras.layers.Dense(10, name="logits"))
    model = keras.Sequential(layers, name="deep")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random((steps * 16, 64)).astype("float32"), rng.integers(0, 10, steps * 16)
    logdir = os.path.join(DATA, name)
    shutil.rmtree(logdir, ignore_errors=True)
    cb = tftrace.TraceCallback(logdir, fit_steps=(2, steps - 1), evaluate_steps=None, predict_steps=None)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    _settle(cb.runs[0], logdir)
    return trace_path(name)


def capture_keras_tensorboard(name: str, steps: int) -> str:
    """`fit` of a 12-layer MLP with Dropout, profiled by Keras' TensorBoard callback only."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import glob

    import keras
    import numpy as np
    layers = [keras.Input((64,))]
    for i in range(12):
        layers += [keras.layers.Dense(64, activation="relu", name=f"dense{i}"), keras.layers.Dropout(0.1, name=f"drop{i}")]
    layers.append(keras.layers.Dense(10, name="logits"))
    model = keras.Sequential(layers, name="mlp")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.random(((steps + 2) * 16, 64)).astype("float32"), rng.integers(0, 10, (steps + 2) * 16)
    logdir = os.path.join(DATA, name)
    shutil.rmtree(logdir, ignore_errors=True)
    cb = keras.callbacks.TensorBoard(logdir, profile_batch=(2, steps))
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    found = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    keep = os.path.join(DATA, f"{name}.xplane.pb")
    os.rename(found[0], keep)
    shutil.rmtree(logdir)  # the callback's summaries; only the trace is benchmarked
    out = trace_path(name)
    os.makedirs(os.path.dirname(out))
    os.rename(keep, out)
    return out


def _settle(run: str, logdir: str) -> None:
    dst = os.path.join(logdir, "plugins", "profile", "run")
    os.rename(run, dst)
    for f in os.listdir(dst):
        if f.endswith(".xplane.pb"):
            os.rename(os.path.join(dst, f), os.path.join(dst, "host.xplane.pb"))


def scale(src: str, name: str, factor: int) -> str:
    """The trace with every line's events repeated `factor` times, each copy after the last."""
    from tftrace.read.schema import XSpace
    space = XSpace()
    with open(src, "rb") as f:
        space.ParseFromString(f.read())
    for plane in space.planes:
        span = max((ev.offset_ps + ev.duration_ps for line in plane.lines for ev in line.events), default=0)
        period = span + 1_000_000  # 1 us apart: copies never overlap their originals
        for line in plane.lines:
            originals = list(line.events)
            for k in range(1, factor):
                for ev in originals:
                    copy = line.events.add()
                    copy.CopyFrom(ev)
                    copy.offset_ps = ev.offset_ps + k * period
    out = trace_path(name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(space.SerializeToString())
    return out


def count_events(path: str) -> int:
    """Events in the file, every one the writer put there (the reader leaves some out as it
    reads: the thread pool's bookkeeping instants)."""
    from tftrace.read import wire
    from tftrace.read.lines import decode_line
    with open(path, "rb") as f:
        wf = wire.WireFile(f, os.path.getsize(path))
        planes = [fd for fd in wire.fields(wf, 0, wf.size) if fd.number == 1]
        return sum(len(decode_line(wire.value(wf, p))) for fd in planes for p in wire.fields(wf, fd.start, fd.end)
                   if p.number == 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=140, help="training steps to capture (~7k events each)")
    parser.add_argument("--keras-steps", type=int, default=500,
                        help="last step profiled by Keras' TensorBoard callback (0: skip that capture)")
    parser.add_argument("--scales", default="2,5,10", help="scale factors of the captured trace")
    args = parser.parse_args()
    base = capture("captured", args.steps)
    print(f"captured: {base} ({os.path.getsize(base) / 1e6:.1f} MB, {count_events(base):,} events)")
    if args.keras_steps:
        path = capture_keras_tensorboard("keras_tb", args.keras_steps)
        print(f"keras_tb: {path} ({os.path.getsize(path) / 1e6:.1f} MB, {count_events(path):,} events)")
    for factor in [int(s) for s in args.scales.split(",") if s]:
        path = scale(base, f"x{factor}", factor)
        print(f"x{factor}: {path} ({os.path.getsize(path) / 1e6:.1f} MB, {count_events(path):,} events)")


if __name__ == "__main__":
    main()
