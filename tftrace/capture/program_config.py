"""The program's configuration for the sidecar: what decides a step's cost and is not in the
trace (the compiled loss and metrics, each weight's regularizer and constraint, the optimizer and
its extras, dtype policies, callbacks, how the step runs, the input's kind, the distribution
strategy). Each part is read on its own: one that fails is left out, never the capture."""

from __future__ import annotations

# Optimizer settings that add work to every step (EMA, clipping, weight decay, loss scaling,
# accumulation), recorded when set.
_EXTRAS = ("use_ema", "clipnorm", "global_clipnorm", "clipvalue", "weight_decay", "loss_scale_factor",
           "gradient_accumulation_steps", "amsgrad")
# Layer settings that decide how a layer runs (a layout, a fused kernel, unrolling).
_LAYER_SETTINGS = ("data_format", "unroll", "recurrent_dropout", "use_cudnn", "activation", "dtype")


def program_config(model, callbacks=(), data=None) -> dict:
    """A JSON-able description; parts that cannot be read are absent."""
    out: dict = {}
    for key, read in (("loss", _loss), ("metrics", _metrics), ("weights", _weights), ("optimizer", _optimizer),
                      ("layer_config", _layer_config), ("steps_per_execution", _steps_per_execution),
                      ("jit_compile", lambda m: str(getattr(m, "jit_compile", ""))),
                      ("run_eagerly", lambda m: bool(getattr(m, "run_eagerly", False))),
                      ("distribution", _distribution), ("trainable_weights", lambda m: len(m.trainable_weights))):
        try:
            value = read(model)
        except Exception:  # a model this Keras does not describe so: the fact stays unknown
            continue
        if value not in (None, "", [], {}):
            out[key] = value
    try:
        out["callbacks"] = [_callback(c) for c in callbacks]
    except Exception:
        pass
    if data is not None:
        out["input"] = data
    return out


def _loss(model) -> str:
    loss = getattr(model, "loss", None)
    if loss is None:
        return ""
    if isinstance(loss, str):
        return loss
    name = getattr(loss, "name", None) or getattr(loss, "__name__", None)
    return str(name or type(loss).__name__)


def _metrics(model) -> list[dict]:
    compiled = getattr(model, "_compile_metrics", None)
    metrics = list(getattr(compiled, "metrics", []) or []) if compiled is not None else []
    out = []
    for m in metrics:
        cfg = {}
        try:
            cfg = {k: v for k, v in m.get_config().items() if k not in ("name", "dtype") and _small(v)}
        except Exception:
            pass
        args = ", ".join(f"{k}={v}" for k, v in sorted(cfg.items()))
        out.append({"name": m.name, "class": type(m).__name__, "config": f"{type(m).__name__}({args})"})
    return out


def _weights(model) -> list[dict]:
    """Weights that carry a regularizer or a constraint (each adds ops to every step)."""
    out = []
    for w in model.weights:
        reg, con = getattr(w, "regularizer", None), getattr(w, "constraint", None)
        if reg is None and con is None:
            continue
        entry = {"weight": _weight_name(w), "shape": [int(d) for d in w.shape]}
        if reg is not None:
            entry["regularizer"] = _described(reg)
        if con is not None:
            entry["constraint"] = _described(con)
        out.append(entry)
    return out


def _weight_name(w) -> str:
    """`layer.kernel`, from Keras 3's path `model/layer/kernel`."""
    path = str(getattr(w, "path", "") or getattr(w, "name", ""))
    parts = [p for p in path.split("/") if p]
    return ".".join(parts[-2:]) if len(parts) >= 2 else path


def _described(obj) -> str:
    try:
        cfg = {k: v for k, v in obj.get_config().items() if _small(v)}
    except Exception:
        cfg = {}
    args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(cfg.items()))
    return f"{type(obj).__name__}({args})"


def _optimizer(model) -> dict:
    opt = getattr(model, "optimizer", None)
    if opt is None:
        return {}
    inner = getattr(opt, "inner_optimizer", None)
    cfg = (inner or opt).get_config()
    extras = [k if cfg[k] is True else f"{k}={cfg[k]}" for k in _EXTRAS if cfg.get(k) not in (None, False, 0)]
    if inner is not None:
        extras.append(f"loss scaling ({type(opt).__name__})")
    return {"class": type(inner or opt).__name__, "name": str(cfg.get("name", "")), "extras": extras}


def layers_of(model) -> list:
    """Every layer, nested models' layers included, in model order."""
    seen = []
    stack = list(getattr(model, "layers", []) or [])[::-1]
    while stack:
        layer = stack.pop()
        seen.append(layer)
        inner = getattr(layer, "layers", None)
        if inner:
            stack.extend(list(inner)[::-1])
    return seen


def _layer_config(model) -> dict:
    out = {}
    for layer in layers_of(model):
        try:
            cfg = layer.get_config()
        except Exception:
            continue
        shown = []
        for k in _LAYER_SETTINGS:
            v = cfg.get(k)
            if v is None or (k == "dtype" and not isinstance(v, str)):
                continue
            shown.append(f"{k}={v}")
        if shown:
            out[layer.name] = ", ".join(shown)
    return out


def _steps_per_execution(model):
    value = getattr(model, "steps_per_execution", None)
    try:
        return int(value)
    except Exception:
        return None


def _distribution(model) -> str:
    strategy = getattr(model, "distribute_strategy", None)
    return type(strategy).__name__ if strategy is not None else ""


def _callback(c) -> dict:
    """A callback's class and whether it overrides a per-batch hook (Keras then waits for each
    batch's logs on the main thread, unless it declares itself async_safe)."""
    import keras
    base = keras.callbacks.Callback
    hooks = [h for h in ("on_batch_end", "on_train_batch_end", "on_test_batch_end", "on_predict_batch_end",
                         "on_train_batch_begin") if getattr(type(c), h, None) is not getattr(base, h, None)]
    return {"class": type(c).__name__, "batch_hooks": hooks, "async_safe": bool(getattr(c, "async_safe", False))}


def _small(v) -> bool:
    return isinstance(v, (int, float, str, bool)) and len(str(v)) <= 60
