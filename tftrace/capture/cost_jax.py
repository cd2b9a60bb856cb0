"""A Keras-on-JAX step's FLOPs from XLA's own cost analysis of the compiled step.

The trainer's own jitted step function is lowered for the batch's shapes and the model's state's
shapes (no values are read or passed, nothing is donated or run): where the call ran it with the
same shapes, JAX's caches hold that lowering and its executable, so this costs milliseconds. A
model whose step JAX does not jit (run_eagerly, jit_compile=False) gets a fresh jit of Keras'
step, compiled here once. The count is the step's, not split by layer: the trace's HLO carries
the scopes for that."""

from __future__ import annotations

from tftrace.capture.experiment_jax import _STATE
from tftrace.capture.step_functions import STEP_FUNCTIONS

_CALLS = {"train": "fit", "test": "evaluate", "predict": "predict"}


def step_flops(model, mode: str, structure) -> tuple[float, str]:
    """(FLOPs of one step of `mode` on a batch of `structure` (Leafs), how they were counted)."""
    import jax
    import numpy as np
    from tftrace.capture.batch_spec import nest_map
    call = _CALLS[mode]
    state = model._get_jax_state(**{k: True for k in _STATE[call]})
    state = jax.tree.map(lambda v: jax.ShapeDtypeStruct(np.shape(v), v.dtype), state)
    data = nest_map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, np.dtype(leaf.dtype)), structure)
    jitted = _trainer_jit(getattr(model, STEP_FUNCTIONS[call], None))
    how = "the trainer's jitted step"
    if jitted is None:
        jitted, how = jax.jit(getattr(model, f"{mode}_step")), f"a jit of {type(model).__name__}.{mode}_step"
    cost = jitted.lower(state, data).compile().cost_analysis()
    if isinstance(cost, (list, tuple)):  # older JAX: one dict per device program
        cost = cost[0] if cost else {}
    flops = float((cost or {}).get("flops", -1.0))
    if flops < 0:
        raise ValueError("XLA's cost analysis gave no FLOP count for this step")
    return flops, f"XLA's cost analysis of {how}, compiled for this batch (jax {jax.__version__})"


def _trainer_jit(fn, depth: int = 0):
    """The jitted step inside Keras' step function (its closures hold it): an object JAX can lower."""
    if fn is None or depth > 4:
        return None
    if hasattr(fn, "lower") and hasattr(fn, "trace"):  # not `concatenate`, jitted beside it for predict
        return fn if "step" in str(getattr(fn, "__name__", "")) else None
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found = _trainer_jit(cell.cell_contents, depth + 1)
        except ValueError:  # an empty cell
            continue
        if found is not None:
            return found
    return None
