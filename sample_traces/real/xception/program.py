# Copyright the keras-io authors (fchollet).
# Licensed under the Apache License, Version 2.0: see ../LICENSE.
# Origin: keras-team/keras-io, examples/vision/image_classification_from_scratch.py
# (commit 0e918412690b44285f82f699ce19d919fb14cee2), "Image classification from scratch".
# Adapted for tftrace's held-out programs (each change marked ADAPTED): synthetic 0-255 images
# instead of the Cats vs Dogs download, 32x32 instead of 180x180 and batches of 8 instead of
# 128 (so a step takes under a second on two cores), 8 batches, no validation pass; the small
# Xception, the augmentation map, the prefetches, the checkpoint callback and the compile
# (jit_compile=True included) are the example's.
"""Image classification from scratch (keras-io): a small Xception (SeparableConv2D) with XLA."""
# The `changes` each function takes are the fixes tftrace's findings offer, applied as written
# (sample_traces/time_real.py); without them the program is the example's.

import os
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

EPOCHS = 2
image_size = (32, 32)  # ADAPTED: the example's is (180, 180)
batch_size = 8  # ADAPTED: the example's is 128
IMAGES = 8 * batch_size


def make_model(input_shape, num_classes, first_filters=None):
    inputs = keras.Input(shape=input_shape)

    # Entry block
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(32, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.Conv2D(64, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    for size in [128, 256, 512, 728]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(first_filters or size, 3, padding="same")(x)
        first_filters = None  # a fix's filters: the first SeparableConv2D's only
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    x = layers.SeparableConv2D(1024, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        activation = "sigmoid"
        units = 1
    else:
        activation = "softmax"
        units = num_classes

    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(units, activation=activation)(x)
    return keras.Model(inputs, outputs)


def data(changes=None):
    changes = changes or {}
    # ADAPTED: synthetic images in [0, 255] and 0/1 labels, batched as image_dataset_from_directory does
    rng = np.random.default_rng(1337)
    images = (rng.random((IMAGES,) + image_size + (3,)) * 255).astype("float32")
    labels = rng.integers(0, 2, IMAGES).astype("int32")
    train_ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(changes.get("batch_size", batch_size))
    train_ds = train_ds.prefetch(buffer_size=32)
    data_augmentation = keras.Sequential([layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)])
    # Apply `data_augmentation` to the training images.
    train_ds = train_ds.map(
        lambda img, label: (data_augmentation(img), label),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    # Prefetching samples in GPU memory helps maximize GPU utilization.
    train_ds = train_ds.prefetch(tf.data.AUTOTUNE)
    return {"x": train_ds}


def callbacks():
    # ADAPTED: the checkpoints go to a scratch folder, not the working directory
    folder = tempfile.mkdtemp(prefix="xception_ckpt_")
    return [keras.callbacks.ModelCheckpoint(os.path.join(folder, "save_at_{epoch}.keras"))]


def model(changes=None):
    changes = changes or {}
    m = make_model(input_shape=image_size + (3,), num_classes=2, first_filters=changes.get("first_filters"))
    compile_args = dict(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="binary_crossentropy",
        metrics=["accuracy"],
        jit_compile=True,  # Enable XLA compilation for faster execution
    )
    compile_args.update(changes.get("compile", {}))
    m.compile(**compile_args)
    return m


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    model().fit(data()["x"], epochs=EPOCHS, callbacks=callbacks())
