"""JAX-zoo programs whose cause is owned by something the user configured or wrote (a metric, a
weight penalty, a host callback left in a jitted step), each with its fixed twin; registered
in capture_jax_zoo.PROGRAMS and run by it (`python sample_traces/capture_jax_zoo.py --only NAME`).
Each is drawn from a public guide: Keras' metrics and regularizers docs, JAX's docs on
`jax.debug.callback` (a host callback stops the device's work until Python answers)."""

from __future__ import annotations


def _helpers():
    import capture_jax_zoo as z  # imported when a program runs: capture_jax_zoo imports this module
    return z


def keras_metric_auc():
    """Keras 3 on JAX: a binary classifier compiled with an AUC metric of 200,000 thresholds; its
    confusion counts are updated over every threshold on every training batch. Fixed twin: no AUC
    in fit's metrics (computed in evaluate)."""
    import keras
    import numpy as np
    z = _helpers()
    rng = np.random.default_rng(0)
    n = 256
    x = rng.random((n * 30, 512), dtype=np.float32)
    y = rng.integers(0, 2, n * 30).astype("float32")

    def model(metrics):
        m = keras.Sequential([keras.Input((512,)), keras.layers.Dense(1024, activation="relu", name="hidden"),
                              keras.layers.Dense(1, name="out")], name="auc_mlp")
        m.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True), metrics=metrics)
        return m

    slow = model([keras.metrics.AUC(num_thresholds=200_000, name="auc", from_logits=True)])
    out = z._keras_program(slow, model([]), z._ArrayFeed(x, y, n), 18, 18, (4, 9))
    out.update(bound=["compute", "host_overhead", "idle"], cause="metric", names=["AUC"],
               fix="no AUC metric in fit (computed in evaluate)")
    return out


def keras_regularizer():
    """Keras 3 on JAX: a 2048-wide Dense layer with an L2 kernel regularizer, trained with SGD:
    the penalty and its gradient touch all 4M weights every step. Fixed twin: no regularizer."""
    import keras
    import numpy as np
    z = _helpers()
    rng = np.random.default_rng(0)
    n = 16
    x = rng.random((n * 30, 2048), dtype=np.float32)
    y = rng.random((n * 30, 1), dtype=np.float32)

    def model(reg):
        m = keras.Sequential([keras.Input((2048,)),
                              keras.layers.Dense(2048, activation="relu", name="hidden", kernel_regularizer=reg),
                              keras.layers.Dense(1, name="out")], name="reg_mlp")
        m.compile(keras.optimizers.SGD(0.001), "mse")
        return m

    out = z._keras_program(model(keras.regularizers.L2(1e-4)), model(None), z._ArrayFeed(x, y, n), 18, 18, (4, 9))
    out.update(bound=["compute", "host_overhead", "idle"], cause="regularizer", names=["regularizer"],
               fix="no kernel regularizer")
    return out


def jax_host_callback():
    """A jitted train step that calls `jax.debug.callback` every step to log statistics in numpy
    (JAX's docs: a host callback makes the computation wait for Python): left in from debugging.
    Fixed twin: the same step without the callback."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    z = _helpers()
    params, x, y, train_step = z._mlp(512, 3, 256)
    log = []

    def record(loss, h):  # numpy statistics of an activation, on the host, every step
        h = np.asarray(h)
        log.append((float(loss), float(np.percentile(h, 99)), float(np.std(h))))

    def with_callback(params, x, y):
        params, loss = train_step(params, x, y)
        h = jnp.tanh(x @ params[0][0])
        jax.debug.callback(record, loss, h)
        return params, loss

    slow_step, fixed_step = jax.jit(with_callback), jax.jit(train_step)
    state = {"s": params, "f": params}

    def slow():
        state["s"], loss = slow_step(state["s"], x, y)
        loss.block_until_ready()

    def fixed():
        state["f"], loss = fixed_step(state["f"], x, y)
        loss.block_until_ready()

    return {"slow": slow, "fixed": fixed, "capture": z._annotated(slow, 6), "steps": 6, "how": z.ANNOTATED,
            "bound": ["compute", "host_overhead", "idle"], "cause": "debug_ops", "names": ["callback"],
            "fix": "no jax.debug.callback in the jitted step"}


PROGRAMS = {f.__name__: f for f in (keras_metric_auc, keras_regularizer, jax_host_callback)}
