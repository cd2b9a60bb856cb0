"""`tftrace.confirm` and `tftrace.confirm_predict`: measure, on your own model and data, what a
trace's verdict infers."""

from __future__ import annotations

import inspect
import os
import sys

from tftrace.capture import data_source, experiment
from tftrace.capture.state import Snapshot, variables_of
from tftrace.capture.timing import time_batches, time_each


def confirm(step_fn, dataset, steps: int = 10, log_dir: str | None = None, restore="auto", unpack: bool | None = None):
    """Time a custom loop's parts apart: `dataset` alone (a fresh iterator, ms per batch),
    `step_fn` alone on one batch held in memory (ms per step), and the loop of both.

    `restore`: what `step_fn` changes and the experiment puts back afterwards: "auto" (the
    variables a tf.function's graph captures: weights, optimizer slots, metrics), a list of
    models, optimizers or variables, or None. `unpack`: call `step_fn(*batch)` rather than
    `step_fn(batch)`; by default, when the batch is a tuple and `step_fn` takes that many
    arguments. `log_dir`: save the figures beside the newest run there (or in that run's folder),
    so `tftrace analyze` shows them next to the trace's verdict. Returns an Experiment
    (`.to_dict()` for its fields)."""
    if not callable(step_fn):
        raise TypeError(f"step_fn must be callable, not {type(step_fn).__name__}")
    n = experiment.batches_for(steps)
    raw = experiment.new("step", "custom", n)
    batches = _fresh(dataset)
    timed, batch = time_batches(batches, n)
    raw.update(input_alone_ms=timed.ms, input_batches=timed.count)
    del batches  # its prefetch threads would go on working while the step is timed
    if batch is None:
        raw["skipped"].append("step alone: the dataset holds no batch")
        return _done(raw, log_dir)
    call = _caller(step_fn, batch, unpack)
    snapshot = Snapshot(_restorable(step_fn, call, batch, restore, raw))
    try:
        raw["step_alone_ms"] = time_each(lambda: call(batch), n, min_s=experiment.MIN_TIMED_S)[0].ms
        raw["loop_ms"] = time_batches(_fresh(dataset), n, each=call)[0].ms
    finally:
        snapshot.restore()
    return _done(raw, log_dir)


def confirm_predict(model, x, repeats: int = 10, log_dir: str | None = None):
    """Time `model.predict(x)`, `model.predict_on_batch(x)`, `model(x, training=False)` and a
    tf.function-wrapped call on the same `x` (median of `repeats` calls each), check each gives
    predict's outputs, and name the fastest. `log_dir` as for `confirm`. Returns an Experiment."""
    n = experiment.batches_for(repeats)
    raw = experiment.new("predict", "predict", n)
    raw.update(experiment.predict_alternatives(model, x, n))
    return _done(raw, log_dir)


def _fresh(dataset):
    """An iterator over `dataset` from its start; refused for one that is itself an iterator."""
    if iter(dataset) is dataset:
        raise TypeError("dataset is an iterator (a generator?): it cannot be read twice; pass the dataset "
                        "(a tf.data.Dataset, a list, or anything iter() restarts)")
    tf = sys.modules.get("tensorflow")  # a tf.data.Dataset means TensorFlow is imported; a JAX loop must not pay for it
    if tf is not None and isinstance(dataset, getattr(getattr(tf, "data", None), "Dataset", ())):
        return iter(data_source.unshuffled(dataset))
    return iter(dataset)


def _caller(step_fn, batch, unpack: bool | None):
    if unpack is None:
        unpack = isinstance(batch, tuple) and _positional(step_fn) == len(batch)
    return (lambda b: step_fn(*b)) if unpack else step_fn


def _positional(fn) -> int | None:
    """How many positional arguments `fn` (or the Python function inside a tf.function) takes."""
    try:
        params = inspect.signature(getattr(fn, "python_function", fn)).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in kinds)


def _restorable(step_fn, call, batch, restore, raw: dict) -> list:
    if restore is None:
        return []
    if restore != "auto":
        return variables_of(*(restore if isinstance(restore, (list, tuple)) else [restore]))
    concrete = getattr(step_fn, "get_concrete_function", None)
    if concrete is None:
        raw["notes"] = ["step_fn is not a tf.function: the variables it changed were not put back "
                        "(pass restore=[model, optimizer])"]
        return []
    args = tuple(batch) if call is not step_fn else (batch,)
    # Tracing is not running: a graph already traced for this batch is reused, its captures known.
    return variables_of(list(concrete(*args).variables))


def _done(raw: dict, log_dir: str | None):
    from tftrace.analysis.confirmation import interpret
    if log_dir is not None:
        raw["saved_to"] = experiment.save(_newest_run(log_dir), raw)
    return interpret(raw)


def _newest_run(log_dir: str) -> str:
    """The folder of the newest run under `log_dir` (or of the run `log_dir` is)."""
    from tftrace.read.logdir import find_runs
    folders = [r.path if os.path.isdir(r.path) else os.path.dirname(r.path) for r in find_runs(log_dir)]
    return max(folders, key=os.path.getmtime)
