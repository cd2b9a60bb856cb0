"""FLOPs of a Keras layer's call from its weights' shapes and its output shape, for the kinds where the count is exact.

A multiply-add counts as two FLOPs and a bias add as one per output, as TensorFlow's op statistics
count MatMul, Conv2D and BiasAdd; activations count nothing (TensorFlow registers no count for them).
Layers of other kinds, or whose shapes cannot be read, have no count here (None)."""

from __future__ import annotations

# Kinds by class name (Keras 3 and tf.keras alike), the first in a layer's class hierarchy wins.
_DENSE = {"Dense"}
_CONV = {"Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D"}
_DEPTHWISE = {"DepthwiseConv1D", "DepthwiseConv2D"}
_SEPARABLE = {"SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D", "SeparableConvolution2D"}
_TRANSPOSE = {"Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "Convolution2DTranspose",
              "Convolution3DTranspose"}
_FREE = {"Embedding"}  # a gather: no arithmetic
_RNN_GATES = {"SimpleRNN": 1, "LSTM": 4, "GRU": 3}  # matmul blocks per timestep


def kind(layer) -> str:
    for cls in type(layer).__mro__:
        name = cls.__name__
        for group, label in ((_DENSE, "dense"), (_CONV, "conv"), (_DEPTHWISE, "depthwise"),
                             (_SEPARABLE, "separable"), (_TRANSPOSE, "transpose"), (_FREE, "free")):
            if name in group:
                return label
        if name in _RNN_GATES:
            return "rnn"
    return ""


def forward(layer, batch_size: int) -> float | None:
    """One call's FLOPs on a batch of `batch_size`, or None where not exact or not readable."""
    try:
        k = kind(layer)
        if not k:
            return None
        if k == "free":
            return 0.0
        if k == "rnn":
            return _rnn(layer, batch_size)
        out = _elements(layer.output.shape, batch_size)
        bias = out if getattr(layer, "use_bias", False) else 0
        if k == "dense":
            return float(2 * _dim(layer.kernel.shape[0]) * out + bias)
        if k == "conv":
            window, per_group_in = _window(layer.kernel.shape), _dim(layer.kernel.shape[-2])
            return float(2 * window * per_group_in * out + bias)
        if k == "depthwise":
            return float(2 * _window(_depthwise_kernel(layer).shape) * out + bias)
        if k == "separable":
            depth = layer.depthwise_kernel.shape
            channels = _dim(depth[-2]) * _dim(depth[-1])  # the depthwise output's channels
            positions = out // _dim(layer.pointwise_kernel.shape[-1])
            return float(2 * _window(depth) * positions * channels + 2 * channels * out + bias)
        if k == "transpose":  # every input element meets the whole kernel window of each filter
            kernel = layer.kernel.shape  # (window..., filters, channels in)
            return float(2 * _window(kernel) * _dim(kernel[-2]) * _elements(layer.input.shape, batch_size) + bias)
    except Exception:  # an unbuilt layer, a layer called on several inputs: no exact count
        return None
    return None


def backward(layer, forward_flops: float, trainable: bool) -> float:
    """The backward pass of a layer counted as above: its weights' gradient and its input's
    (each about a forward pass of matmuls), for a frozen layer the input's only. An upper bound:
    a first layer's input needs no gradient, and TensorFlow drops that work."""
    if kind(layer) in ("free", ""):
        return 0.0
    return float(forward_flops * (2 if trainable else 1))


def _rnn(layer, batch_size: int) -> float | None:
    """The recurrent layer's matmuls and bias adds over its timesteps (the gates' elementwise math not
    counted, as TensorFlow's op statistics count only part of it)."""
    cell = getattr(layer, "cell", layer)
    shape = layer.input.shape  # (batch, timesteps, features)
    steps, features = _dim(shape[1]), _dim(shape[2])
    units = _dim(cell.units)
    gates = _RNN_GATES[next(c.__name__ for c in type(layer).__mro__ if c.__name__ in _RNN_GATES)]
    per_step = 2 * gates * units * (features + units)
    if getattr(cell, "use_bias", True):
        per_step += gates * units * (2 if getattr(cell, "reset_after", False) else 1)
    return float(batch_size * steps * per_step)


def _depthwise_kernel(layer):
    kernel = getattr(layer, "depthwise_kernel", None)
    return kernel if kernel is not None else layer.kernel


def _window(kernel_shape) -> int:
    n = 1
    for d in list(kernel_shape)[:-2]:
        n *= _dim(d)
    return n


def _elements(shape, batch_size: int) -> int:
    dims = list(shape)
    n = int(batch_size)
    for d in dims[1:]:
        n *= _dim(d)
    return n


def _dim(d) -> int:
    value = getattr(d, "value", d)  # tf.keras' Dimension
    if value is None:
        raise ValueError("a dimension is not known")
    return int(value)
