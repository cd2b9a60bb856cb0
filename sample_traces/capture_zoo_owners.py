"""More planted causes for the zoo, each drawn from a public performance guide and owned by
something the user configured or wrote (a metric, a regularizer, a debugging call, a Python op,
a layer's data format or dtype, the input pipeline's parallelism, op-by-op dispatch):
`python sample_traces/capture_zoo_owners.py [--only NAME ...]`.

`prog_map_fn` (tf.map_fn over a batch) is named by the analysis but left out of the zoo: the
trace shows the loop's cost, not what its vectorised form would cost, so no projection is made.

Each has a fixed twin that differs only by the cause's fix, timed without the profiler
(alternating rounds, capture_zoo.main), then the slow program is captured once, the way its
`how` says, into zoo/<name>/, and zoo/ground_truth.json records the truth.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import capture_zoo as zoo  # noqa: E402

rng = np.random.default_rng(1)


def _mlp(name, width=1024, inputs=1024, outputs=1, **dense):
    keras = zoo._keras()
    return keras.Sequential([keras.Input((inputs,)), keras.layers.Dense(width, activation="relu", name="hidden", **dense),
                             keras.layers.Dense(outputs, name="out")], name=name)


def _tb(logdir):
    return zoo._keras().callbacks.TensorBoard(logdir, profile_batch=(3, 8))


def _trace_callback(logdir):
    import tftrace
    return tftrace.TraceCallback(logdir, fit_steps=(2, 7))


def _pair(slow, fixed, x, y, batch, steps=8):
    """Both models warmed up (traced and compiled) before timing."""
    for m in (slow, fixed):
        zoo.fit_ms_per_step(m, x, y, batch, 3)
    return (lambda: zoo.fit_ms_per_step(slow, x, y, batch, steps), lambda: zoo.fit_ms_per_step(fixed, x, y, batch, steps))


def prog_metric_auc():
    """A binary classifier compiled with an AUC metric of 200,000 thresholds (Keras' metrics docs):
    the metric's confusion counts are updated over every threshold on every training batch. The
    fix: compute AUC in evaluate() (or with the default 200 thresholds), not in fit's metrics."""
    keras = zoo._keras()
    x = rng.random((64 * 16, 64), dtype=np.float32)
    y = rng.integers(0, 2, 64 * 16)

    def model(metrics):
        m = _mlp("auc_mlp", 256, 64)
        m.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True), metrics=metrics)
        return m

    slow = model([keras.metrics.AUC(num_thresholds=200_000, name="auc", from_logits=True)])
    fixed = model([])
    s, f = _pair(slow, fixed, x, y, 64)

    def capture(logdir):
        slow.fit(x, y, batch_size=64, epochs=1, steps_per_epoch=10, verbose=0, callbacks=[_trace_callback(logdir)])

    return {"slow": s, "fixed": f, "capture": capture, "how": "TraceCallback", "bound": "compute", "cause": "metric",
            "names": ["auc"], "fix": "no AUC metric in fit (computed in evaluate)"}


def prog_regularizer_l2():
    """A wide Dense layer with an L2 kernel regularizer trained with SGD (Keras' regularizers
    docs): the penalty squares and sums all 4M weights, and differentiates that, on every step,
    more work than the SGD update itself. Captured with a plain profiler start/stop: no sidecar
    says a regularizer is there. The fix: no penalty (or the optimizer's weight decay)."""
    keras = zoo._keras()
    x = rng.random((16 * 12, 2048), dtype=np.float32)
    y = rng.random((16 * 12, 1), dtype=np.float32)

    def model(reg):
        m = _mlp("reg_mlp", 2048, 2048, kernel_regularizer=reg)
        m.compile(keras.optimizers.SGD(0.001), "mse")
        return m

    slow, fixed = model(keras.regularizers.L2(1e-4)), model(None)
    s, f = _pair(slow, fixed, x, y, 16)

    def capture(logdir):
        zoo.plain_capture(logdir, lambda: slow.fit(x, y, batch_size=16, epochs=1, steps_per_epoch=8, verbose=0))

    return {"slow": s, "fixed": f, "capture": capture, "how": "plain tf.profiler.experimental.start/stop",
            "bound": "compute", "cause": "regularizer", "names": ["regularizer"], "fix": "no kernel regularizer"}


