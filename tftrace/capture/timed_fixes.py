"""Measured what-ifs for `confirm=True`: the fix of each top finding that can be applied in
process, timed on a copy of the user's model.

The copy is the model rebuilt from its config, given the model's weights, and compiled from its
compile config with one change (without a metric, without regularizers, in float32, with
`jit_compile` turned over, with more steps per execution, without `run_eagerly`, with plain SGD,
a layer at half its filters or units where its width is not the model's output).
Each is timed by Keras' own `fit` over one batch held in memory, beside the copy compiled as the
user compiled it: the difference is what the fix saves in the step. The user's model, optimizer
and data are never touched; the random generators the copy draws from are put back. A fix that
cannot be applied so (a callback, an input pipeline's code) is not timed here.
"""

from __future__ import annotations

import copy
import re
import statistics
import time
import types

from tftrace.capture.sidecar import output_layers

MAX_WHATIFS = 4  # fixes timed after one call: each copy compiles, so each costs a few seconds
_SPE = re.compile(r"steps_per_execution=(\d+)")


def plans(findings, model) -> list[dict]:
    """One plan per finding whose fix can be applied to a copy: {id, fix, change}; `findings` are
    (id, kind, subject, recommendation) of the run's ranked bottlenecks."""
    cfg = _compile_config(model)
    out = []
    for fid, kind, subject, recommendation in findings:
        change = _change(kind, subject, recommendation, cfg, model)
        if change is not None:
            out.append({"id": fid, **change})
        if len(out) >= MAX_WHATIFS:
            break
    return out


def _change(kind: str, subject: str, recommendation: str, cfg: dict | None, model) -> dict | None:
    if cfg is None:
        return None
    if kind == "metric" and _metric_names(cfg.get("metrics")):
        return {"fix": f"compiled without the metric {subject}", "compile": {"metrics": "drop:" + subject}}
    if kind == "regularizer":
        return {"fix": "every layer without its weight regularizers", "edit": _without(_REGULARIZER, None)}
    if kind in ("precision", "casts") and _policy(model) != "float32":
        return {"fix": "every layer in float32", "edit": _without(_DTYPE, "float32")}
    if kind == "xla_cpu" and cfg.get("jit_compile") not in (False, None):
        return {"fix": "compiled with jit_compile=False", "compile": {"jit_compile": False}}
    if kind == "eager" and cfg.get("run_eagerly"):
        return {"fix": "compiled with run_eagerly=False", "compile": {"run_eagerly": False}}
    if kind == "small_steps":
        m = _SPE.search(recommendation)
        spe = int(m.group(1)) if m else 32
        return {"fix": f"compiled with steps_per_execution={spe}", "compile": {"steps_per_execution": spe},
                "spe": spe}
    if kind == "optimizer":
        if "no momentum" in recommendation:  # the sparse tables' fix: only the rows a batch looks up updated
            return {"fix": "trained with plain SGD (no momentum, the same learning rate)",
                    "compile": {"optimizer": ("sgd", 0.0)}}
        return {"fix": "trained with plain SGD (momentum 0.9, the same learning rate)",
                "compile": {"optimizer": ("sgd", 0.9)}}
    if kind == "layer":
        return _narrower(model, subject)
    if kind in ("host_overhead", "device_idle") and "jit_compile=True" in recommendation \
            and cfg.get("jit_compile") in (False, None, "auto"):
        return {"fix": "compiled with jit_compile=True", "compile": {"jit_compile": True}}
    return None


def _narrower(model, name: str) -> dict | None:
    """A layer's fix names fewer filters or units first: the copy with half as many (its weights
    fresh: their shapes change; a step's time does not depend on their values)."""
    try:
        layer = model.get_layer(name)
    except Exception:  # not a layer of the model's own (a nested one, or a name the trace made up)
        return None
    attr = next((a for a in ("filters", "units") if isinstance(getattr(layer, a, None), int)), None)
    if attr is None or getattr(layer, attr) < 2 or name in output_layers(model):  # its width is the task's
        return None
    n = getattr(layer, attr)
    return {"fix": f"layer {name} with half its {attr} ({n} -> {n // 2})", "edit": _halved(name, attr),
            "fresh_weights": True}


