"""Capture: everything that imports TensorFlow or Keras, imported lazily."""