class _Checked:
    """A layer that checks its input for NaNs and prints its mean every call: debugging left in."""

    @staticmethod
    def make():
        tf, keras = zoo._tf(), zoo._keras()

        class Checked(keras.layers.Layer):
            def call(self, x):
                x = tf.debugging.check_numerics(x, "activation")
                tf.print("mean activation", tf.reduce_mean(x), output_stream="file:///dev/null")
                return tf.debugging.check_numerics(x * 1.0, "scaled")

        return Checked


def prog_debug_ops():
    """A custom layer left with tf.debugging.check_numerics and tf.print in its call (TensorFlow's
    profiler guide and XProf's smart suggestions name debugging ops in the step): every step
    scans a large activation twice and formats a string. Captured with Keras'
    TensorBoard(profile_batch). The fix: the same layer without the debugging calls."""
    keras = zoo._keras()
    x, y = zoo._images(512, 64)
    checked = _Checked.make()

    def model(debug):
        layers = [keras.Input((64, 64, 3)), keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="conv")]
        if debug:
            layers.append(checked(name="checked"))
        layers += [keras.layers.GlobalAveragePooling2D(name="gap"), keras.layers.Dense(10, name="logits")]
        m = keras.Sequential(layers, name="debug_cnn")
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    slow, fixed = model(True), model(False)
    s, f = _pair(slow, fixed, x, y, 32)

    def capture(logdir):
        slow.fit(x, y, batch_size=32, epochs=1, steps_per_epoch=10, verbose=0, callbacks=[_tb(logdir)])

    return {"slow": s, "fixed": f, "capture": capture, "how": "Keras TensorBoard(profile_batch=(3, 8))",
            "bound": "compute", "cause": "debug_ops", "names": ["CheckNumerics"], "fix": "no debugging ops in the layer"}


def prog_python_op():
    """A Lambda layer that normalises the input with numpy through tf.numpy_function (the
    tf.function guide: Python in the graph runs under the GIL, outside the graph's threads):
    every step leaves the graph for Python. Captured with a plain start/stop. The fix: the same
    arithmetic in TF ops."""
    tf, keras = zoo._tf(), zoo._keras()
    x = rng.random((32 * 12, 256), dtype=np.float32)
    y = rng.random((32 * 12, 1), dtype=np.float32)

    def numpy_norm(a):  # row by row, as Python code often is
        for _ in range(16):
            a = np.stack([row / (np.sqrt((row * row).sum()) + 1e-6) for row in a])
        return a.astype(np.float32)

    def in_python(a):
        out = tf.numpy_function(numpy_norm, [a], tf.float32)
        return tf.ensure_shape(out, a.shape)

    def in_tf(a):
        for _ in range(16):
            a = a / (tf.sqrt(tf.reduce_sum(a * a, axis=1, keepdims=True)) + 1e-6)
        return a

    def model(fn):
        m = keras.Sequential([keras.Input((256,)), keras.layers.Lambda(fn, name="normalize"),
                              keras.layers.Dense(512, activation="relu", name="hidden"), keras.layers.Dense(1, name="out")],
                             name="pyfunc_mlp")
        m.compile("adam", "mse")
        return m

    slow, fixed = model(in_python), model(in_tf)
    s, f = _pair(slow, fixed, x, y, 32)

    def capture(logdir):
        zoo.plain_capture(logdir, lambda: slow.fit(x, y, batch_size=32, epochs=1, steps_per_epoch=8, verbose=0))

    return {"slow": s, "fixed": f, "capture": capture, "how": "plain tf.profiler.experimental.start/stop",
            "bound": "compute", "cause": "python_op", "names": ["PyFunc"], "fix": "the normalisation in TF ops"}


def prog_tensorboard_batch():
    """Keras' TensorBoard callback told to write every batch, with histograms (its docs: writing
    too frequently can slow training): each step writes summaries of every weight. The fix:
    `update_freq='epoch'` (the default)."""
    import tempfile
    keras = zoo._keras()
    x = rng.random((64 * 16, 64), dtype=np.float32)
    y = rng.random((64 * 16, 1), dtype=np.float32)
    folder = tempfile.mkdtemp(prefix="tftrace_zoo_tb_")

    def model():
        m = _mlp("tb_mlp", 256, 64)
        m.compile("adam", "mse")
        return m

    slow, fixed = model(), model()
    cb_slow = [keras.callbacks.TensorBoard(os.path.join(folder, "slow"), update_freq=1, histogram_freq=1,
                                           write_graph=False)]
    cb_fixed = [keras.callbacks.TensorBoard(os.path.join(folder, "fixed"), write_graph=False)]
    for m, cbs in ((slow, cb_slow), (fixed, cb_fixed)):
        zoo.fit_ms_per_step(m, x, y, 64, 3, cbs)

    def capture(logdir):
        slow.fit(x, y, batch_size=64, epochs=1, steps_per_epoch=10, verbose=0,
                 callbacks=[*cb_slow, _trace_callback(logdir)])

    return {"slow": lambda: zoo.fit_ms_per_step(slow, x, y, 64, 8, cb_slow),
            "fixed": lambda: zoo.fit_ms_per_step(fixed, x, y, 64, 8, cb_fixed), "capture": capture,
            "how": "TraceCallback", "bound": "host_overhead", "cause": "callback", "names": ["TensorBoard"],
            "fix": "update_freq='epoch'", "cleanup": folder}


