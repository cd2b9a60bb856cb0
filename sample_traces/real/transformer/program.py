# Copyright the keras-io authors (Apoorv Nandan; converted to Keras 3 by Sitam Meur).
# Licensed under the Apache License, Version 2.0: see ../LICENSE.
# Origin: keras-team/keras-io, examples/nlp/text_classification_with_transformer.py
# (commit 1909c6710cd3f5af6401f1176dcee9e26781b4f3), "Text classification with Transformer".
# Adapted for tftrace's held-out programs (each change marked ADAPTED): synthetic word indices
# instead of the IMDB download, fewer reviews, no validation pass; the layers, the model and the
# compile are the example's.
"""Text classification with Transformer (keras-io): a transformer block as a Keras layer."""
# The `changes` each function takes are the fixes tftrace's findings offer, applied as written
# (sample_traces/time_real.py); without them the program is the example's.

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers, ops  # noqa: E402

EPOCHS = 2


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential(
            [
                layers.Dense(ff_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output)
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions


vocab_size = 20000  # Only consider the top 20k words
maxlen = 200  # Only consider the first 200 words of each movie review
REVIEWS = 16 * 32  # ADAPTED: 16 batches, not IMDB's 25000 reviews


def data(changes=None):
    # ADAPTED: zipf-distributed word indices, padded as pad_sequences does, instead of keras.datasets.imdb
    rng = np.random.default_rng(1337)
    reviews = [np.minimum(rng.zipf(1.3, int(rng.integers(20, 400))), vocab_size - 1) for _ in range(REVIEWS)]
    x_train = keras.utils.pad_sequences(reviews, maxlen=maxlen)
    y_train = rng.integers(0, 2, REVIEWS)
    return {"x": x_train, "y": y_train, "batch_size": (changes or {}).get("batch_size", 32)}


embed_dim = 32  # Embedding size for each token
num_heads = 2  # Number of attention heads
ff_dim = 32  # Hidden layer size in feed forward network inside transformer


def model(changes=None):
    changes = changes or {}
    inputs = layers.Input(shape=(maxlen,))
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, changes.get("ff_dim", ff_dim))
    x = transformer_block(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    m = keras.Model(inputs=inputs, outputs=outputs)
    compile_args = dict(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    compile_args.update(changes.get("compile", {}))
    m.compile(**compile_args)
    return m


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    model().fit(**data(), epochs=EPOCHS)