# Each copy is timed this many times, in turns with the others, and its median round kept.
ROUNDS = 5


def run(model, batch, planned: list[dict], steps: int) -> list[dict]:
    """Each plan timed against the copy compiled as the user compiled it: {id, fix, baseline_ms,
    fixed_ms, steps, how} per plan, or {id, fix, error} where the copy could not be made or run.
    The copies run in turns, ROUNDS times, and each figure is its median round."""
    if not planned:
        return []
    rng = _RandomState()
    try:
        try:
            base = _Fitted(model, batch, {}, steps)
        except Exception as e:  # no copy of this model can be made: each fix says why, none is timed
            return [{"id": p["id"], "fix": p["fix"], "error": f"{type(e).__name__}: {e}"[:300]} for p in planned]
        fitted, out = [], []
        for plan in planned:
            entry = {"id": plan["id"], "fix": plan["fix"]}
            try:
                fitted.append((entry, _Fitted(model, batch, plan, steps)))
            except Exception as e:  # a fix this model does not take: said, never raised
                entry["error"] = f"{type(e).__name__}: {e}"[:300]
            out.append(entry)
        times = {id(f): [] for f in [base] + [f for _e, f in fitted]}
        for _ in range(ROUNDS):
            for f in [base] + [f for _e, f in fitted]:
                times[id(f)].append(f.ms())
        base_ms = statistics.median(times[id(base)])
        for entry, f in fitted:
            entry.update(baseline_ms=round(base_ms, 4), fixed_ms=round(statistics.median(times[id(f)]), 4),
                         steps=f.per_call,
                         how=f"Keras fit over one batch held in memory, each step from one batch's begin to the next, a "
                             f"copy of the model against a copy compiled as yours, in turns, the median of {ROUNDS} "
                             "rounds' median steps")
        return out
    finally:
        rng.restore()


class _Fitted:
    """A copy of `model` changed by `plan`, compiled and warmed up (its first fit traces and
    compiles); `ms()` is the median step of a fit over `batch` repeated, each step timed from one
    batch's begin hook to the next (the fit call's own start-up and end left out)."""

    def __init__(self, model, batch, plan: dict, steps: int):
        self.clone = _copy(model, plan.get("edit"), plan.get("fresh_weights", False))
        with _known(model):
            self.clone.compile_from_config(_changed(_compile_config(model), plan.get("compile", {})))
        self.spe = max(plan.get("spe", 1), 1)
        self.size = _rows(batch)
        self.per_call = self.spe * max(steps, MIN_STEPS)
        self.x, self.y = _tiled(batch, self.per_call)
        self.clock = _clock()
        self._fit(self.spe * 2)  # traces and compiles

    def _fit(self, steps: int) -> None:
        self.clone.fit(self.x, self.y, batch_size=self.size, epochs=1, steps_per_epoch=steps, verbose=0,
                       shuffle=False, callbacks=[self.clock])

    def ms(self) -> float:
        self.clock.starts = []
        self._fit(self.per_call)
        gaps = [b - a for a, b in zip(self.clock.starts[1:], self.clock.starts[2:])]  # the first two: warm-up
        return statistics.median(gaps) * 1e3 / self.spe if gaps else float("nan")


MIN_STEPS = 12  # steps a round at least: their median is the round's figure


