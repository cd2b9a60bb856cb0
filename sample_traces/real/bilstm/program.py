# Copyright the keras-io authors (fchollet).
# Licensed under the Apache License, Version 2.0: see ../LICENSE.
# Origin: keras-team/keras-io, examples/nlp/bidirectional_lstm_imdb.py
# (commit 0a4be8bbc3ae126f3ca49a0bf173902866ec06f0), "Bidirectional LSTM on IMDB".
# Adapted for tftrace's held-out programs (each change marked ADAPTED): synthetic word indices
# instead of the IMDB download, reviews cut to 16 words instead of 200 (the LSTMs run op by op
# in a graph loop on CPU: a longer review makes a step slower and its trace megabytes larger), fewer of them, no validation pass; the model and compile are the
# example's.
"""Bidirectional LSTM on IMDB (keras-io): two stacked bidirectional LSTMs over word embeddings."""
# The `changes` each function takes are the fixes tftrace's findings offer, applied as written
# (sample_traces/time_real.py); without them the program is the example's.

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

EPOCHS = 2
max_features = 20000  # Only consider the top 20k words
maxlen = 16  # ADAPTED: the example keeps the first 200 words of each review
REVIEWS = 16 * 32


def data(changes=None):
    # ADAPTED: zipf-distributed word indices, padded as pad_sequences does, instead of keras.datasets.imdb
    rng = np.random.default_rng(1337)
    reviews = [np.minimum(rng.zipf(1.3, int(rng.integers(20, 400))), max_features - 1) for _ in range(REVIEWS)]
    x_train = keras.utils.pad_sequences(reviews, maxlen=maxlen)
    y_train = rng.integers(0, 2, REVIEWS)
    return {"x": x_train, "y": y_train, "batch_size": (changes or {}).get("batch_size", 32)}


def model(changes=None):
    changes = changes or {}
    # Input for variable-length sequences of integers
    inputs = keras.Input(shape=(None,), dtype="int32")
    # Embed each integer in a 128-dimensional vector
    x = layers.Embedding(max_features, 128)(inputs)
    # Add 2 bidirectional LSTMs
    lstm = changes.get("lstm", {})
    x = layers.Bidirectional(layers.LSTM(64, return_sequences=True, **lstm))(x)
    x = layers.Bidirectional(layers.LSTM(64, **lstm))(x)
    # Add a classifier
    outputs = layers.Dense(1, activation="sigmoid")(x)
    m = keras.Model(inputs, outputs)
    compile_args = dict(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    compile_args.update(changes.get("compile", {}))
    m.compile(**compile_args)
    return m


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    model().fit(**data(), epochs=EPOCHS)