def prog_monitor_step():
    """A custom train_step (Keras' 'customizing what happens in fit' guide) that also computes the
    spectral norm of the hidden layer's kernel every step, for monitoring: an SVD in the step
    function, outside every layer. The fix: the same step without it (monitor in on_epoch_end)."""
    tf, keras = zoo._tf(), zoo._keras()
    x = rng.random((32 * 12, 256), dtype=np.float32)
    y = rng.random((32 * 12, 1), dtype=np.float32)

    class Monitored(keras.Sequential):
        monitor = True

        def train_step(self, data):
            out = super().train_step(data)
            if self.monitor:
                s = tf.linalg.svd(self.layers[0].kernel, compute_uv=False)
                out = {**out, "spectral_norm": s[0]}
            return out

    def model(monitor):
        m = Monitored([keras.Input((256,)), keras.layers.Dense(512, activation="relu", name="hidden"),
                       keras.layers.Dense(1, name="out")], name="monitored_mlp")
        m.monitor = monitor
        m.compile("adam", "mse")
        return m

    slow, fixed = model(True), model(False)
    s, f = _pair(slow, fixed, x, y, 32)

    def capture(logdir):
        zoo.plain_capture(logdir, lambda: slow.fit(x, y, batch_size=32, epochs=1, steps_per_epoch=10, verbose=0))

    return {"slow": s, "fixed": f, "capture": capture, "how": "plain tf.profiler.experimental.start/stop",
            "bound": "compute", "cause": "step", "names": ["Svd"], "fix": "no SVD in the train step"}


def prog_map_fn():  # not in PROGRAMS: its projection is not read from the trace (see the module docstring)
    """A Lambda layer that applies a per-example function with tf.map_fn (the tf.function guide:
    vectorise rather than loop over a batch): the graph runs the function once per example, as
    a while loop. The fix: the same arithmetic on the whole batch at once."""
    tf, keras = zoo._tf(), zoo._keras()
    x = rng.random((256 * 12, 128), dtype=np.float32)
    y = rng.random((256 * 12, 1), dtype=np.float32)

    def per_example(v):
        return v / (tf.norm(v) + 1e-6) * tf.reduce_max(v)

    def model(vectorised):
        fn = (lambda a: a / (tf.norm(a, axis=1, keepdims=True) + 1e-6) * tf.reduce_max(a, axis=1, keepdims=True)) \
            if vectorised else (lambda a: tf.map_fn(per_example, a))
        m = keras.Sequential([keras.Input((128,)), keras.layers.Lambda(fn, name="rescale"),
                              keras.layers.Dense(256, activation="relu", name="hidden"), keras.layers.Dense(1, name="out")],
                             name="map_fn_mlp")
        m.compile("adam", "mse")
        return m

    slow, fixed = model(False), model(True)
    s, f = _pair(slow, fixed, x, y, 256)

    def capture(logdir):
        slow.fit(x, y, batch_size=256, epochs=1, steps_per_epoch=10, verbose=0, callbacks=[_trace_callback(logdir)])

    return {"slow": s, "fixed": f, "capture": capture, "how": "TraceCallback", "bound": "host_overhead",
            "cause": "while_loop", "names": ["map_fn", "rescale"], "fix": "the rescale vectorised over the batch"}


