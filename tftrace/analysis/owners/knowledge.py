"""What a step should not pay for, or pays too much for: op types and patterns the public
performance guides name, each with what puts it in a step, its evidence in TF and XLA traces,
its fix in each framework's idiom, and how its projection is made.

Sources (read for what they say, in our own words here): TensorFlow's "Optimize TensorFlow
performance using the Profiler" and "Better performance with tf.function" guides, the tf.data
performance guide, the mixed precision guide, Keras' API docs (layers' `data_format`, metrics,
regularizers, constraints, optimizers' `use_ema` / `clipnorm`), XProf's smart-suggestion rules
(debug ops, host-to-device copies, input-bound thresholds) and JAX's docs on host callbacks
(`jax.debug.print`, `jax.debug.callback`, `jax.pure_callback`) and GPU performance tips.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    """One kind of work a step should not pay for (or pays too much for)."""

    key: str  # the finding's kind
    title: str  # what it is, in a phrase
    tf_types: frozenset  # TF op types that are its evidence
    xla_types: frozenset  # XLA (HLO) op types or custom-call targets that are
    why: str  # what puts it in a step
    fixes: dict  # framework (tensorflow | jax) -> the fix, in that framework's idiom
    projection: str  # how the finding projects the step without it


KNOWN = (
    Known("debug_ops", "debugging and logging ops inside the step",
          frozenset({"CheckNumerics", "CheckNumericsV2", "Assert", "PrintV2", "Print", "StringFormat", "AsString",
                     "StringJoin", "DebugIdentity", "DebugIdentityV2", "DebugNumericSummaryV2"}),
          frozenset({"xla_python_cpu_callback", "xla_ffi_python_cpu_callback", "xla_python_gpu_callback",
                     "xla_ffi_python_gpu_callback", "debug_callback", "debug_print"}),
          "tf.print, tf.debugging.check_numerics / assert_* (or jax.debug.print / jax.debug.callback) run on every "
          "step; each one waits for its inputs, and a host callback stops the device until Python answers",
          {"tensorflow": "Remove the `tf.print` / `tf.debugging.*` calls from the layers and the train step (or guard "
                         "them with a Python flag so they are not traced in), or run the check every N steps in a "
                         "callback on the logs.",
           "jax": "Remove `jax.debug.print` / `jax.debug.callback` from the jitted step, or return the values and "
                  "print them outside the step every N steps."},
          "the step without the ops' own time and their share of the step's dispatch"),
    Known("python_op", "Python run inside the graph",
          frozenset({"PyFunc", "EagerPyFunc", "PyFuncStateless"}),
          frozenset({"pure_callback", "io_callback"}),
          "tf.py_function / tf.numpy_function (or jax.pure_callback / io_callback) call back into Python under the "
          "GIL on every step, and the graph waits for it",
          {"tensorflow": "Write the function with TensorFlow ops so it stays in the graph (or move it into the input "
                         "pipeline, ahead of the step, or precompute it).",
           "jax": "Write the callback's work with jax.numpy inside the jitted function, or precompute it."},
          "the step without the ops' own time"),
    Known("layout", "layout transposes around convolutions",
          frozenset({"Transpose", "TransposeNHWCToNCHW", "TransposeNCHWToNHWC", "DataFormatVecPermute"}),
          frozenset({"transpose", "transpose_copy_fusion"}),
          "a convolution given `data_format='channels_first'` on a device whose kernels want channels-last (every "
          "CPU, and TensorFlow's GPU kernels under mixed precision) is run between two transposes of its activations",
          {"tensorflow": "Build the model channels-last (`data_format='channels_last'`, the default; or "
                         "`keras.config.set_image_data_format('channels_last')`) and transpose the input once, in "
                         "the input pipeline.",
           "jax": "Build the model channels-last (`data_format='channels_last'`) and transpose the input once, "
                  "in the input pipeline."},
          "the step without the transposes' time and their share of the step's dispatch"),
    Known("casts", "dtype conversions",
          frozenset({"Cast"}), frozenset({"convert", "convert_element_type"}),
          "inputs or weights in another dtype than the layers compute in (float64 arrays fed to a float32 model, a "
          "layer with its own dtype, mixed precision on a device that has no fast float16) are converted every step",
          {"tensorflow": "Give the data the model's compute dtype in the input pipeline (`.map(lambda x, y: "
                         "(tf.cast(x, 'float32'), y))` once, or `astype('float32')`), and keep one dtype policy for "
                         "every layer: float32 on CPU, mixed_bfloat16 / mixed_float16 only on GPU and TPU.",
           "jax": "Give the arrays the model's dtype once, outside the step (`x.astype(jnp.float32)`), and keep one "
                  "dtype policy for every layer."},
          "the step without the conversions' time"),
    Known("while_loop", "a loop run op by op inside the graph",
          frozenset({"While", "StatelessWhile", "TensorListReserve", "TensorListSetItem", "TensorListGetItem",
                     "TensorListFromTensor", "TensorListStack"}),
          frozenset({"while"}),
          "tf.map_fn over a batch's elements, a recurrent layer that cannot use its fused kernel (LSTM/GRU with a non-default activation, "
          "recurrent_dropout, or unroll=False on long sequences) or a Python loop traced into tf.while_loop runs "
          "its body step by step",
          {"tensorflow": "Vectorise the loop: apply the function to the whole batch at once (the same ops on the "
                         "batch axis, or `tf.vectorized_map`) instead of `tf.map_fn` over its elements; keep LSTM/GRU "
                         "on their fused kernel (default activations, recurrent_dropout=0).",
           "jax": "Use `jax.lax.scan` over the sequence and keep its body small, or vectorise it."},
          "not projected from the trace: the fused form's cost is not in it"),
)

BY_KEY = {k.key: k for k in KNOWN}
_BY_TF = {t: k for k in KNOWN for t in k.tf_types}
_BY_XLA = {t: k for k in KNOWN for t in k.xla_types}


def known(op_type: str, xla: bool) -> Known | None:
    """The entry an op type is evidence of, if any."""
    return (_BY_XLA if xla else _BY_TF).get(op_type)


# Op types a compiled metric runs outside every layer (Keras 3 on TF names no metric scope):
# confusion-matrix counts over thresholds (AUC, PrecisionAtRecall...), top-k, argmax accuracy.
METRIC_TYPES = frozenset({"Cumsum", "UnsortedSegmentSum", "Bucketize", "TopKV2", "InTopKV2", "ArgMax"})
# A weight penalty's ops (L1: Abs, Sign; L2: Square, Mul), summed into the loss, and their gradients.
REGULARIZER_TYPES = frozenset({"Square", "Abs", "Sign", "Sum", "Mul", "AddN", "AddV2", "L2Loss", "Neg"})
# Keras' own per-step bookkeeping outside every scope: the loss tracker's mean, the iteration count.
BOOKKEEPING_TYPES = frozenset({"AssignAddVariableOp", "AssignVariableOp", "ReadVariableOp", "DivNoNan",
                               "VarHandleOp", "_EagerConst", "Identity", "NoOp"})
