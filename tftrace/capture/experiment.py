"""The experiments behind `confirm`: a pipeline alone, a step alone, `predict` against direct calls.

Each returns the raw figures (a dict, saved beside a run as `tftrace_experiment.json`); what
they mean against a trace's verdict is analysis's job (`tftrace.analysis.confirmation`)."""

from __future__ import annotations

import json
import os
import time

from tftrace.capture import backend as backends, data_source
from tftrace.capture.state import Snapshot, variables_of
from tftrace.capture.step_functions import STEP_FUNCTIONS
from tftrace.capture.timing import time_batches, time_each
from tftrace.model.layout import EXPERIMENT
MIN_BATCHES, MAX_BATCHES = 3, 50
MIN_TIMED_S = 0.2  # calls of a few ms are repeated for this long: a median of five is noise


def new(kind: str, mode: str, n: int) -> dict:
    from tftrace.model.version import VERSION
    return {"kind": kind, "mode": mode, "batches": n, "skipped": [], "error": "",
            "tftrace_version": VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def batches_for(window_steps: int) -> int:
    """About the capture window's length: the experiment costs about twice the window."""
    return max(MIN_BATCHES, min(MAX_BATCHES, int(window_steps or 0)))


def keras_call(model, call: str, n: int, budget_s: float | None = None, findings=()) -> dict:
    """Input alone and step alone for the running Keras `call` (fit, evaluate or predict), with
    every variable of the model, its optimizer and its metrics put back bit for bit. `budget_s`:
    the capture window's wall time. Short step calls are repeated for at most half of it: the
    input's batches already take about 1.5 windows when input-bound (as slow as the window's
    steps, and half as many again untimed first), so the experiment stays near twice the window.
    `findings`: the captured run's top bottlenecks (id, kind, subject, recommendation): after a
    fit, the fix of each that applies to a copy of the model is timed (capture/timed_fixes.py).
    """
    raw = new("step", call, n)
    min_s = MIN_TIMED_S if budget_s is None else min(MIN_TIMED_S, budget_s / 2)
    jax, torch = backends.keras_backend() == backends.JAX, backends.keras_backend() == backends.TORCH
    randoms = None
    try:
        epoch_iterator = data_source.keras_epoch_iterator(model, call)
        if torch:  # its batches come from torch DataLoaders, its steps are Python (capture/experiment_torch)
            from tftrace.capture import experiment_torch
            randoms = experiment_torch.RandomState()  # before the DataLoader draws its seed from torch's generator
            source = experiment_torch.batches(epoch_iterator)
        else:
            source = data_source.batches(epoch_iterator, jax=jax)
    except data_source.Unavailable as e:
        raw["skipped"].append(f"input alone and step alone: {e}")
        if randoms is not None:
            randoms.restore()
        return raw
    except BaseException:
        if randoms is not None:
            randoms.restore()
        raise
    snapshot = Snapshot(variables_of(model))
    try:
        timed, batch = time_batches(source, n)
        raw.update(input_alone_ms=timed.ms, input_batches=timed.count)
        # Gone before the step is timed: its prefetch threads would go on filling their buffers.
        del source
        if batch is None:
            raw["skipped"].append("step alone: the data holds no batch")
            return raw
        if jax:
            from tftrace.capture.experiment_jax import step_call
        elif torch:
            step_call = experiment_torch.step_call
        else:
            step_call = _step_call
        step = time_each(step_call(model, call, batch), n, min_s=min_s)[0]
        raw.update(step_alone_ms=step.ms, step_calls=step.count)
        if call == "predict":
            raw.update(predict_alternatives(model, _features(batch), n, min_s / 4))
        elif call == "fit" and findings:
            from tftrace.capture import timed_fixes
            try:
                raw["whatifs"] = timed_fixes.run(model, batch, timed_fixes.plans(findings, model), n)
            except Exception as e:  # the input and the step are measured: keep them, say what failed
                raw["skipped"].append(f"the fixes' what-ifs: {type(e).__name__}: {e}"[:300])
    finally:
        snapshot.restore()
        if randoms is not None:
            randoms.restore()
    return raw


def _step_call(model, call: str, batch):
    """One step of the call's own compiled step function on `batch`, held in memory: fed from a
    tf.data iterator that repeats it, as the call's own iterator would feed it, so the step runs
    as in the call with no pipeline work behind it. (predict's step takes the batch itself.)"""
    import tensorflow as tf
    name = STEP_FUNCTIONS[call]
    getattr(model, "make_" + name)()  # built by the call already; built here if it was not
    fn = getattr(model, name)
    if call == "predict":
        return lambda: fn([batch])
    held = iter(tf.data.Dataset.from_tensors(batch).repeat())
    return lambda: fn(held)


def _features(batch):
    """x of an (x,), (x, y) or (x, y, sample_weight) batch."""
    return batch[0] if isinstance(batch, tuple) else batch


def predict_alternatives(model, x, n: int, min_s: float = MIN_TIMED_S) -> dict:
    """ms per call of `model.predict(x)` and of the ways to get the same outputs without its
    per-call work (a fresh data pipeline, callbacks, batching), each checked against predict's.
    `function_call` is the model compiled as one call: a tf.function, or `jax.jit` on Keras' JAX
    backend (of the model's stateless call, its variables passed in); none on torch."""
    calls = {"predict": lambda: model.predict(x, verbose=0),
             "predict_on_batch": lambda: model.predict_on_batch(x),
             "direct_call": lambda: model(x, training=False)}
    if backends.keras_backend() == backends.JAX:
        from tftrace.capture.experiment_jax import compiled_call, flatten
    elif backends.keras_backend() == backends.TORCH:  # no compiled call: torch.compile would compile in the fit
        from tftrace.capture.experiment_torch import flatten
        compiled_call = None
    else:
        compiled_call, flatten = _tf_function_call, _tf_flatten
    if compiled_call is not None:
        calls["function_call"] = compiled_call(model, x)
    return _compare(calls, n, min_s, flatten)


def _tf_function_call(model, x):
    import tensorflow as tf
    function = tf.function(lambda v: model(v, training=False))
    return lambda: function(x)


def _tf_flatten(value) -> list:
    import tensorflow as tf
    return tf.nest.flatten(value)


def _compare(calls: dict, n: int, min_s: float, flatten) -> dict:
    """ms per call of each of `calls` (the first, predict, the reference), and whether each other
    gives its outputs."""
    import numpy as np
    out: dict = {"correct": {}}
    expected = None
    for name, call in calls.items():
        timed, result = time_each(call, n, min_s=min_s)
        out[name + "_ms"] = timed.ms
        flat = [np.asarray(v) for v in flatten(result)]
        if expected is None:
            expected = flat
        else:
            out["correct"][name] = len(flat) == len(expected) and all(
                a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(flat, expected))
    return out


def save(run_dir: str, raw: dict) -> str:
    path = os.path.join(run_dir, EXPERIMENT)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(raw, f, indent=2, sort_keys=True)
    return path
