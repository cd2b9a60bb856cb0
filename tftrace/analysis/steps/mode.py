"""What the run was doing (train, evaluate, predict), from step markers, the capture sidecar, the
function names Keras 3 and tf.keras give their step functions, and the ops that ran."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from tftrace.analysis.ops import OpEntry
from tftrace.analysis.steps.found import Steps
from tftrace.model.events import Trace
from tftrace.model.names import jit_function

_MARKERS = {"train": "train", "test": "evaluate", "eval": "evaluate", "evaluate": "evaluate",
            "predict": "predict", "infer": "predict", "inference": "predict",
            "profiled batch": "train"}  # Keras 3's TensorBoard callback profiles training batches only
_SIDECAR = {"fit": "train", "evaluate": "evaluate", "predict": "predict"}
# Step functions whose name alone says the mode (tf.keras; Keras 3's predict).
_NAMED = {"train_function": "train", "distributed_train_function": "train", "test_function": "evaluate",
          "predict_function": "predict", "one_step_on_data_distributed": "predict", "multi_step_on_data": "predict"}
# Keras 3 runs fit and evaluate through the same functions: the ops tell them apart.
_SHARED = {"multi_step_on_iterator", "one_step_on_iterator", "one_step_on_data"}
_MODEL_CATEGORIES = {"matmul", "convolution", "reduction", "elementwise", "activation", "normalization", "pooling"}


class Mode(NamedTuple):
    mode: str  # train | evaluate | predict | mixed | unknown
    source: str  # how it was found, in words


def run_mode(trace: Trace, steps: Steps, table: list[OpEntry]) -> Mode:
    modes = {_MARKERS[n.lower()] for n in steps.names if n.lower() in _MARKERS} if steps.kind == "marker" else set()
    if len(modes) > 1:
        return Mode("mixed", "step markers")
    if modes:
        return Mode(modes.pop(), "step markers")
    if str(trace.sidecar.get("mode", "")) in _SIDECAR:
        return Mode(_SIDECAR[trace.sidecar["mode"]], "capture sidecar")
    jax = _jax_step_modes(trace)
    if len(jax) == 1:
        return Mode(jax.pop(), "the jitted step function's name")
    functions = _step_functions(trace)
    named = {_NAMED[f] for f in functions if f in _NAMED}
    if len(named) > 1:
        return Mode("mixed", "Keras function names")
    if named:
        return Mode(named.pop(), "Keras function names")
    by_ops = _from_ops(table)
    if functions & _SHARED:  # fit or evaluate (Keras 3 predicts through other functions)
        return Mode("train" if by_ops == "train" else "evaluate", "Keras function names and the ops inside them")
    if by_ops:
        return Mode(by_ops, "ops (a custom loop: no Keras step function)")
    return Mode("unknown", "")


# Keras 3's JAX trainer names its step functions so (jitted: `PjitFunction(train_step)`; run
# eagerly: the tracer's `$trainer.py:123 train_step`); JAX loops often do the same.
_JAX_STEPS = {"train_step": "train", "test_step": "evaluate", "eval_step": "evaluate", "predict_step": "predict"}


# A compiled module's run on the device, named after its function (`jit_train_step(22)`; PyTorch/XLA's
# `train_step.312(8846...)`).
_MODULE = re.compile(r"(?:jit_)?(?P<fn>[A-Za-z_]\w*?)(?:\.\d+)?\(\d+\)\Z")


def _jax_step_modes(trace: Trace) -> set[str]:
    out = set()
    for name in trace.names:
        fn = jit_function(name)
        if fn is None and name.startswith("$trainer.py:"):
            fn = name.rsplit(" ", 1)[-1]
        if fn is None and name.endswith(")") and (m := _MODULE.match(name)) is not None:
            fn = m["fn"]
        if fn in _JAX_STEPS:
            out.add(_JAX_STEPS[fn])
    return out


def _step_functions(trace: Trace) -> set[str]:
    codes = trace.codes(set(_NAMED) | _SHARED)
    if not codes:
        return set()
    mask = trace.named(codes) & trace.on_lines(lambda ln: ln.role == "python")
    return {trace.names[c] for c in np.flatnonzero(np.bincount(trace.events["name"][mask])).tolist()}


def _from_ops(table: list[OpEntry]) -> str:
    """Gradients or optimizer updates mean training; a loss without them, evaluation; the
    model's ops alone, inference."""
    if any(e.phase == "backward" or e.category == "optimizer" for e in table):
        return "train"
    if any(e.category == "loss" for e in table):
        return "evaluate"
    return "predict" if any(e.category in _MODEL_CATEGORIES for e in table) else ""
