"""confirm's calls on Keras' JAX backend: the trainer's jitted step on a held batch, and a jitted predict."""

from __future__ import annotations

import itertools

from tftrace.capture.step_functions import STEP_FUNCTIONS

# The state each of the trainer's step functions takes, in its order (JAXTrainer._get_jax_state).
_STATE = {"fit": ("trainable_variables", "non_trainable_variables", "optimizer_variables", "metrics_variables"),
          "evaluate": ("trainable_variables", "non_trainable_variables", "metrics_variables"),
          "predict": ("trainable_variables", "non_trainable_variables")}


def step_call(model, call: str, batch):
    """One step of the call's own jitted step function on `batch`, held on the device: the
    function is the trainer's (`model.train_function`...), fed an iterator that repeats the batch,
    as the call's own iterator would feed it, so the step runs with no input work behind it."""
    import jax
    import jax.numpy as jnp

    name = STEP_FUNCTIONS[call]
    getattr(model, "make_" + name)()  # built by the call already; built here if it was not
    fn = getattr(model, name)
    # Copies: the trainer's jit donates the state (the buffers passed in are deleted), and the
    # model's own variables must stay as they are. Each call's new state feeds the next.
    state = [jax.tree.map(jnp.copy, model._get_jax_state(**{k: True for k in _STATE[call]}))]
    held = itertools.repeat(jax.device_put(batch))

    def one():
        logs, state[0] = fn(state[0], held)
        return logs

    return one


def compiled_call(model, x):
    """`model` compiled as one jitted call (its stateless call, variables passed in, not captured
    as constants), the JAX twin of a tf.function around `model(x, training=False)`."""
    import jax
    import jax.numpy as jnp

    kwargs = {"training": False} if getattr(model, "_call_has_training_arg", True) else {}
    # Copies: predict_on_batch donates the variables' own buffers to its step (they are deleted).
    trainable = [jnp.copy(v.value) for v in model.trainable_variables]
    non_trainable = [jnp.copy(v.value) for v in model.non_trainable_variables]
    fn = jax.jit(lambda t, nt, v: model.stateless_call(t, nt, v, **kwargs)[0])
    return lambda: fn(trainable, non_trainable, x)


def flatten(value) -> list:
    import keras
    return keras.tree.flatten(value)
