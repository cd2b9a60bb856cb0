"""Regenerate the zoo of planted causes: `python sample_traces/capture_zoo.py [--only NAME ...]`.

Each program is a small Keras or TensorFlow job with one planted reason to be slow, and a fixed
twin that differs only by that reason's fix. For each, this script:

1. times the slow and the fixed program without the profiler (alternating, median ms per step),
   so `ratio = fixed / slow` is the gain the fix really brings;
2. captures the slow program once, the way `capture` says (tftrace's TraceCallback or trace(), or
   the stock ways: Keras' `TensorBoard(profile_batch=...)`, plain `tf.profiler.experimental
   .start/stop`), into `zoo/<name>/plugins/profile/run/`;
3. writes `zoo/ground_truth.json`: per program the timings, the ratio, the bound the run is in
   truth bound by, and the cause (a bottleneck `kind`) diagnosis must name.

The tests (tests/test_zoo.py) then check that `tftrace analyze` names that cause among its top
three bottlenecks with a projected step time within 2x of the timed ratio.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "zoo")
rng = np.random.default_rng(0)
ROUNDS = 5


def _tf():
    import tensorflow as tf
    return tf


def _keras():
    import keras
    return keras


def dense_model(width=64, inputs=20, name="mlp"):
    keras = _keras()
    return keras.Sequential([keras.Input((inputs,)), keras.layers.Dense(width, activation="relu", name="hidden"),
                             keras.layers.Dense(1, name="out")], name=name)


def _epoch_clock():
    keras = _keras()

    class Clock(keras.callbacks.Callback):
        """Wall time per step of one epoch, from its begin to its end hook (the data adapter and
        iterator set-up before the epoch stays out)."""

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds = time.perf_counter() - self.t0

    return Clock


def fit_ms_per_step(model, x, y, batch, steps, callbacks=()):
    clock = _epoch_clock()()
    model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[*callbacks, clock],
              shuffle=False)
    return clock.seconds * 1e3 / steps


def plain_capture(logdir, run) -> None:
    """Profile `run()` the plainest way users do: tf.profiler.experimental.start/stop."""
    tf = _tf()
    tf.profiler.experimental.start(logdir)
    try:
        run()
    finally:
        tf.profiler.experimental.stop()


def _runs(logdir):
    out = []
    for folder, dirs, files in os.walk(logdir):
        if any(f.endswith(".xplane.pb") for f in files):
            out.append(folder)
    return sorted(out)


# -- the programs --------------------------------------------------------------------------------
# Each returns {"slow": fn() -> ms per step, "fixed": fn() -> ms per step, "capture": fn(logdir)}.

def prog_retracing():
    """A custom loop passes the learning rate as a Python float that changes every step: each new
    value is a new tf.function signature, so train_step is traced again on every call."""
    tf = _tf()
    model = dense_model(name="retrace_mlp")
    x, y = tf.random.normal((64, 20)), tf.random.normal((64, 1))

    @tf.function
    def train_step(x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        for v, g in zip(model.trainable_variables, tape.gradient(loss, model.trainable_variables)):
            v.assign_sub(lr * g)
        return loss

    state = {"i": 0}

    def loop(n, as_tensor):
        t0 = time.perf_counter()
        for _ in range(n):
            state["i"] += 1
            lr = 0.01 * 0.999 ** state["i"]
            train_step(x, y, tf.constant(lr, tf.float32) if as_tensor else lr)
        return (time.perf_counter() - t0) * 1e3 / n

    loop(2, True)
    return {"slow": lambda: loop(6, False), "fixed": lambda: loop(30, True),
            "capture": lambda logdir: plain_capture(logdir, lambda: loop(8, False)),
            "how": "plain tf.profiler.experimental.start/stop around a custom loop", "bound": "host_overhead",
            "cause": "retracing", "names": ["train_step"], "fix": "pass the learning rate as a tensor (tf.constant)"}


def prog_xla_recompile():
    """A jit-compiled train step fed batches whose padded length changes every step: every new
    shape is traced and compiled by XLA again."""
    tf, keras = _tf(), _keras()
    inputs = keras.Input((None, 32))
    hidden = keras.layers.Dense(256, activation="relu", name="proj")(inputs)
    pooled = keras.layers.GlobalAveragePooling1D(name="pool")(hidden)
    model = keras.Model(inputs, keras.layers.Dense(1, name="out")(pooled), name="seq_model")
    opt = keras.optimizers.SGD(0.01)

    @tf.function(jit_compile=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    state = {"length": 8}
    y = tf.random.normal((64, 1))

    def loop(n, fixed):
        t0 = time.perf_counter()
        for _ in range(n):
            state["length"] += 1
            length = 96 if fixed else state["length"]  # fixed: pad every batch to one length
            train_step(tf.random.normal((64, length, 32)), y)
        return (time.perf_counter() - t0) * 1e3 / n

    def capture(logdir):
        import tftrace
        with tftrace.trace(logdir, label="xla", model=model):
            for i in range(8):
                with tftrace.step("train", i):
                    loop(1, False)

    loop(2, True)
    return {"slow": lambda: loop(6, False), "fixed": lambda: loop(30, True), "capture": capture,
            "how": "tftrace.trace() with tftrace.step() around a custom loop", "bound": "host_overhead",
            "cause": "recompilation", "names": ["train_step"], "fix": "pad every batch to one length"}


def prog_tiny_batch():
    """fit with batch size 1 on a tiny model: every step pays Keras' and TensorFlow's per-call
    dispatch for microseconds of math."""
    x, y = rng.random((4096, 20)).astype("float32"), rng.random((4096, 1)).astype("float32")
    slow, fixed = dense_model(16, name="tiny_mlp"), dense_model(16, name="tiny_mlp_spe")
    slow.compile("sgd", "mse")
    fixed.compile("sgd", "mse", steps_per_execution=64)
    for m in (slow, fixed):
        fit_ms_per_step(m, x, y, 1, 128)

    def capture(logdir):
        import tftrace
        slow.fit(x, y, batch_size=1, epochs=1, steps_per_epoch=64, verbose=0,
                 callbacks=[tftrace.TraceCallback(logdir, fit_steps=(20, 49))])

    return {"slow": lambda: fit_ms_per_step(slow, x, y, 1, 512), "fixed": lambda: fit_ms_per_step(fixed, x, y, 1, 512),
            "capture": capture, "how": "TraceCallback", "bound": "host_overhead", "cause": "small_steps", "names": ["steps_per_execution"],
            "fix": "compile(steps_per_execution=64)"}


def small_cnn(name, image=32):
    keras = _keras()
    return keras.Sequential([keras.Input((image, image, 3)),
                             keras.layers.Conv2D(16, 3, activation="relu", name="conv"),
                             keras.layers.MaxPooling2D(name="pool"), keras.layers.Flatten(name="flatten"),
                             keras.layers.Dense(32, activation="relu", name="fc"),
                             keras.layers.Dense(10, name="logits")], name=name)


def tiny_cnn(name, image=32):
    """A light model, so that its input is what a step waits for."""
    keras = _keras()
    model = keras.Sequential([keras.Input((image, image, 3)),
                              keras.layers.Conv2D(8, 3, strides=2, activation="relu", name="conv"),
                              keras.layers.GlobalAveragePooling2D(name="gap"), keras.layers.Dense(10, name="logits")],
                             name=name)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _images(n, image=32):
    return rng.random((n, image, image, 3)).astype("float32"), rng.integers(0, 10, n)


def prog_run_eagerly():
    """compile(run_eagerly=True), left on from debugging: every op of every step is dispatched
    from Python one at a time."""
    keras = _keras()
    x, y = _images(1024)
    slow, fixed = small_cnn("eager_cnn"), small_cnn("graph_cnn")
    slow.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    fixed.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    for m in (slow, fixed):
        fit_ms_per_step(m, x, y, 16, 4)

    def capture(logdir):
        slow.fit(x, y, batch_size=16, epochs=1, steps_per_epoch=10, verbose=0,
                 callbacks=[keras.callbacks.TensorBoard(logdir, profile_batch=(3, 7))])

    return {"slow": lambda: fit_ms_per_step(slow, x, y, 16, 10), "fixed": lambda: fit_ms_per_step(fixed, x, y, 16, 40),
            "capture": capture, "how": "Keras TensorBoard(profile_batch=(3, 7))", "bound": "host_overhead",
            "cause": "eager", "names": ["run_eagerly"], "fix": "compile(run_eagerly=False)"}


def prog_slow_callback():
    """A user callback spends ~20 ms of Python in on_train_batch_end (say, a metric computed in
    numpy on every batch)."""
    keras = _keras()
    x, y = _images(1024)

    class BatchStats(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            t0 = time.perf_counter()
            acc = 0.0
            while time.perf_counter() - t0 < 0.02:  # Python work, as a per-batch metric would do
                acc += float(np.sum(np.sqrt(np.arange(200.0))))
            self.last = acc

    model = small_cnn("cb_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    fit_ms_per_step(model, x, y, 16, 4)

    def capture(logdir):
        import tftrace
        model.fit(x, y, batch_size=16, epochs=1, steps_per_epoch=14, verbose=0,
                  callbacks=[BatchStats(), tftrace.TraceCallback(logdir, fit_steps=(3, 12))])

    return {"slow": lambda: fit_ms_per_step(model, x, y, 16, 12, [BatchStats()]),
            "fixed": lambda: fit_ms_per_step(model, x, y, 16, 12), "capture": capture,
            "how": "TraceCallback, listed after the user's callback", "bound": "host_overhead",
            "cause": "callback", "names": ["BatchStats"], "fix": "no per-batch callback work"}


def prog_checkpoint():
    """ModelCheckpoint(save_freq=3): every third step writes the whole model to disk."""
    keras = _keras()
    x, y = _images(1024)
    folder = tempfile.mkdtemp(prefix="tftrace_ckpt_")

    def model_():
        m = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(16, 3, activation="relu", name="conv"),
                              keras.layers.Flatten(name="flatten"), keras.layers.Dense(256, activation="relu", name="fc"),
                              keras.layers.Dense(10, name="logits")], name="ckpt_cnn")
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    model = model_()
    fit_ms_per_step(model, x, y, 16, 4)

    def ckpt():
        return keras.callbacks.ModelCheckpoint(os.path.join(folder, "ckpt.keras"), save_freq=3)

    def capture(logdir):
        import tftrace
        model.fit(x, y, batch_size=16, epochs=1, steps_per_epoch=16, verbose=0,
                  callbacks=[ckpt(), tftrace.TraceCallback(logdir, fit_steps=(2, 13))])

    return {"slow": lambda: fit_ms_per_step(model, x, y, 16, 12, [ckpt()]),
            "fixed": lambda: fit_ms_per_step(model, x, y, 16, 12), "capture": capture,
            "how": "TraceCallback", "bound": "host_overhead", "cause": "stall", "names": ["ModelCheckpoint"],
            "fix": "save once per epoch (save_freq='epoch')", "cleanup": folder}


def prog_step_python():
    """A custom loop converts the loss and every weight's norm to numpy and prints a log line on
    every step: the step waits on Python between calls."""
    tf, keras = _tf(), _keras()
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(512, activation="relu", name="hidden"),
                              keras.layers.Dense(512, activation="relu", name="hidden2"),
                              keras.layers.Dense(1, name="out")], name="loop_mlp")
    opt = keras.optimizers.SGD(0.001)
    x, y = tf.random.normal((32, 256)), tf.random.normal((32, 1))
    sink = io.StringIO()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    def loop(n, python):
        t0 = time.perf_counter()
        for i in range(n):
            loss = train_step(x, y)
            if python:
                value = loss.numpy()
                norms = [np.linalg.norm(w.numpy()) for w in model.trainable_weights]
                spread = np.percentile(np.concatenate([w.numpy().ravel() for w in model.trainable_weights]), [5, 95])
                print(f"step {i} loss {value:.4f} norms {norms} spread {spread}", file=sink)
        sink.seek(0)
        sink.truncate()
        return (time.perf_counter() - t0) * 1e3 / n

    loop(3, True)
    return {"slow": lambda: loop(12, True), "fixed": lambda: loop(12, False),
            "capture": lambda logdir: plain_capture(logdir, lambda: loop(10, True)),
            "how": "plain tf.profiler.experimental.start/stop around a custom loop", "bound": "idle",
            "cause": "step_python", "names": ["train_step"], "fix": "no per-step .numpy(), numpy or print"}


def _write_tfrecords(folder, n=384, image=192):
    tf = _tf()
    paths = [os.path.join(folder, f"part{i}.tfrecord.gz") for i in range(4)]
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    for i, path in enumerate(paths):
        with tf.io.TFRecordWriter(path, options) as w:
            for _ in range(n // len(paths)):
                img = (rng.random((image, image, 3)) * 255).astype("uint8")
                feature = {"image": tf.train.Feature(bytes_list=tf.train.BytesList(
                               value=[tf.io.encode_png(img).numpy()])),
                           "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.integers(10))]))}
                w.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return paths


def prog_tfrecord_nocache():
    """Training reads compressed TFRecords, parses and decodes them every epoch (the map is
    already parallel, the pipeline already prefetches), though the decoded set fits in memory."""
    tf, keras = _tf(), _keras()
    folder = tempfile.mkdtemp(prefix="tftrace_records_")
    paths = _write_tfrecords(folder)
    spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}

    def decode(record):
        ex = tf.io.parse_single_example(record, spec)
        img = tf.cast(tf.io.decode_png(ex["image"], channels=3), tf.float32) / 255.0
        return tf.image.resize(img, (32, 32)), ex["label"]

    def dataset(cache):
        ds = tf.data.TFRecordDataset(paths, compression_type="GZIP")
        ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        if cache:
            ds = ds.cache()
        return ds.repeat().batch(32).prefetch(tf.data.AUTOTUNE)

    slow_ds, fixed_ds = dataset(False), dataset(True)
    model = tiny_cnn("records_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def per_step(ds, steps=12):
        clock = _epoch_clock()()
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[clock])
        return clock.seconds * 1e3 / steps

    per_step(fixed_ds, 24)  # fills the cache (12 batches of 32 cover the 384 records)
    per_step(slow_ds, 4)

    def capture(logdir):
        import tftrace
        model.fit(slow_ds, epochs=1, steps_per_epoch=12, verbose=0,
                  callbacks=[tftrace.TraceCallback(logdir, fit_steps=(2, 9))])

    return {"slow": lambda: per_step(slow_ds), "fixed": lambda: per_step(fixed_ds), "capture": capture,
            "how": "TraceCallback", "bound": "input", "cause": "input", "names": ["TFRecord"],
            "fix": "cache() after the decoding map", "cleanup": folder}


def prog_heavy_layer():
    """A conv model whose middle convolution is far wider than it needs to be: compute-bound."""
    keras = _keras()
    x, y = _images(256, 32)

    def model_(width):
        m = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(16, 3, padding="same", activation="relu",
                                                                            name="stem"),
                              keras.layers.Conv2D(width, 3, padding="same", activation="relu", name="wide_conv"),
                              keras.layers.GlobalAveragePooling2D(name="gap"), keras.layers.Dense(10, name="logits")],
                             name=f"conv_{width}")
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    slow, fixed = model_(192), model_(8)
    for m in (slow, fixed):
        fit_ms_per_step(m, x, y, 16, 3)

    def capture(logdir):
        import tftrace
        slow.fit(x, y, batch_size=16, epochs=1, steps_per_epoch=9, verbose=0,
                 callbacks=[tftrace.TraceCallback(logdir, fit_steps=(2, 7))])

    return {"slow": lambda: fit_ms_per_step(slow, x, y, 16, 6), "fixed": lambda: fit_ms_per_step(fixed, x, y, 16, 6),
            "capture": capture, "how": "TraceCallback", "bound": "compute", "cause": "layer", "names": ["wide_conv"],
            "fix": "Conv2D wide_conv with 8 filters instead of 192"}


def prog_generator():
    """fit from a Python generator that augments images one by one in numpy."""
    keras = _keras()
    images, labels = _images(64)

    def augment(img):
        out = img[:, ::-1] if rng.random() < 0.5 else img
        out = np.pad(out, ((4, 4), (4, 4), (0, 0)), mode="reflect")[2:34, 2:34]
        for _ in range(12):
            out = np.clip(out + rng.normal(0, 0.01, out.shape), 0, 1)
        return out.astype("float32")

    def gen():
        while True:
            idx = rng.integers(0, len(images), 32)
            yield np.stack([augment(images[i]) for i in idx]), labels[idx]

    model = small_cnn("gen_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    xb, yb = next(gen())
    fixed_x = np.repeat(xb, 8, axis=0)
    fixed_y = np.repeat(yb, 8, axis=0)
    it = gen()
    model.fit(it, steps_per_epoch=3, epochs=1, verbose=0)
    fit_ms_per_step(model, fixed_x, fixed_y, 32, 4)

    def slow():
        clock = _epoch_clock()()
        model.fit(it, steps_per_epoch=12, epochs=1, verbose=0, callbacks=[clock])
        return clock.seconds * 1e3 / 12

    def capture(logdir):
        import tftrace
        model.fit(it, steps_per_epoch=10, epochs=1, verbose=0, callbacks=[tftrace.TraceCallback(logdir, fit_steps=(2, 7))])

    return {"slow": slow, "fixed": lambda: fit_ms_per_step(model, fixed_x, fixed_y, 32, 8), "capture": capture,
            "how": "TraceCallback", "bound": "input", "cause": "input", "names": ["Generator"],
            "fix": "batches ready in memory (the augmentation moved off the step's path)"}


def prog_heavy_map():
    """A tf.data map over whole batches runs many matmuls per batch every epoch, the same each
    time (no randomness in it); TensorFlow runs it in parallel on the 2 cores beside the model's
    ops, and it cannot keep up. The fix: `.cache()` right after the map."""
    tf, keras = _tf(), _keras()
    x = rng.random((16 * 32, 32), dtype=np.float32)
    y = rng.integers(0, 4, 16 * 32)
    w = tf.constant(rng.random((384, 384), dtype=np.float32) / 384)

    def heavy(xb, yb):  # real TensorFlow work per batch, the same every epoch
        a = tf.tile(xb[:1], [384, 12])
        for _ in range(24):
            a = tf.tanh(tf.matmul(a, w))
        return xb + tf.reduce_mean(a) * 0, yb

    def dataset(cache):
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).map(heavy)
        return (ds.cache() if cache else ds).repeat()

    slow_ds, fixed_ds = dataset(False), dataset(True)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(512, activation="relu", name="hidden"),
                              keras.layers.Dense(512, activation="relu", name="hidden_2"),
                              keras.layers.Dense(4, name="logits")], name="map_mlp")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def per_step(ds, steps=12):
        clock = _epoch_clock()()
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[clock])
        return clock.seconds * 1e3 / steps

    per_step(fixed_ds, 20)  # fills the cache (16 batches)
    per_step(slow_ds, 4)

    def capture(logdir):
        model.fit(slow_ds, epochs=1, steps_per_epoch=12, verbose=0,
                  callbacks=[keras.callbacks.TensorBoard(logdir, profile_batch=(3, 8))])

    return {"slow": lambda: per_step(slow_ds), "fixed": lambda: per_step(fixed_ds), "capture": capture,
            "how": "Keras TensorBoard(profile_batch=(3, 8))", "bound": "input", "cause": "input",
            "names": ["MatMul", ".cache()"], "fix": "cache() after the map"}


PROGRAMS = {
    "retracing": prog_retracing, "xla_recompile": prog_xla_recompile, "tiny_batch": prog_tiny_batch,
    "run_eagerly": prog_run_eagerly, "slow_callback": prog_slow_callback, "checkpoint": prog_checkpoint,
    "step_python": prog_step_python, "tfrecord_nocache": prog_tfrecord_nocache,
    "heavy_layer": prog_heavy_layer, "generator": prog_generator, "heavy_map": prog_heavy_map,
}


def _timed(program: dict) -> dict:
    slow, fixed = [], []
    for _ in range(ROUNDS):
        slow.append(program["slow"]())
        fixed.append(program["fixed"]())
    s, f = float(np.median(slow)), float(np.median(fixed))
    return {"slow_ms_per_step": round(s, 3), "fixed_ms_per_step": round(f, 3), "ratio": round(f / s, 4)}


def _capture(name: str, program: dict, root: str = ZOO) -> None:
    """Capture the slow program once into `root/<name>/plugins/profile/run/`."""
    scratch = tempfile.mkdtemp(prefix=f"tftrace_zoo_{name}_")
    program["capture"](scratch)
    runs = _runs(scratch)
    if len(runs) != 1:
        sys.exit(f"{name}: expected one captured run in {scratch}, got {runs}")
    dst = os.path.join(root, name, "plugins", "profile", "run")
    shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    os.makedirs(os.path.dirname(dst))
    shutil.move(runs[0], dst)
    for f in os.listdir(dst):  # a stable host name, so regenerated files diff cleanly
        if f.endswith(".xplane.pb") and f != "sample.xplane.pb":
            os.rename(os.path.join(dst, f), os.path.join(dst, "sample.xplane.pb"))
    shutil.rmtree(scratch, ignore_errors=True)


def main(programs: dict | None = None) -> None:
    """Time, capture and record `programs` (by default this file's), into zoo/ and its truth."""
    import argparse
    programs = PROGRAMS if programs is None else programs
    parser = argparse.ArgumentParser(description="Regenerate the zoo of planted causes and its ground truth.")
    parser.add_argument("--only", choices=sorted(programs), action="append", help="only this program (repeatable)")
    wanted = parser.parse_args().only or list(programs)
    tf, keras = _tf(), _keras()
    tf.config.threading.set_inter_op_parallelism_threads(2)
    keras.utils.set_random_seed(0)
    sys.path.insert(0, os.path.dirname(HERE))
    import tftrace
    with tempfile.TemporaryDirectory() as scratch, tftrace.trace(scratch):  # the profiler's one-off start-up
        keras.ops.sum(keras.ops.ones((8, 8)))
    truth_path = os.path.join(ZOO, "ground_truth.json")
    truth = json.load(open(truth_path)) if os.path.exists(truth_path) else {}
    truth.update({"tensorflow": tf.__version__, "keras": keras.__version__, "cores": os.cpu_count()})
    for name in wanted:
        t0 = time.perf_counter()
        program = programs[name]()
        entry = {k: program[k] for k in ("how", "bound", "cause", "names", "fix") if k in program}
        entry["what"] = " ".join(programs[name].__doc__.split())
        entry.update(_timed(program))
        _capture(name, program)
        shutil.rmtree(program.get("cleanup", ""), ignore_errors=True) if program.get("cleanup") else None
        truth[name] = entry
        print(f"{name}: {entry['slow_ms_per_step']} -> {entry['fixed_ms_per_step']} ms "
              f"(x{entry['ratio']}) in {time.perf_counter() - t0:.0f} s", flush=True)
        os.makedirs(ZOO, exist_ok=True)
        with open(truth_path, "w") as f:
            json.dump(truth, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
