# Copyright the keras-io authors (fchollet).
# Licensed under the Apache License, Version 2.0: see ../LICENSE.
# Origin: keras-team/keras-io, examples/generative/vae.py
# (commit 09e02e17d5cbf21ecf8a47f10d91587f963fc80a), "Variational AutoEncoder".
# Adapted for tftrace's held-out programs (each change marked ADAPTED): synthetic 28x28 digits
# instead of MNIST, fewer of them, Keras 3's random normal in the sampling layer; the encoder,
# decoder, custom train_step and compile are the example's.
"""Variational AutoEncoder (keras-io): a convolutional VAE with a custom train_step."""
# The `changes` each function takes are the fixes tftrace's findings offer, applied as written
# (sample_traces/time_real.py); without them the program is the example's.

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

EPOCHS = 2
DIGITS = 8 * 128  # ADAPTED: 8 batches of the example's batch size, not MNIST's 70000 digits


class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)  # ADAPTED: Keras 3 random

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = tf.shape(z_mean)[0]
        dim = tf.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)  # ADAPTED
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


latent_dim = 2


def _encoder():
    encoder_inputs = keras.Input(shape=(28, 28, 1))
    x = layers.Conv2D(32, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    x = layers.Conv2D(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Flatten()(x)
    x = layers.Dense(16, activation="relu")(x)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = Sampling()([z_mean, z_log_var])
    return keras.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")


def _decoder(filters=(64, 32)):
    latent_inputs = keras.Input(shape=(latent_dim,))
    x = layers.Dense(7 * 7 * 64, activation="relu")(latent_inputs)
    x = layers.Reshape((7, 7, 64))(x)
    x = layers.Conv2DTranspose(filters[0], 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Conv2DTranspose(filters[1], 3, activation="relu", strides=2, padding="same")(x)
    decoder_outputs = layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(x)
    return keras.Model(latent_inputs, decoder_outputs, name="decoder")


class VAE(keras.Model):
    def __init__(self, encoder, decoder, **kwargs):
        super(VAE, self).__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
        self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [
            self.total_loss_tracker,
            self.reconstruction_loss_tracker,
            self.kl_loss_tracker,
        ]

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            reconstruction_loss = tf.reduce_mean(
                tf.reduce_sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2))
            )
            kl_loss = -0.5 * (1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var))
            kl_loss = tf.reduce_mean(tf.reduce_sum(kl_loss, axis=1))
            total_loss = reconstruction_loss + kl_loss
        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        self.reconstruction_loss_tracker.update_state(reconstruction_loss)
        self.kl_loss_tracker.update_state(kl_loss)
        return {
            "loss": self.total_loss_tracker.result(),
            "reconstruction_loss": self.reconstruction_loss_tracker.result(),
            "kl_loss": self.kl_loss_tracker.result(),
        }

    def call(self, x):
        z_mean, z_log_var, z = self.encoder(x)
        return self.decoder(z)


def data(changes=None):
    # ADAPTED: uniform noise in [0, 1] of MNIST's shape instead of keras.datasets.mnist
    rng = np.random.default_rng(1337)
    mnist_digits = rng.random((DIGITS, 28, 28, 1)).astype("float32")
    return {"x": mnist_digits, "batch_size": (changes or {}).get("batch_size", 128)}


def model(changes=None):
    changes = changes or {}
    vae = VAE(_encoder(), _decoder(changes.get("decoder_filters", (64, 32))))
    compile_args = dict(optimizer=keras.optimizers.Adam())
    compile_args.update(changes.get("compile", {}))
    vae.compile(**compile_args)
    return vae


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    model().fit(**data(), epochs=EPOCHS)
