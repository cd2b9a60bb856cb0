"""Issue 46's TensorFlow projection programs: each returns its slow and fixed runs (ms per step),
its capture, and its truth's words; `capture_zoo_projections.py` times, captures and records them."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

import capture_zoo as zoo

rng = np.random.default_rng(46)


def _fit_ms(model, data, steps, callbacks=(), **kw) -> float:
    """ms per step of one fit epoch of `steps` steps over `data` (arrays as (x, y) or a dataset)."""
    clock = zoo._epoch_clock()()
    if isinstance(data, tuple):
        model.fit(*data, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[*callbacks, clock], shuffle=False,
                  **kw)
    else:
        model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[*callbacks, clock])
    return clock.seconds * 1e3 / steps


def _trace_callback(logdir, first=2, last=7, **kw):
    import tftrace
    return tftrace.TraceCallback(logdir, fit_steps=(first, last), **kw)


# -- TensorFlow programs ----------------------------------------------------------------------------

def prog_map_per_element():
    """A tf.data pipeline (already a parallel map, already prefetching) runs seven small image ops
    per 16x16 image before batch(512): every op, and the map function's call, runs once per
    element. A tiny model, so the pipeline sets the pace. The fix: batch() first and the same map
    over whole batches."""
    tf, keras = zoo._tf(), zoo._keras()
    n, batch, side = 4096, 512, 16
    x = (rng.random((n, side, side, 3)) * 255).astype("uint8")
    y = rng.integers(0, 10, n)

    def augment(img, label):  # works on one image or on a batch of them alike
        img = tf.image.convert_image_dtype(img, tf.float32)
        img = tf.image.random_flip_left_right(img, seed=1)
        img = tf.image.random_flip_up_down(img, seed=2)
        img = tf.image.random_brightness(img, 0.1, seed=3)
        img = tf.image.random_contrast(img, 0.8, 1.2, seed=4)
        img = tf.clip_by_value(img * 1.1 - 0.05, 0.0, 1.0)
        return tf.image.per_image_standardization(img), label

    def dataset(batched):
        ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
        if batched:
            ds = ds.batch(batch).map(augment, num_parallel_calls=tf.data.AUTOTUNE)
        else:
            ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(batch)
        return ds.prefetch(tf.data.AUTOTUNE)

    slow_ds, fixed_ds = dataset(False), dataset(True)
    model = keras.Sequential([keras.Input((side, side, 3)), keras.layers.Flatten(name="flatten"),
                              keras.layers.Dense(10, name="logits")], name="elem_linear")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    _fit_ms(model, slow_ds, 3)
    _fit_ms(model, fixed_ds, 3)

    def capture(logdir):
        model.fit(slow_ds, epochs=1, steps_per_epoch=7, verbose=0, callbacks=[_trace_callback(logdir, 2, 4)])

    return {"slow": lambda: _fit_ms(model, slow_ds, 8), "fixed": lambda: _fit_ms(model, fixed_ds, 48),
            "capture": capture, "how": "TraceCallback", "bound": "input", "causes": ["input"],
            "names": ["batch()"], "fix": "batch() first and the same map over whole batches"}


def prog_fit_per_batch():
    """A loop calls model.fit(xb, yb) once per batch of 32 (as code written for train_on_batch often
    does): every call builds Keras' data adapter, a tf.data pipeline and its iterator, and the
    callback list, around one step of a small MLP. Captured the plain way around the loop. The fix:
    one fit call over all the batches."""
    keras = zoo._keras()
    batch, batches = 32, 128
    x = rng.random((batch * batches, 48), dtype=np.float32)
    y = rng.random((batch * batches, 4), dtype=np.float32)
    model = keras.Sequential([keras.Input((48,)), keras.layers.Dense(128, activation="relu", name="hidden"),
                              keras.layers.Dense(128, activation="relu", name="hidden_2"),
                              keras.layers.Dense(4, name="out")], name="per_batch_mlp")
    model.compile("adam", "mse")

    def loop(n):
        t0 = time.perf_counter()
        for i in range(n):
            j = i % batches
            model.fit(x[j * batch:(j + 1) * batch], y[j * batch:(j + 1) * batch], batch_size=batch, epochs=1,
                      verbose=0, shuffle=False)
        return (time.perf_counter() - t0) * 1e3 / n

    def one_call():
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        return (time.perf_counter() - t0) * 1e3 / batches

    loop(3)
    one_call()
    return {"slow": lambda: loop(12), "fixed": one_call,
            "capture": lambda logdir: zoo.plain_capture(logdir, lambda: loop(8)),
            "how": "plain tf.profiler.experimental.start/stop around a loop of fit calls", "bound": "host_overhead",
            "causes": ["per_call_overhead"], "names": ["model.fit"], "fix": "one fit call over all the batches"}


def _augmentation(keras):
    return [keras.layers.RandomFlip("horizontal", seed=1, name="flip"),
            keras.layers.RandomRotation(0.1, seed=2, name="rotate"),
            keras.layers.RandomZoom(0.1, seed=3, name="zoom"),
            keras.layers.RandomTranslation(0.1, 0.1, seed=4, name="translate"),
            keras.layers.RandomContrast(0.2, seed=5, name="contrast")]


def prog_augment_layers():
    """Keras preprocessing layers (RandomFlip, RandomRotation, RandomZoom, RandomTranslation,
    RandomContrast) at the start of a small CNN on 64x64 images (Keras' data augmentation guide,
    option 1): on a CPU they run inside every training step, in line with the model's ops. Captured
    with Keras' TensorBoard(profile_batch). The fix: the same layers in the tf.data pipeline
    (map(..., num_parallel_calls=AUTOTUNE) and prefetch), so they run beside the step."""
    tf, keras = zoo._tf(), zoo._keras()
    n, batch = 512, 32
    x = rng.random((n, 64, 64, 3), dtype=np.float32)
    y = rng.integers(0, 10, n)

    def body():
        return [keras.layers.Conv2D(32, 3, strides=2, activation="relu", name="conv"),
                keras.layers.Conv2D(64, 3, strides=2, activation="relu", name="conv_2"),
                keras.layers.GlobalAveragePooling2D(name="gap"), keras.layers.Dense(10, name="logits")]

    def model(inside):
        m = keras.Sequential([keras.Input((64, 64, 3)), *(_augmentation(keras) if inside else []), *body()],
                             name="aug_cnn" if inside else "plain_cnn")
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    slow, fixed = model(True), model(False)
    augment = keras.Sequential(_augmentation(keras), name="augment")
    base = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch)
    slow_ds = base.prefetch(tf.data.AUTOTUNE)
    fixed_ds = base.map(lambda a, b: (augment(a, training=True), b),
                        num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    _fit_ms(slow, slow_ds, 3)
    _fit_ms(fixed, fixed_ds, 3)

    def capture(logdir):
        slow.fit(slow_ds, epochs=1, steps_per_epoch=10, verbose=0,
                 callbacks=[keras.callbacks.TensorBoard(logdir, profile_batch=(3, 8))])

    return {"slow": lambda: _fit_ms(slow, slow_ds, 10), "fixed": lambda: _fit_ms(fixed, fixed_ds, 10),
            "capture": capture, "how": "Keras TensorBoard(profile_batch=(3, 8))", "bound": "compute",
            "causes": ["layer"], "names": ["rotate"],
            "fix": "the augmentation layers in the tf.data pipeline (parallel map, prefetch)"}


def prog_per_sample_loop():
    """A custom layer (a per-sample gated softmax between two Dense layers) whose call runs
    tf.map_fn over the samples of the batch: the graph runs its ops once per sample in a while loop,
    forward and backward. The fix: the same math vectorised over the batch axis."""
    tf, keras = zoo._tf(), zoo._keras()
    batch = 96
    x = rng.random((batch * 96, 64), dtype=np.float32)
    y = rng.random((batch * 96, 1), dtype=np.float32)

    def one(v):  # one sample's features
        g = tf.nn.softmax(v * 2.0)
        return v * g / (tf.reduce_max(g) + 1e-6) + tf.reduce_mean(v)

    def whole(a):  # the same math on the whole batch at once
        g = tf.nn.softmax(a * 2.0, axis=-1)
        return a * g / (tf.reduce_max(g, axis=-1, keepdims=True) + 1e-6) + tf.reduce_mean(a, axis=-1, keepdims=True)

    class Gate(keras.layers.Layer):
        def __init__(self, vectorised=False, **kw):
            super().__init__(**kw)
            self.vectorised = vectorised

        def call(self, a):
            return whole(a) if self.vectorised else tf.map_fn(one, a)

    def model(vectorised):
        m = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu", name="hidden"),
                              Gate(vectorised, name="gate"), keras.layers.Dense(1, name="out")], name="gate_mlp")
        m.compile("adam", "mse")
        return m

    slow, fixed = model(False), model(True)
    for m in (slow, fixed):
        zoo.fit_ms_per_step(m, x, y, batch, 3)

    def capture(logdir):
        slow.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=7, verbose=0,
                 callbacks=[_trace_callback(logdir, 2, 4)])

    return {"slow": lambda: zoo.fit_ms_per_step(slow, x, y, batch, 32),
            "fixed": lambda: zoo.fit_ms_per_step(fixed, x, y, batch, 96), "capture": capture,
            "how": "TraceCallback", "bound": "host_overhead", "causes": ["while_loop", "layer"], "names": ["gate"],
            "fix": "the gate vectorised over the batch axis"}


def prog_pairwise_metric():
    """A custom Keras metric (an embedding's pairwise-distance agreement) computes the distances
    between every pair of samples in the batch, O(batch^2 x features), for predictions and targets,
    in every training step. Captured with TraceCallback(confirm=True), which times the fix on a copy of
    the model (the metric's class is not registered for deserialising: the copy finds it in the
    live model). The fix: compile without it (compute it in evaluate)."""
    tf, keras = zoo._tf(), zoo._keras()
    batch, dims = 512, 32
    x = rng.random((batch * 60, 64), dtype=np.float32)
    y = rng.random((batch * 60, dims), dtype=np.float32)

    class PairwiseAgreement(keras.metrics.Metric):
        def __init__(self, name="pairwise", **kw):
            super().__init__(name=name, **kw)
            self.total = self.add_variable((), initializer="zeros", name="total")
            self.count = self.add_variable((), initializer="zeros", name="count")

        def update_state(self, y_true, y_pred, sample_weight=None):
            def distances(a):
                return tf.sqrt(tf.reduce_sum(tf.square(a[:, None, :] - a[None, :, :]), axis=-1) + 1e-9)
            d_true, d_pred = distances(y_true), distances(y_pred)
            self.total.assign_add(tf.reduce_mean(tf.abs(d_true - d_pred)))
            self.count.assign_add(1.0)

        def result(self):
            return self.total / tf.maximum(self.count, 1.0)

    def model(metric):
        m = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256, activation="relu", name="hidden"),
                              keras.layers.Dense(dims, name="embed")], name="embed_mlp")
        m.compile("adam", "mse", metrics=[PairwiseAgreement()] if metric else [])
        return m

    slow, fixed = model(True), model(False)
    for m in (slow, fixed):
        zoo.fit_ms_per_step(m, x, y, batch, 3)

    def capture(logdir):
        slow.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=10, verbose=0,
                 callbacks=[_trace_callback(logdir, confirm=True)])

    return {"slow": lambda: zoo.fit_ms_per_step(slow, x, y, batch, 10),
            "fixed": lambda: zoo.fit_ms_per_step(fixed, x, y, batch, 60), "capture": capture,
            "how": "TraceCallback(confirm=True)", "bound": "compute", "causes": ["metric"], "names": ["pairwise"],
            "fix": "no pairwise metric in fit (computed in evaluate)", "confirm": True}


def prog_metric_beside_convs():
    """A small CNN that predicts a 64-d embedding, with a custom metric comparing every pair of the
    batch's embeddings (their L1 distances, for predictions and targets): unlike pairwise_metric's
    small layers, here the metric's ops and heavy convolutions' run side by side and share the
    cores. The fix: compile without it (compute it in evaluate)."""
    tf, keras = zoo._tf(), zoo._keras()
    batch = 512
    x = rng.random((batch * 12, 32, 32, 3), dtype=np.float32)
    y = rng.random((batch * 12, 64), dtype=np.float32)

    class PairAgreement(keras.metrics.Metric):
        def __init__(self, name="pair_agreement", **kw):
            super().__init__(name=name, **kw)
            self.total = self.add_variable((), initializer="zeros", name="total")

        def update_state(self, y_true, y_pred, sample_weight=None):
            def distances(a):
                a = tf.math.l2_normalize(a, axis=-1)
                return tf.reduce_sum(tf.abs(a[:, None, :] - a[None, :, :]), axis=-1)
            self.total.assign_add(tf.reduce_mean(tf.abs(distances(y_true) - distances(y_pred))))

        def result(self):
            return self.total

    def model(metric):
        m = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(32, 3, activation="relu", name="conv_1"),
                              keras.layers.MaxPooling2D(name="pool"),
                              keras.layers.Conv2D(64, 3, activation="relu", name="conv_2"),
                              keras.layers.GlobalAveragePooling2D(name="gap"), keras.layers.Dense(64, name="embed")],
                             name="embed_cnn")
        m.compile("adam", "mse", metrics=[PairAgreement()] if metric else [])
        return m

    slow, fixed = model(True), model(False)
    for m in (slow, fixed):
        zoo.fit_ms_per_step(m, x, y, batch, 3)

    def capture(logdir):
        slow.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=9, verbose=0, callbacks=[_trace_callback(logdir)])

    return {"slow": lambda: zoo.fit_ms_per_step(slow, x, y, batch, 6),
            "fixed": lambda: zoo.fit_ms_per_step(fixed, x, y, batch, 10), "capture": capture,
            "how": "TraceCallback", "bound": "compute", "causes": ["metric"], "names": ["pair_agreement"],
            "fix": "no pairwise metric in fit (computed in evaluate)"}


def prog_float16_cpu():
    """keras.mixed_precision.set_global_policy('mixed_float16') on a CPU (Keras' mixed-precision
    guide: it speeds up GPUs and TPUs; a CPU has no fast float16 kernels): every convolution of a
    small CNN computes in float16, through casts and slow kernels. Captured with
    TraceCallback(confirm=True), which times the fix on a copy of the model. The fix: the float32
    policy."""
    keras = zoo._keras()
    batch = 32
    x, y = zoo._images(batch * 12)

    def model(policy):
        keras.mixed_precision.set_global_policy(policy)
        try:
            layers = [keras.Input((32, 32, 3))]
            for i, filters in enumerate((32, 64, 64)):
                layers += [keras.layers.Conv2D(filters, 3, padding="same", activation="relu", name=f"conv_{i}"),
                           keras.layers.MaxPooling2D(name=f"pool_{i}")]
            layers += [keras.layers.GlobalAveragePooling2D(name="gap"), keras.layers.Dense(10, name="logits",
                                                                                          dtype="float32")]
            m = keras.Sequential(layers, name="half_cnn")
            m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        finally:
            keras.mixed_precision.set_global_policy("float32")
        return m

    slow, fixed = model("mixed_float16"), model("float32")
    for m in (slow, fixed):
        zoo.fit_ms_per_step(m, x, y, batch, 3)

    def capture(logdir):
        keras.mixed_precision.set_global_policy("mixed_float16")  # as the user's program has it
        try:
            slow.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=10, verbose=0,
                     callbacks=[_trace_callback(logdir, confirm=True)])
        finally:
            keras.mixed_precision.set_global_policy("float32")

    return {"slow": lambda: zoo.fit_ms_per_step(slow, x, y, batch, 4),
            "fixed": lambda: zoo.fit_ms_per_step(fixed, x, y, batch, 10), "capture": capture,
            "how": "TraceCallback(confirm=True)", "bound": "compute", "causes": ["precision", "casts"],
            "names": ["float16"], "fix": "the float32 policy", "confirm": True}


def prog_run_eagerly_fit():
    """compile(run_eagerly=True) on a tabular MLP with BatchNormalization and Dropout, batch 128
    (left on from debugging): every op of every step is dispatched from Python. Captured with
    TraceCallback(confirm=True), which times the fix on a copy of the model. The fix: the default,
    run_eagerly=False."""
    keras = zoo._keras()
    batch = 128
    x = rng.random((batch * 96, 40), dtype=np.float32)
    y = rng.integers(0, 2, batch * 96).astype("float32")

    def model(eager):
        m = keras.Sequential([keras.Input((40,)), keras.layers.Dense(128, name="dense"),
                              keras.layers.BatchNormalization(name="norm"), keras.layers.Activation("relu", name="relu"),
                              keras.layers.Dropout(0.2, name="drop"), keras.layers.Dense(64, activation="relu",
                                                                                         name="dense_2"),
                              keras.layers.Dense(1, name="logit")], name="tab_mlp")
        m.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True), run_eagerly=eager)
        return m

    slow, fixed = model(True), model(False)
    for m in (slow, fixed):
        zoo.fit_ms_per_step(m, x, y, batch, 3)

    def capture(logdir):
        slow.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=9, verbose=0,
                 callbacks=[_trace_callback(logdir, confirm=True)])

    return {"slow": lambda: zoo.fit_ms_per_step(slow, x, y, batch, 8),
            "fixed": lambda: zoo.fit_ms_per_step(fixed, x, y, batch, 96), "capture": capture,
            "how": "TraceCallback(confirm=True)", "bound": "host_overhead", "causes": ["eager"],
            "names": ["run_eagerly"], "fix": "compile(run_eagerly=False)", "confirm": True}


def prog_checkpoint_every_n():
    """ModelCheckpoint(save_freq=2, save_weights_only=True) on a 3M-weight MLP: every other step
    writes all the weights to an .h5 file. The fix: save_freq='epoch' (the twin's one save at the
    epoch's end is after its timed steps: an epoch is far longer than the few steps timed here)."""
    keras = zoo._keras()
    batch = 16
    x = rng.random((batch * 24, 512), dtype=np.float32)
    y = rng.random((batch * 24, 1), dtype=np.float32)
    folder = tempfile.mkdtemp(prefix="tftrace_ckpt46_")
    model = keras.Sequential([keras.Input((512,)), keras.layers.Dense(2048, activation="relu", name="wide"),
                              keras.layers.Dense(1024, activation="relu", name="wide_2"),
                              keras.layers.Dense(1, name="out")], name="ckpt_mlp")
    model.compile("sgd", "mse")

    def ckpt(freq):
        return keras.callbacks.ModelCheckpoint(os.path.join(folder, "w.weights.h5"), save_weights_only=True,
                                               save_freq=freq)

    def timed(freq):
        clock = zoo._epoch_clock()()  # listed first: its epoch end comes before the checkpoint's
        model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=24, verbose=0, shuffle=False,
                  callbacks=[clock, ckpt(freq)])
        return clock.seconds * 1e3 / 24

    timed(2)
    timed("epoch")

    def capture(logdir):
        model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=12, verbose=0,
                  callbacks=[ckpt(2), _trace_callback(logdir, 2, 9)])

    return {"slow": lambda: timed(2), "fixed": lambda: timed("epoch"), "capture": capture, "how": "TraceCallback",
            "bound": "host_overhead", "causes": ["stall", "callback"], "names": ["ModelCheckpoint"],
            "fix": "save_freq='epoch'", "cleanup": folder}