def _clock():
    """A Keras callback noting when each batch (of steps_per_execution steps) begins; on JAX, each
    batch's end waits for its work, or the host would run ahead of it."""
    import keras

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.starts: list[float] = []
            self.jax = keras.backend.backend() == "jax"  # asked once: each hook runs inside the timed steps

        def on_train_batch_begin(self, batch, logs=None):
            self.starts.append(time.perf_counter())

        def on_train_batch_end(self, batch, logs=None):
            if self.jax:
                import jax
                jax.block_until_ready([v.value for v in self.model.trainable_variables[:1]])

    return Clock()


def _copy(model, edit=None, fresh_weights: bool = False):
    """The model rebuilt from its config, changed by `edit` (a config in, a config out), given its
    weights, or fresh ones where the change alters their shapes."""
    import keras
    edit = edit or (lambda config: config)
    try:
        with _known(model):
            clone = type(model).from_config(edit(model.get_config()))
    except Exception as first:  # a custom layer not registered for deserialising: each layer from its own config
        try:
            clone = keras.models.clone_model(
                model, clone_function=lambda layer: type(layer).from_config(edit(layer.get_config())))
        except Exception:
            raise first from None
    if fresh_weights:
        return clone
    weights = model.get_weights()
    clone.set_weights([w.astype(v.dtype) if hasattr(w, "astype") else w
                       for w, v in zip(weights, [keras.ops.convert_to_numpy(v) for v in clone.weights])])
    return clone


def _known(model):
    """A scope where Keras finds, by name, every class the live model is made of (its layers, loss,
    optimizer, metrics) and its loss functions: a custom one the user never registered for
    deserialising still copies, since the model holds it."""
    import keras
    objects = {}
    for obj in _parts(model):
        if isinstance(obj, types.FunctionType):
            objects[obj.__name__] = obj
            continue
        cls = type(obj)
        objects[cls.__name__] = cls
        try:
            objects[keras.saving.get_registered_name(cls)] = cls
        except Exception:  # a class Keras cannot name: its own name serves
            pass
    return keras.saving.custom_object_scope(objects)


def _parts(model) -> list:
    """The model's layers (nested ones too), its losses, optimizer and compiled metrics (those a
    metrics container holds too)."""
    flatten = getattr(model, "_flatten_layers", None)
    out = list(flatten(include_self=False, recursive=True)) if callable(flatten) else list(getattr(model, "layers", []))
    loss = getattr(model, "loss", None)
    losses = list(loss.values()) if isinstance(loss, dict) else list(loss) if isinstance(loss, (list, tuple)) else [loss]
    out += [o for o in losses + [getattr(model, "optimizer", None)] if o is not None and not isinstance(o, str)]
    todo = list(getattr(model, "metrics", None) or [])
    while todo:
        m = todo.pop()
        out.append(m)
        inner = getattr(m, "metrics", None) if type(m).__name__ == "CompileMetrics" else None
        todo.extend(inner or [])
    return out


_REGULARIZER, _DTYPE = re.compile(r".*_regularizer\Z"), re.compile(r"dtype\Z")


def _without(key: re.Pattern, value):
    """A config edit: every entry whose key matches set to `value`."""
    return lambda config: _mapped(config, lambda d: {k: (value if key.match(k) else v) for k, v in d.items()})


