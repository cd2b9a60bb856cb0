"""A Keras-on-torch step's FLOPs per layer and phase, by torch's FlopCounterMode on zeros of the batch's shapes.

The pass (on one example, scaled to the batch where two examples count twice one; else on the
batch) is the step without its update: the model's call (training=True for fit), its loss, and
the gradients of the loss with respect to the trainable weights through `torch.autograd.grad`
(returned, never accumulated into `.grad`); the optimizer does not run. FlopCounterMode counts
what torch registers formulas for (matmuls, convolutions and their gradients, attention);
elementwise ops count nothing, so the optimizer's update would count nothing either. What the
pass changes (seed generators' states, normalization statistics, metric and loss trackers) is
put back bit for bit, and torch's random state with it."""

from __future__ import annotations

from typing import NamedTuple


class TorchCount(NamedTuple):
    layers: dict  # {layer: {"forward", "backward"}}, each layer's own (its sublayers' apart)
    other: dict  # {"loss", "rest"}: counted outside every layer
    step_flops: float


def count(model, mode: str, structure, batch_size: int) -> tuple[TorchCount, str]:
    """(The step's count, how the batch was counted.) The pass runs the step's arithmetic for real, so
    a batch of more than 8 is counted on one example, and its forward pass on two: where two count
    exactly twice one (each of torch's formulas grows with the batch, as long as the model treats its
    examples apart; a loss over pairs of examples does not), the one-example count times the batch is
    the batch's; otherwise the whole batch is counted."""
    from tftrace.capture.batch_spec import Leaf, nest_map
    from tftrace.capture.program_config import layers_of
    layers = [layer for layer in layers_of(model) if type(layer).__name__ != "InputLayer"]
    if batch_size > 8:
        def examples(n):
            return nest_map(lambda leaf: Leaf((n, *leaf.shape[1:]), leaf.dtype), structure)
        try:
            one = _pass(model, mode, examples(1), layers)
            two = _pass(model, mode, examples(2), layers, gradients=False)[0]
        except Exception:  # a model made for its batch size (a fixed batch dimension): count the batch
            one = two = None
        if one is not None and set(two) == set(one[0]) and all(two[k] == 2 * v for k, v in one[0].items()):
            scaled = [{k: v * batch_size for k, v in part.items()} for part in one]
            return _split(layers, *scaled), f"counted on one example (two: twice one's) times {batch_size}"
    return _split(layers, *_pass(model, mode, structure, layers)), "counted on the batch"


def _pass(model, mode: str, structure, layers, gradients: bool = True) -> tuple[dict, dict]:
    """({module name: FLOPs} after the forward pass and loss, the same after the gradients)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from tftrace.capture.state import Snapshot
    x, y, weight = _unpack(_zeros(structure))
    trainable = {id(v) for v in model.trainable_variables}
    # What a forward pass may move: everything but the trainable weights (the optimizer's are not touched).
    kept = Snapshot([v for v in _variables(model) if id(v) not in trainable])
    rng = torch.get_rng_state()
    counter = FlopCounterMode(display=False, depth=None)
    _name_layers(counter, model, layers)
    train = mode == "train"
    try:
        with counter, torch.set_grad_enabled(train):
            y_pred = model(x, training=True) if train else model(x, training=False)
            loss = None
            if mode != "predict":
                compute = getattr(model, "_compute_loss", None) or model.compute_loss
                loss = compute(x=x, y=y, y_pred=y_pred, sample_weight=weight, training=train)
            forward = _totals(counter)
            if train and gradients and model.trainable_variables:
                weights = [v.value for v in model.trainable_variables]
                torch.autograd.grad(loss, weights, allow_unused=True)
        total = _totals(counter)
    finally:
        kept.restore()
        torch.set_rng_state(rng)
    return forward, total


def _split(layers, forward: dict, total: dict) -> TorchCount:
    out = {}
    for layer in layers:
        subs = [s.name for s in getattr(layer, "layers", None) or ()]
        own_f = forward.get(layer.name, 0) - sum(forward.get(s, 0) for s in subs)
        own_t = total.get(layer.name, 0) - sum(total.get(s, 0) for s in subs)
        if own_t:
            out[layer.name] = {"forward": float(own_f), "backward": float(own_t - own_f)}
    step = float(total.get("Global", 0))
    inside = float(total.get(_MODEL, 0))
    # The loss runs outside the model's call: what the pass counted there is the loss's.
    return TorchCount(out, {"loss": step - inside, "rest": inside - sum(sum(v.values()) for v in out.values())},
                      step)


_MODEL = "\x00model"  # the model's own name in the counter, apart from any layer's


def _name_layers(counter, model, layers) -> None:
    """FlopCounterMode names modules by class (`Dense`, twice for two Dense layers) and their torch
    children: Keras layers are neither, so each is named for the counter by its Keras name first."""
    known = getattr(getattr(counter, "mod_tracker", None), "_known_modules", None)
    if known is None:
        raise RuntimeError("this torch's FlopCounterMode names no modules (torch.utils.module_tracker changed)")
    known[model] = _MODEL
    for layer in layers:
        known[layer] = layer.name


def _totals(counter) -> dict:
    return {name: sum(per_op.values()) for name, per_op in counter.get_flop_counts().items()}


def _zeros(structure):
    import torch
    from keras.src.backend.torch.core import get_device

    from tftrace.capture.batch_spec import nest_map
    device = get_device()
    return nest_map(lambda leaf: torch.zeros(leaf.shape, dtype=getattr(torch, leaf.dtype), device=device), structure)


def _unpack(data):
    if isinstance(data, tuple) and len(data) in (1, 2, 3):
        return (*data, None, None)[:3]
    return data, None, None


def _variables(model) -> list:
    """The model's variables and its metrics' (not its optimizer's: no update runs)."""
    from tftrace.capture.state import variables_of
    return variables_of(list(model.variables) + list(getattr(model, "metrics_variables", None) or ()))