def prog_serial_map():
    """An audio pipeline computes a log-mel spectrogram (STFT, magnitude, mel matrix, log) of each
    16,000-sample waveform in a map without num_parallel_calls: one waveform at a time on one
    thread, in line with the steps, while a small Conv1D model waits. The fix: the same map with
    num_parallel_calls=tf.data.AUTOTUNE (its buffer also runs it ahead of the steps)."""
    tf, keras = zoo._tf(), zoo._keras()
    batch, n = 64, 64 * 8
    wave = rng.standard_normal((n, 16000)).astype("float32")
    y = rng.integers(0, 8, n)
    mel = tf.signal.linear_to_mel_weight_matrix(40, 257, 16000, 20.0, 4000.0)

    def spectrogram(w, label):
        s = tf.abs(tf.signal.stft(w, frame_length=400, frame_step=160, fft_length=512))
        return tf.math.log(tf.matmul(tf.square(s), mel) + 1e-6), label

    def dataset(parallel):
        ds = tf.data.Dataset.from_tensor_slices((wave, y)).repeat()
        return ds.map(spectrogram, num_parallel_calls=tf.data.AUTOTUNE if parallel else None).batch(batch)

    slow_ds, fixed_ds = dataset(False), dataset(True)
    model = keras.Sequential([keras.Input((98, 40)), keras.layers.Conv1D(32, 5, strides=2, activation="relu",
                                                                         name="conv"),
                              keras.layers.GlobalAveragePooling1D(name="gap"), keras.layers.Dense(8, name="logits")],
                             name="audio_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    _fit_ms(model, slow_ds, 3)
    _fit_ms(model, fixed_ds, 3)

    def capture(logdir):
        model.fit(slow_ds, epochs=1, steps_per_epoch=9, verbose=0, callbacks=[_trace_callback(logdir)])

    return {"slow": lambda: _fit_ms(model, slow_ds, 16), "fixed": lambda: _fit_ms(model, fixed_ds, 16),
            "capture": capture, "how": "TraceCallback", "bound": "input", "causes": ["input"],
            "names": ["num_parallel_calls"], "fix": "map(..., num_parallel_calls=tf.data.AUTOTUNE)"}


PROGRAMS = {"map_per_element": prog_map_per_element, "fit_per_batch": prog_fit_per_batch,
            "augment_layers": prog_augment_layers, "per_sample_loop": prog_per_sample_loop,
            "pairwise_metric": prog_pairwise_metric, "metric_beside_convs": prog_metric_beside_convs,
            "float16_cpu": prog_float16_cpu,
            "run_eagerly_fit": prog_run_eagerly_fit, "checkpoint_every_n": prog_checkpoint_every_n,
            "serial_map": prog_serial_map}
