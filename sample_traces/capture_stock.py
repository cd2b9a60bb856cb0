"""Scenario 4, `stock/`: traces captured the ways users capture them, without tftrace's markers.

Run through `python sample_traces/capture_samples.py --only stock`. Variants:

- `predict_light`, `predict_heavy`: a loop that loads one image from disk and calls
  `model.predict` on it, wrapped only in `tf.profiler.experimental.start()/stop()`; the light and
  heavy CNNs of scenario 2. Question: "my 7x lighter model predicts at the same speed".
- `fit_tensorboard`: scenario 1's Flatten-head model trained from the Python augmentation
  generator, profiled by the stock `keras.callbacks.TensorBoard(profile_batch=(2, 7))`.
- `trace_nosteps`: the light predict loop inside `tftrace.trace()` with no `tftrace.step()`.

Ground truth, timed without the profiler (variants alternating): per-iteration time of the
loop (`iteration_ms`: load + predict), its parts, a direct `model(x, training=False)` call
(`call_ms`, op by op in Keras 3), the compiled call the fix recommends (`predict_on_batch_ms`), and
for fit the generator and the train step.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

import capture_samples as cs

ITERATIONS = 8
SOURCE_SIZE = 512  # the image on disk; loading converts and downsamples it (a few ms, as in user loops)


def _images(folder: str) -> list[str]:
    paths = []
    for i in range(ITERATIONS + 2):
        path = os.path.join(folder, f"img{i}.npy")
        np.save(path, (cs.rng.random((SOURCE_SIZE, SOURCE_SIZE, 3)) * 255).astype("uint8"))
        paths.append(path)
    return paths


def load(path: str) -> np.ndarray:
    img = np.load(path).astype("float32") / 255.0
    k = SOURCE_SIZE // cs.IMAGE  # box-filter downsampling, as image libraries resize
    return img.reshape(cs.IMAGE, k, cs.IMAGE, k, 3).mean(axis=(1, 3))[None]


def _runs(logdir: str) -> list[str]:
    root = os.path.join(logdir, "plugins", "profile")
    return [os.path.join(root, r) for r in sorted(os.listdir(root))] if os.path.isdir(root) else []


def scenario_stock(keras, tftrace, out: dict) -> None:
    import tensorflow as tf
    folder = tempfile.mkdtemp(prefix="tftrace_images_")
    paths = _images(folder)
    models = {"light": cs.cnn(keras, (8, 16), 32, "light"), "heavy": cs.cnn(keras, (32, 64, 64), 224, "heavy")}
    x = load(paths[0])
    for model in models.values():
        model.predict(x, verbose=0)
        model(x, training=False)

    def loop(model):
        for path in paths[:ITERATIONS]:
            model.predict(load(path), verbose=0)

    truth = cs._interleaved_truth({f"predict_{v}": {
        "load_ms": lambda: load(paths[1]),
        "predict_ms": lambda m=m: m.predict(x, verbose=0),
        "call_ms": lambda m=m: m(x, training=False),
        "predict_on_batch_ms": lambda m=m: m.predict_on_batch(x),
        "iteration_ms": lambda m=m: m.predict(load(paths[2]), verbose=0),
    } for v, m in models.items()})
    for v, m in models.items():
        truth[f"predict_{v}"]["params"] = int(m.count_params())
    truth["trace_nosteps"] = dict(truth["predict_light"])

    def capture_plain(variant, logdir):
        tf.profiler.experimental.start(logdir)
        try:
            loop(models[variant.split("_")[1]])
        finally:
            tf.profiler.experimental.stop()
        return _runs(logdir)

    def capture_trace(_variant, logdir):
        with tftrace.trace(logdir, label="nosteps", model=models["light"]) as t:
            loop(models["light"])
        return [t.run_dir]

    cs._capture_representative(tftrace, "stock", ["predict_light", "predict_heavy"], capture_plain)
    cs._capture_representative(tftrace, "stock", ["trace_nosteps"], capture_trace)
    truth["fit_tensorboard"] = _fit_tensorboard(keras, tftrace)
    out["stock"] = truth
    shutil.rmtree(folder, ignore_errors=True)


def _fit_tensorboard(keras, tftrace) -> dict:
    images = cs.rng.random((64, cs.IMAGE, cs.IMAGE, 3)).astype("float32")
    labels = cs.rng.integers(0, 10, 64)
    gen = cs.augmenting_generator(images, labels)
    model = cs.head_model(keras, "flatten")
    model.fit(gen, steps_per_epoch=3, epochs=1, verbose=0)
    xb, yb = next(gen)
    truth = cs._interleaved_truth({"fit": {
        "generator_ms_per_batch": lambda: next(gen),
        "train_step_ms": lambda: model.train_on_batch(xb, yb),
        "fit_ms_per_step": lambda: model.fit(gen, steps_per_epoch=1, epochs=1, verbose=0),
    }})["fit"]

    def capture(_variant, logdir):
        stock = keras.callbacks.TensorBoard(logdir, profile_batch=(2, 7))
        model.fit(gen, steps_per_epoch=9, epochs=1, verbose=0, callbacks=[stock])
        return _runs(os.path.join(logdir, "train"))

    cs._capture_representative(tftrace, "stock", ["fit_tensorboard"], capture)
    return truth