def prog_float64():
    """A model whose wide layers compute in float64 (a `dtype='float64'` left on the layers, Keras'
    mixed-precision guide on dtype policies): every matmul runs at double precision, without
    oneDNN's fused kernels. The fix: the same layers in float32."""
    keras = zoo._keras()
    x = rng.random((64 * 12, 512), dtype=np.float32)
    y = rng.random((64 * 12, 1), dtype=np.float32)

    def model(dtype):
        m = keras.Sequential([keras.Input((512,)),
                              keras.layers.Dense(1024, activation="relu", name="wide1", dtype=dtype),
                              keras.layers.Dense(1024, activation="relu", name="wide2", dtype=dtype),
                              keras.layers.Dense(1, name="out")], name="f64_mlp")
        m.compile("adam", "mse")
        return m

    slow, fixed = model("float64"), model("float32")
    s, f = _pair(slow, fixed, x, y, 64)

    def capture(logdir):
        slow.fit(x, y, batch_size=64, epochs=1, steps_per_epoch=10, verbose=0, callbacks=[_trace_callback(logdir)])

    return {"slow": s, "fixed": f, "capture": capture, "how": "TraceCallback", "bound": "compute",
            "cause": "precision", "names": ["float64"], "fix": "float32 layers"}


def prog_map_sequential():
    """A tf.data map without num_parallel_calls and no prefetch (the tf.data performance guide:
    parallelize the map, prefetch): the map runs on one thread, one batch at a time, while the
    model waits. The fix: num_parallel_calls=AUTOTUNE and prefetch(AUTOTUNE)."""
    tf, keras = zoo._tf(), zoo._keras()
    x = rng.random((32 * 24, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, 32 * 24)

    def augment(img, label):
        for _ in range(20):
            img = tf.image.adjust_contrast(tf.image.random_flip_left_right(img), 1.1)
            img = tf.image.resize(tf.image.resize(img, (48, 48)), (32, 32))
        return img, label

    def dataset(parallel):
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE if parallel else None).batch(32)
        return (ds.prefetch(tf.data.AUTOTUNE) if parallel else ds).repeat()

    slow_ds, fixed_ds = dataset(False), dataset(True)
    model = zoo.small_cnn("map_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def per_step(ds, steps=10):
        clock = zoo._epoch_clock()()
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[clock])
        return clock.seconds * 1e3 / steps

    per_step(slow_ds, 3)
    per_step(fixed_ds, 3)

    def capture(logdir):
        model.fit(slow_ds, epochs=1, steps_per_epoch=10, verbose=0, callbacks=[_trace_callback(logdir)])

    return {"slow": lambda: per_step(slow_ds), "fixed": lambda: per_step(fixed_ds), "capture": capture,
            "how": "TraceCallback", "bound": "input", "cause": "input", "names": ["num_parallel_calls"],
            "fix": "a parallel map and prefetch"}


def prog_embedding_adam():
    """A text classifier with a 200,000-word Embedding trained with Adam (Keras' optimizer docs;
    TensorFlow's embeddings guide): each step's gradient touches a few hundred rows, but Adam's
    moments decay, and the update writes, the whole 12.8M-weight table every step. Captured
    with Keras' TensorBoard(profile_batch). The fix: SGD with momentum-free sparse updates."""
    keras = zoo._keras()
    x = rng.integers(0, 200_000, (32 * 12, 20))
    y = rng.integers(0, 2, 32 * 12)

    def model(opt):
        m = keras.Sequential([keras.Input((20,), dtype="int32"), keras.layers.Embedding(200_000, 64, name="embed"),
                              keras.layers.GlobalAveragePooling1D(name="pool"), keras.layers.Dense(1, name="out")],
                             name="embed_clf")
        m.compile(opt, keras.losses.BinaryCrossentropy(from_logits=True))
        return m

    slow, fixed = model(keras.optimizers.Adam(1e-3)), model(keras.optimizers.SGD(0.05))
    s, f = _pair(slow, fixed, x, y, 32)

    def capture(logdir):
        slow.fit(x, y, batch_size=32, epochs=1, steps_per_epoch=10, verbose=0, callbacks=[_tb(logdir)])

    return {"slow": s, "fixed": f, "capture": capture, "how": "Keras TensorBoard(profile_batch=(3, 8))",
            "bound": "compute", "cause": "optimizer", "names": ["adam"], "fix": "SGD (sparse updates of the table)"}


PROGRAMS = {"metric_auc": prog_metric_auc, "regularizer_l2": prog_regularizer_l2, "debug_ops": prog_debug_ops,
            "python_op": prog_python_op, "tensorboard_batch": prog_tensorboard_batch,
            "monitor_step": prog_monitor_step, "float64": prog_float64,
            "map_sequential": prog_map_sequential, "embedding_adam": prog_embedding_adam}

if __name__ == "__main__":
    zoo.main(PROGRAMS)