def _halved(name: str, attr: str):
    """A config edit: the layer called `name` (wherever the config holds it) with half its `attr`,
    and no layer's saved build shapes, so the layers after it are built for its new width."""
    def halve(d: dict) -> dict:
        d = {k: v for k, v in d.items() if k != "build_config"}
        return {**d, attr: max(d[attr] // 2, 1)} if d.get("name") == name and isinstance(d.get(attr), int) else d
    return lambda config: _mapped(config, halve)


def _mapped(config, entry):
    """A deep copy of a Keras config with each dict, its own entries mapped first, passed through `entry`."""
    if isinstance(config, dict):
        return entry({k: _mapped(v, entry) for k, v in config.items()})
    if isinstance(config, list):
        return [_mapped(v, entry) for v in config]
    return copy.deepcopy(config)


def _compile_config(model) -> dict | None:
    try:
        cfg = model.get_compile_config()
    except Exception:  # never compiled, or a Keras without compile configs
        return None
    return cfg if isinstance(cfg, dict) else None


def _changed(cfg: dict, change: dict) -> dict:
    out = copy.deepcopy(cfg)
    for k, v in change.items():
        if k == "metrics" and isinstance(v, str) and v.startswith("drop:"):
            out["metrics"] = _drop_metric(out.get("metrics"), v[len("drop:"):])
        elif k == "optimizer" and isinstance(v, tuple) and v[0] == "sgd":
            out["optimizer"] = _sgd(out.get("optimizer"), momentum=v[1])
        else:
            out[k] = v
    return out


def _sgd(optimizer_config, momentum: float = 0.9) -> dict:
    rate = 0.01
    if isinstance(optimizer_config, dict):
        value = optimizer_config.get("config", {}).get("learning_rate", rate)
        rate = value if isinstance(value, (int, float)) else rate
    return {"module": "keras.optimizers", "class_name": "SGD", "config": {"learning_rate": rate, "momentum": momentum},
            "registered_name": None}


def _metric_names(metrics) -> list[str]:
    names = []
    for m in (metrics if isinstance(metrics, (list, tuple)) else [metrics] if metrics else []):
        if isinstance(m, str):
            names.append(m)
        elif isinstance(m, dict):
            names.append(str(m.get("config", {}).get("name", m.get("class_name", ""))))
    return names


def _drop_metric(metrics, name: str):
    """The compiled metrics without the one named `name` (by its name or its class)."""
    if not isinstance(metrics, (list, tuple)):
        return metrics
    keep = []
    for m in metrics:
        names = {str(m)} if isinstance(m, str) else \
            {str(m.get("config", {}).get("name", "")), str(m.get("class_name", ""))} if isinstance(m, dict) else set()
        if name.lower() not in {n.lower() for n in names}:
            keep.append(m)
    return keep


def _policy(model) -> str:
    policy = getattr(model, "dtype_policy", None)
    return str(getattr(policy, "name", policy or "float32"))


def _rows(batch) -> int:
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    while isinstance(first, (tuple, list, dict)):
        first = next(iter(first.values())) if isinstance(first, dict) else first[0]
    return int(first.shape[0])


def _tiled(batch, times: int):
    """(x, y) as numpy arrays: the batch repeated `times` times along its first axis."""
    import numpy as np
    import keras

    def tile(v):
        if isinstance(v, dict):
            return {k: tile(a) for k, a in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(tile(a) for a in v)
        a = keras.ops.convert_to_numpy(v)
        return np.concatenate([a] * times, axis=0)

    x, y = (batch[0], batch[1]) if isinstance(batch, (tuple, list)) and len(batch) > 1 else (batch, None)
    return tile(x), (tile(y) if y is not None else None)


class _RandomState:
    """The random generators a copy's initializers and fit draw from, put back afterwards: Keras'
    global seed generator, NumPy's and Python's global states, TensorFlow's global generator."""

    def __init__(self):
        import random

        import numpy as np
        self.python, self.numpy = random.getstate(), np.random.get_state()
        self.keras = self.tf = None
        try:
            from keras.src.random.seed_generator import global_seed_generator
            gen = global_seed_generator()
            self.keras = (gen.state, gen.state.numpy().copy())
        except Exception:  # no global generator made yet, or a Keras without one
            pass
        try:
            import sys
            tf = sys.modules.get("tensorflow")
            if tf is not None:
                gen = tf.random.get_global_generator()
                self.tf = (gen, gen.state.numpy().copy())
        except Exception:
            pass

    def restore(self) -> None:
        import random

        import numpy as np
        random.setstate(self.python)
        np.random.set_state(self.numpy)
        if self.keras is not None:
            self.keras[0].assign(self.keras[1])
        if self.tf is not None:
            self.tf[0].state.assign(self.tf[1])
