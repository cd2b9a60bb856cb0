# Copyright the keras-io authors (Mark Omernick, Francois Chollet).
# Licensed under the Apache License, Version 2.0: see ../LICENSE.
# Origin: keras-team/keras-io, examples/nlp/text_classification_from_scratch.py
# (commit 01ae2db402523e96f804c6fc3b0a59582e6a671e), "Text classification from scratch".
# Adapted for tftrace's held-out programs (each change marked ADAPTED): synthetic reviews of
# made-up words instead of the IMDB download, fewer reviews, sequences of 200 tokens instead of
# 500 (so a step takes tens of milliseconds on two cores), no validation or test pass; the
# model, its text pipeline (standardization, TextVectorization, map, cache, prefetch) and its
# compile arguments are the example's.
"""Text classification from scratch (keras-io): a 1D convnet over TextVectorization'd reviews."""
# The `changes` each function takes are the fixes tftrace's findings offer, applied as written
# (sample_traces/time_real.py); without them the program is the example's.

import os
import re
import string

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

# ADAPTED: synthetic reviews of the same form (HTML breaks, punctuation, ~230 words) instead of
# downloading aclImdb; 16 batches of the example's batch size.
batch_size = 32
REVIEWS = 16 * batch_size
EPOCHS = 2


def _synthetic_reviews(batch, seed=1337):
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(30000)])
    texts, labels = [], []
    for _ in range(REVIEWS):
        n = int(rng.integers(40, 320))
        tokens = words[np.minimum(rng.zipf(1.2, n), len(words)) - 1]
        texts.append(" ".join(tokens).replace("w7 ", "w7<br />").replace("w3 ", "w3, "))
        labels.append(int(rng.integers(0, 2)))
    return tf.data.Dataset.from_tensor_slices((texts, labels)).batch(batch)


def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")


# Model constants.
max_features = 20000
embedding_dim = 128
sequence_length = 200  # ADAPTED: the example's is 500


def data(changes=None):
    """The example's train_ds: raw text -> vectorize_text map -> cache -> prefetch."""
    changes = changes or {}
    raw_train_ds = _synthetic_reviews(changes.get("batch_size", batch_size))
    vectorize_layer = keras.layers.TextVectorization(
        standardize=custom_standardization,
        max_tokens=max_features,
        output_mode="int",
        output_sequence_length=sequence_length,
    )
    text_ds = raw_train_ds.map(lambda x, y: x)
    vectorize_layer.adapt(text_ds)

    def vectorize_text(text, label):
        text = tf.expand_dims(text, -1)
        return vectorize_layer(text), label

    train_ds = raw_train_ds.map(vectorize_text)
    train_ds = train_ds.cache().prefetch(buffer_size=10)
    return {"x": train_ds}


def model(changes=None):
    changes = changes or {}
    # A integer input for vocab indices.
    inputs = keras.Input(shape=(None,), dtype="int64")
    x = layers.Embedding(max_features, embedding_dim)(inputs)
    x = layers.Dropout(0.5)(x)
    # Conv1D + global max pooling
    filters = changes.get("filters", (128, 128))
    x = layers.Conv1D(filters[0], 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.Conv1D(filters[1], 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.GlobalMaxPooling1D()(x)
    # We add a vanilla hidden layer:
    x = layers.Dense(128, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    # We project onto a single unit output layer, and squash it with a sigmoid:
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)
    m = keras.Model(inputs, predictions)
    # Compile the model with binary crossentropy loss and an adam optimizer.
    compile_args = dict(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    compile_args.update(changes.get("compile", {}))
    m.compile(**compile_args)
    return m


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    model().fit(data()["x"], epochs=EPOCHS)
