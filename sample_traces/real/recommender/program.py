# Copyright the keras-io authors (Siddhartha Banerjee).
# Licensed under the Apache License, Version 2.0: see ../LICENSE.
# Origin: keras-team/keras-io, examples/structured_data/collaborative_filtering_movielens.py
# (commit 13dcc614a61bd9f95fcb19f1f451934226ef0db0), "Collaborative Filtering for Movie
# Recommendations".
# Adapted for tftrace's held-out programs (each change marked ADAPTED): synthetic ratings with
# MovieLens-small's numbers of users and movies instead of the download, fewer of them, no
# validation pass, Keras 3's `learning_rate` for Adam's `lr`; the model and compile are the
# example's.
"""Collaborative filtering for movie recommendations (keras-io): user and movie embeddings, a dot."""
# The `changes` each function takes are the fixes tftrace's findings offer, applied as written
# (sample_traces/time_real.py); without them the program is the example's.

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

EPOCHS = 2
# ADAPTED: ml-latest-small's 610 users and 9724 movies, 48 batches of synthetic ratings
num_users, num_movies = 610, 9724
RATINGS = 48 * 128
min_rating, max_rating = 0.5, 5.0
EMBEDDING_SIZE = 50


class RecommenderNet(keras.Model):
    def __init__(self, num_users, num_movies, embedding_size, regularizer=1e-6, **kwargs):
        super(RecommenderNet, self).__init__(**kwargs)
        self.num_users = num_users
        self.num_movies = num_movies
        self.embedding_size = embedding_size
        self.user_embedding = layers.Embedding(
            num_users,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(regularizer) if regularizer else None,
        )
        self.user_bias = layers.Embedding(num_users, 1)
        self.movie_embedding = layers.Embedding(
            num_movies,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(regularizer) if regularizer else None,
        )
        self.movie_bias = layers.Embedding(num_movies, 1)

    def call(self, inputs):
        user_vector = self.user_embedding(inputs[:, 0])
        user_bias = self.user_bias(inputs[:, 0])
        movie_vector = self.movie_embedding(inputs[:, 1])
        movie_bias = self.movie_bias(inputs[:, 1])
        dot_user_movie = layers.Dot(axes=1)([user_vector, movie_vector])
        # Add all the components (including bias)
        x = dot_user_movie + user_bias + movie_bias
        # The sigmoid activation forces the rating to between 0 and 1
        x = tf.nn.sigmoid(x)
        return x


def data(changes=None):
    # ADAPTED: random (user, movie) pairs and ratings in the example's normalized [0, 1] range
    rng = np.random.default_rng(42)
    x_train = np.stack([rng.integers(0, num_users, RATINGS), rng.integers(0, num_movies, RATINGS)], axis=1)
    ratings = rng.choice(np.arange(min_rating, max_rating + 0.5, 0.5), RATINGS).astype(np.float32)
    y_train = (ratings - min_rating) / (max_rating - min_rating)
    return {"x": x_train, "y": y_train, "batch_size": (changes or {}).get("batch_size", 128)}


def model(changes=None):
    changes = changes or {}
    inputs = layers.Input(shape=(2,))
    m = RecommenderNet(num_users, num_movies, EMBEDDING_SIZE, changes.get("regularizer", 1e-6))
    m(inputs)
    opt = keras.optimizers.Adam(learning_rate=0.001, **changes.get("optimizer", {}))  # ADAPTED: Keras 3 has no `lr`
    compile_args = dict(loss=tf.keras.losses.BinaryCrossentropy(), optimizer=opt)
    compile_args.update(changes.get("compile", {}))
    m.compile(**compile_args)
    return m


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    model().fit(**data(), epochs=EPOCHS, verbose=1)
