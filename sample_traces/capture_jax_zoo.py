"""Regenerate the JAX zoo of planted causes: `python sample_traces/capture_jax_zoo.py [--only NAME ...]`.

The JAX mirror of capture_zoo.py: small JAX and Keras-3-on-JAX programs on the CPU, each with one
planted reason to be slow and a fixed twin that differs only by that reason's fix. For each, this
script (every program in its own subprocess, `JAX_PLATFORMS=cpu`, `KERAS_BACKEND=jax`):

1. compiles and warms up, then times the slow and the fixed program without the profiler,
   alternating slow and fixed runs a few times (median ms per step over all untraced steps; for
   Keras, two fits of different lengths differenced, as _fit_time does), so `ratio = fixed / slow`
   is the gain the fix really brings;
2. captures the slow program once, the stock JAX way: `jax.profiler.start_trace(logdir)` /
   `stop_trace()` (JAX's Python tracer on, as by default), around a custom loop (with or without
   `StepTraceAnnotation`) or from a Keras callback at batch begin/end, into
   `jax_zoo/<name>/plugins/profile/run/sample.xplane.pb` (JAX's `*.trace.json.gz` is dropped);
3. writes `jax_zoo/ground_truth.json`: per program the timings, the ratio, the bounds a right
   analysis may give, the cause (a bottleneck `kind`) diagnosis must name, and `steps`, the
   number of steps inside the trace window.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "jax_zoo")
ROUNDS = 3  # alternating slow / fixed runs
STEPS_PER_ROUND = 6  # untraced steps a round: >= 15 per side in all


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def per_step_ms(fn, n):
    """Wall ms of each of n calls of fn(); fn synchronises on its own result."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


# -- raw JAX --------------------------------------------------------------------------------------

def _mlp(width, depth, batch, inputs=None, seed=0):
    """Parameters, a batch and an (un-jitted) SGD train step of a plain MLP."""
    import jax
    import jax.numpy as jnp
    inputs = inputs or width
    keys = jax.random.split(jax.random.PRNGKey(seed), depth + 2)
    dims = [inputs] + [width] * (depth - 1) + [1]
    params = [(jax.random.normal(k, (a, b), jnp.float32) / a ** 0.5, jnp.zeros((b,), jnp.float32))
              for k, a, b in zip(keys[:depth], dims[:-1], dims[1:])]
    x = jax.random.normal(keys[-2], (batch, inputs), jnp.float32)
    y = jax.random.normal(keys[-1], (batch, 1), jnp.float32)

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return jnp.mean(((h @ w + b) - y) ** 2)

    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss

    return params, x, y, train_step


def _annotated(body, steps):
    def run():
        import jax
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                body()
    return run


def _plain(body, steps):
    def run():
        for _ in range(steps):
            body()
    return run


ANNOTATED = "jax.profiler.start_trace/stop_trace around a custom loop, StepTraceAnnotation('train') per step"
PLAIN = "plain jax.profiler.start_trace/stop_trace around a custom loop (no step annotation)"
WINDOW = "jax.profiler.start_trace/stop_trace from a Keras callback at train batch begin/end (batches {}..{})"


def jax_input():
    """A jitted MLP train step waits every step for its batch, built on the host by a numpy
    load_batch() that runs an FFT per row, then jax.device_put."""
    import jax
    import numpy as np
    width, batch = 256, 128
    params, _, y, train_step = _mlp(width, 3, batch)
    train_step = jax.jit(train_step)
    rng = np.random.default_rng(0)

    def load_batch():  # what a hand-written loader does: per-sample numpy work
        rows = [np.abs(np.fft.fft2(rng.random((96, 96)))).ravel()[:width] for _ in range(batch)]
        return np.stack(rows).astype(np.float32)

    state = {"p": params}
    # The fix as the finding words it: the next batch loaded in a background thread while this
    # step runs (the loading still happens every step; it no longer waits for the step, nor the
    # step for it). numpy's FFT releases the GIL, so the two overlap.
    pool = ThreadPoolExecutor(1)
    ahead = {"next": pool.submit(load_batch)}

    def slow():
        state["p"], loss = train_step(state["p"], jax.device_put(load_batch()), y)
        loss.block_until_ready()

    def fixed():
        batch = ahead["next"].result()
        ahead["next"] = pool.submit(load_batch)
        state["p"], loss = train_step(state["p"], jax.device_put(batch), y)
        loss.block_until_ready()

    return {"slow": slow, "fixed": fixed, "capture": _annotated(slow, 6), "steps": 6, "how": ANNOTATED,
            "bound": ["host_overhead", "idle", "input"], "cause": "python_function", "names": ["load_batch"],
            "fix": "load the next batch in a background thread while the step runs"}


def jax_eager():
    """The MLP train step (jax.value_and_grad and an SGD update) runs un-jitted: every op is
    dispatched from Python one at a time."""
    import jax
    params, x, y, train_step = _mlp(256, 2, 64)
    jitted = jax.jit(train_step)
    state = {"p": params}

    def slow():
        state["p"], loss = train_step(state["p"], x, y)
        loss.block_until_ready()

    def fixed():
        state["p"], loss = jitted(state["p"], x, y)
        loss.block_until_ready()

    return {"slow": slow, "fixed": fixed, "capture": _annotated(slow, 4), "steps": 4, "how": ANNOTATED,
            "bound": ["host_overhead"], "cause": "eager", "names": [], "fix": "jax.jit the train step"}


def jax_recompile():
    """A jitted train_step (a linear model, masked mean squared error, SGD) is fed a batch whose
    row count grows every step (64 + 8 i rows): every new shape is traced and compiled by XLA
    again."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    width, pad_to = 128, 512
    params, _, _, _ = _mlp(width, 1, 8)
    rng = np.random.default_rng(0)

    @jax.jit
    def train_step(params, x, y, mask):
        def loss_fn(params):
            h = x
            for w, b in params[:-1]:
                h = jax.nn.relu(h @ w + b)
            w, b = params[-1]
            err = ((h @ w + b) - y)[:, 0] ** 2
            return jnp.sum(err * mask) / jnp.sum(mask)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss

    state = {"p": params, "i": 0}

    def batch():
        state["i"] += 1
        rows = 64 + 8 * state["i"]  # a new shape on every call (never seen before)
        return (rng.random((rows, width), dtype=np.float32), rng.random((rows, 1), dtype=np.float32),
                np.ones((rows,), np.float32))

    def slow():
        state["p"], loss = train_step(state["p"], *batch())
        loss.block_until_ready()

    def fixed():  # pad every batch to one shape, masking the padding rows out of the loss
        x, y, m = batch()
        pad = pad_to - len(x)
        x, y, m = (np.pad(a, [(0, pad)] + [(0, 0)] * (a.ndim - 1)) for a in (x, y, m))
        state["p"], loss = train_step(state["p"], x, y, m)
        loss.block_until_ready()

    fixed()  # compiles the padded shape
    return {"slow": slow, "fixed": fixed, "capture": _plain(slow, 4), "steps": 4, "how": PLAIN, "warm": False,
            "bound": ["host_overhead", "idle"], "cause": "recompilation", "names": ["train_step"],
            "fix": "pad every batch to one shape (or a few buckets)"}


def jax_compute():
    """A jitted train step of a 4-layer 1024-wide MLP on batches of 512: large matmuls, the CPU's
    own work (nothing planted)."""
    import jax
    params, x, y, train_step = _mlp(1024, 4, 512)
    train_step = jax.jit(train_step)
    state = {"p": params}

    def slow():
        state["p"], loss = train_step(state["p"], x, y)
        loss.block_until_ready()

    return {"slow": slow, "fixed": None, "capture": _plain(slow, 6), "steps": 6, "how": PLAIN,
            "bound": ["compute"], "cause": "compute", "names": [], "skip_projection": True,
            "fix": "none (nothing planted: the matmuls' own work)"}


def jax_python_between():
    """After every jitted step the loop calls log_metrics(), which converts the loss with float()
    and keeps pure-Python statistics of a 256x256 weight matrix, 65k floats as Python numbers
    (~20 ms of host Python per step)."""
    import jax
    import numpy as np
    params, x, y, train_step = _mlp(256, 3, 128)
    train_step = jax.jit(train_step)
    state = {"p": params, "i": 0}
    history = []

    def log_metrics(loss, params):
        value = float(loss)
        w = np.asarray(params[0][0]).ravel().tolist()  # 65k floats as Python numbers
        ranked = sorted(w)
        n = len(ranked)
        mean = sum(ranked) / n
        spread, outliers = 0.0, 0
        for v in ranked:  # plain Python arithmetic, one number at a time
            spread += (v - mean) * (v - mean)
            if v > 0.15 or v < -0.15:
                outliers += 1
        median_ = ranked[n // 2]
        deviations = [v - median_ if v > median_ else median_ - v for v in ranked]
        deviations.sort()
        history.append((value, ranked[n // 20], median_, ranked[-n // 20], spread / n, outliers, deviations[n // 2]))
        return history[-1]

    def step(every):
        state["i"] += 1
        state["p"], loss = train_step(state["p"], x, y)
        if state["i"] % every == 0:
            log_metrics(loss, state["p"])
        else:
            loss.block_until_ready()

    def slow():
        step(1)

    def fixed():
        step(50)

    return {"slow": slow, "fixed": fixed, "capture": _annotated(slow, 6), "steps": 6, "how": ANNOTATED
            + " (the annotation spans the whole iteration, log_metrics included)",
            "bound": ["host_overhead", "idle"], "cause": "python_function", "names": ["log_metrics"],
            "fix": "log every 50 steps instead of every step"}


def jax_sync():
    """A custom loop reads the loss back with float(loss) after every jitted train step (for its
    log), while the next batch is made on the host with numpy (~6 ms): the read makes the host
    wait for the device every step, so making the batch never overlaps the device's work. The
    fix keeps the losses on the device and reads them once at the end."""
    import jax
    import numpy as np
    width, batch = 512, 256
    params, _, y, train_step = _mlp(width, 4, batch)
    train_step = jax.jit(train_step)
    rng = np.random.default_rng(0)

    def make_batch():  # the host's own work each step: numpy on the main thread
        a = rng.standard_normal((batch, width)).astype(np.float32)
        for _ in range(12):
            a = np.tanh(a * 1.01) + np.sin(a)
        return a

    state = {"p": params}
    log = []

    def iteration(read):
        state["p"], loss = train_step(state["p"], jax.device_put(make_batch()), y)
        log.append(float(loss) if read else loss)

    def block(read, n=4):  # n steps, then everything read back: what a fixed loop pays at its end
        for _ in range(n):
            iteration(read)
        jax.block_until_ready([state["p"], log[-n:]])
        log[-n:] = [float(v) for v in jax.device_get(log[-n:])]

    return {"slow": lambda: block(True), "fixed": lambda: block(False), "steps_per_call": 4,
            "capture": _plain(lambda: iteration(True), 8), "steps": 8, "how": PLAIN,
            "bound": ["compute", "host_overhead", "idle"], "cause": "device_sync", "names": ["float"],
            "fix": "keep the losses on the device and read them once at the end"}


def jax_h2d():
    """Every step copies a fresh 32 MB float32 batch from host memory to the device with
    jax.device_put before a small jitted step (a 256-row slice through a 2048x64 layer): the copy,
    not the model, is the step. The fix places the batches on the device once, before the loop."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    rows, width = 4096, 2048
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((rows, width)).astype(np.float32) for _ in range(3)]
    on_device = [jax.device_put(b) for b in batches]
    step = jax.jit(lambda w, x: (w - 1e-6 * (x[:256].T @ (x[:256] @ w)), jnp.mean(x)))
    state = {"w": jnp.ones((width, 64), jnp.float32) / width, "i": 0}

    def run(source):
        state["i"] += 1
        state["w"], m = step(state["w"], source(state["i"] % 3))
        m.block_until_ready()

    def slow():
        run(lambda i: jax.device_put(batches[i]))

    def fixed():
        run(lambda i: on_device[i])

    return {"slow": slow, "fixed": fixed, "capture": _plain(slow, 6), "steps": 6, "how": PLAIN,
            "bound": ["compute", "host_overhead", "idle"], "cause": "host_to_device", "names": ["device_put"],
            "fix": "place the batches on the device once, before the loop"}


# -- Keras 3 on JAX -------------------------------------------------------------------------------

class _ArrayFeed:
    """An endless batch iterator over arrays (a generator, as many Keras-on-JAX users feed fit)."""

    def __init__(self, x, y, n):
        self.x, self.y, self.n = x, y, n

    def __iter__(self):
        i = 0
        while True:
            j = (i * self.n) % (len(self.x) - self.n)
            yield self.x[j:j + self.n], self.y[j:j + self.n]
            i += 1


def _fit_time(model, feed, steps, spe=1, callbacks=()):
    """Untraced ms per batch: two timed fits of different lengths, differenced (fit's own start-up
    and the end-of-epoch sync cancel out; JAX's asynchronous dispatch cannot hide the work)."""
    callbacks = list(callbacks)
    model.fit(iter(feed), epochs=1, steps_per_epoch=2 * spe, verbose=0, callbacks=callbacks)  # compile, warm up
    short = max(spe, (steps // 3) // spe * spe)
    t = time.perf_counter()
    model.fit(iter(feed), epochs=1, steps_per_epoch=short, verbose=0, callbacks=callbacks)
    a = time.perf_counter() - t
    t = time.perf_counter()
    model.fit(iter(feed), epochs=1, steps_per_epoch=steps, verbose=0, callbacks=callbacks)
    b = time.perf_counter() - t
    return (b - a) * 1e3 / (steps - short)


def _jax_window(logdir, first, last):
    """The stock way on the JAX backend: jax.profiler around batches first..last of fit."""
    import jax
    import keras

    class ProfileWindow(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == first:
                jax.profiler.start_trace(logdir)

        def on_train_batch_end(self, batch, logs=None):
            if batch == last:
                jax.block_until_ready(self.model.trainable_variables[0].value)
                jax.profiler.stop_trace()

    return ProfileWindow()


def _keras_program(slow_model, fixed_model, feed, slow_steps, fixed_steps, window, fixed_spe=1, slow_callbacks=(),
                   fixed_callbacks=()):
    first, last = window

    def capture(logdir):
        slow_model.fit(iter(feed), epochs=1, steps_per_epoch=last + 3, verbose=0,
                       callbacks=[*slow_callbacks, _jax_window(logdir, first, last)])

    return {"slow": lambda: _fit_time(slow_model, feed, slow_steps, callbacks=slow_callbacks),
            "fixed": (lambda: _fit_time(fixed_model, feed, fixed_steps, fixed_spe, fixed_callbacks))
            if fixed_model else None,
            "capture": capture, "steps": last - first + 1, "how": WINDOW.format(first, last), "keras": True,
            "layers": [layer.name for layer in slow_model.layers]}


def keras_fit():
    """Keras 3 on JAX: a small CNN's fit on 32x32 images fed by a Python generator of numpy
    batches (nothing planted: the convolutions' own work)."""
    import keras
    import numpy as np
    rng = np.random.default_rng(0)
    n = 32
    x = rng.random((n * 20, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, n * 20)
    model = keras.Sequential([keras.Input((32, 32, 3)),
                              keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="conv2d"),
                              keras.layers.MaxPooling2D(name="pool"),
                              keras.layers.Conv2D(64, 3, padding="same", activation="relu", name="conv2d_2"),
                              keras.layers.GlobalAveragePooling2D(name="gap"),
                              keras.layers.Dense(10, name="dense")], name="fit_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    out = _keras_program(model, None, _ArrayFeed(x, y, n), 18, 0, (5, 10))
    out.update(bound=["compute", "host_overhead", "idle"], cause="compute", names=[], skip_projection=True,
               fix="none (nothing planted: the convolutions' own work)")
    return out


def keras_run_eagerly():
    """compile(run_eagerly=True), left on from debugging: Keras runs the train step un-jitted,
    every op dispatched from Python one at a time."""
    import keras
    import numpy as np
    rng = np.random.default_rng(0)
    n = 32
    x = rng.random((n * 40, 32), dtype=np.float32)
    y = rng.random((n * 40, 1), dtype=np.float32)

    def model(eager):
        m = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu", name="hidden"),
                              keras.layers.Dense(1, name="out")], name="eager_mlp" if eager else "jit_mlp")
        m.compile("sgd", "mse", run_eagerly=eager)
        return m

    out = _keras_program(model(True), model(False), _ArrayFeed(x, y, n), 18, 60, (4, 7))
    out.update(bound=["host_overhead", "idle"], cause="eager", names=["run_eagerly"],
               fix="compile(run_eagerly=False)")
    return out


def keras_slow_callback():
    """A callback's on_train_batch_end does Python bookkeeping (~20 ms) on every batch of an MLP's
    fit (a few ms a step); fixed twin: the same work once an epoch (on_epoch_end)."""
    import keras
    import numpy as np
    rng = np.random.default_rng(0)
    n = 256
    x = rng.random((n * 40, 32), dtype=np.float32)
    y = rng.random((n * 40, 1), dtype=np.float32)

    class BatchStats(keras.callbacks.Callback):
        def __init__(self, every_batch=True):
            super().__init__()
            self.every_batch = every_batch

        def _work(self):  # plain Python bookkeeping: no BLAS threads to compete with XLA's
            total = 0
            for i in range(250_000):
                total += (i * i) % 7
            self.total = total

        def on_train_batch_end(self, batch, logs=None):
            if self.every_batch:
                self._work()

        def on_epoch_end(self, epoch, logs=None):
            self._work()

    def model(name):
        m = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1024, activation="relu", name="hidden"),
                              keras.layers.Dense(1024, activation="relu", name="hidden_2"),
                              keras.layers.Dense(1, name="out")], name=name)
        m.compile("sgd", "mse")
        return m

    out = _keras_program(model("slow_cb"), model("fixed_cb"), _ArrayFeed(x, y, n), 30, 60, (5, 10),
                         slow_callbacks=[BatchStats(True)], fixed_callbacks=[BatchStats(False)])
    out.update(bound=["host_overhead", "idle"], cause="callback", names=["on_train_batch_end"],
               fix="do the callback's work once an epoch")
    return out


def keras_predict_loop():
    """A loop calls model.predict() on one image at a time: every call builds Keras' data
    adapter, epoch iterator and callback list around a jitted step of microseconds. Fixed twin:
    the model's stateless call, jitted once and reused (what predict runs, without the per-call
    machinery). Captured the plain way around the loop."""
    import jax
    import keras
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.random((64, 32, 32, 3), dtype=np.float32)
    model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(16, 3, activation="relu", name="conv"),
                              keras.layers.GlobalAveragePooling2D(name="pool"), keras.layers.Dense(10, name="head")])
    state = (model.trainable_variables, model.non_trainable_variables)
    call = jax.jit(lambda tv, ntv, batch: model.stateless_call(tv, ntv, batch)[0])
    index = {"i": 0}

    def slow():
        i = index["i"] = (index["i"] + 1) % len(x)
        return model.predict(x[i:i + 1], verbose=0)

    def fixed():
        i = index["i"] = (index["i"] + 1) % len(x)
        tv = [v.value for v in state[0]]
        ntv = [v.value for v in state[1]]
        return np.asarray(call(tv, ntv, x[i:i + 1]))

    return {"slow": slow, "fixed": fixed, "capture": _plain(slow, 8), "steps": 8, "how": PLAIN,
            "bound": ["host_overhead", "idle"], "cause": "per_call_overhead", "names": ["predict"],
            "fix": "a jitted stateless call reused across calls", "layers": [layer.name for layer in model.layers]}


def keras_small_steps():
    """fit with batch size 8 on a tiny MLP and steps_per_execution=1: every batch pays Keras' and
    JAX's per-call dispatch for microseconds of math."""
    import keras
    import numpy as np
    rng = np.random.default_rng(0)
    n = 8
    x = rng.random((n * 400, 32), dtype=np.float32)
    y = rng.random((n * 400, 1), dtype=np.float32)

    def model(spe):
        m = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu", name="hidden"),
                              keras.layers.Dense(1, name="out")], name=f"tiny_mlp_spe{spe}")
        m.compile("sgd", "mse", steps_per_execution=spe)
        return m

    out = _keras_program(model(1), model(32), _ArrayFeed(x, y, n), 300, 640, (10, 24), fixed_spe=32)
    out.update(bound=["host_overhead", "idle"], cause="small_steps", names=["steps_per_execution"],
               fix="compile(steps_per_execution=32)")
    return out


PROGRAMS = {f.__name__: f for f in (jax_input, jax_eager, jax_recompile, jax_compute, keras_fit,
                                     keras_run_eagerly, keras_small_steps, jax_python_between, keras_slow_callback,
                                     keras_predict_loop, jax_sync, jax_h2d)}
sys.path.insert(0, HERE)
import jax_zoo_owners  # noqa: E402 - causes owned by what the user configured, in their own module
PROGRAMS.update(jax_zoo_owners.PROGRAMS)


# -- one program, in its own process --------------------------------------------------------------

def _capture(name, program, root=ZOO):
    import jax
    logdir = os.path.join(root, name)
    shutil.rmtree(logdir, ignore_errors=True)
    if program.get("keras"):
        program["capture"](logdir)
    else:
        jax.profiler.start_trace(logdir)
        try:
            program["capture"]()
        finally:
            jax.profiler.stop_trace()
    found = [(d, f) for d, _, files in os.walk(logdir) for f in files if f.endswith(".xplane.pb")]
    if len(found) != 1:
        sys.exit(f"{name}: expected one .xplane.pb under {logdir}, got {found}")
    src_dir, src = found[0]
    dst_dir = os.path.join(logdir, "plugins", "profile", "run")
    tmp = os.path.join(logdir, "sample.xplane.pb.tmp")
    shutil.move(os.path.join(src_dir, src), tmp)  # a stable run and host name, so regenerated files diff cleanly
    shutil.rmtree(os.path.join(logdir, "plugins"))  # JAX's *.trace.json.gz and anything else beside it
    os.makedirs(dst_dir)
    shutil.move(tmp, os.path.join(dst_dir, "sample.xplane.pb"))
    return os.path.getsize(os.path.join(dst_dir, "sample.xplane.pb"))


def _timed(program):
    slow, fixed = [], []
    keras_ = program.get("keras")
    if not keras_:  # warm up (compile) outside the clock
        if program.get("warm", True):
            program["slow"]()
        if program["fixed"]:
            program["fixed"]()
    for _ in range(ROUNDS):
        if keras_:
            slow.append(program["slow"]())
            if program["fixed"]:
                fixed.append(program["fixed"]())
        else:  # a program whose call runs several steps (to read back once at its end) is timed per step
            k = program.get("steps_per_call", 1)
            slow += [ms / k for ms in per_step_ms(program["slow"], STEPS_PER_ROUND)]
            if program["fixed"]:
                fixed += [ms / k for ms in per_step_ms(program["fixed"], STEPS_PER_ROUND)]
    s = median(slow)
    f = median(fixed) if fixed else None
    return {"slow_ms_per_step": round(s, 3), "fixed_ms_per_step": None if f is None else round(f, 3),
            "ratio": None if f is None else round(f / s, 4)}


def run_one(name):
    import jax
    import numpy as np
    np.random.seed(0)
    if os.environ.get("KERAS_BACKEND") == "jax":
        import keras
        keras.utils.set_random_seed(0)
    t0 = time.perf_counter()
    program = PROGRAMS[name]()
    entry = {k: program[k] for k in ("how", "bound", "cause", "names", "fix", "steps", "layers", "skip_projection")
             if k in program}
    entry["what"] = " ".join(PROGRAMS[name].__doc__.split())
    entry.update(_timed(program))
    t1 = time.perf_counter()
    size = _capture(name, program)
    entry["versions"] = {"jax": jax.__version__}
    if program.get("keras"):
        import keras
        entry["versions"]["keras"] = keras.__version__
    print("RESULT " + json.dumps({"entry": entry, "bytes": size, "timing_s": round(t1 - t0, 1),
                                   "capture_s": round(time.perf_counter() - t1, 1)}), flush=True)


def main() -> None:
    import argparse
    parser = argparse.ArgumentParser(description="Regenerate the JAX zoo of planted causes and its ground truth.")
    parser.add_argument("--only", choices=sorted(PROGRAMS), action="append", help="only this program (repeatable)")
    parser.add_argument("--one", choices=sorted(PROGRAMS), help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one:
        run_one(args.one)
        return
    wanted = args.only or list(PROGRAMS)
    truth_path = os.path.join(ZOO, "ground_truth.json")
    truth = json.load(open(truth_path)) if os.path.exists(truth_path) else {}
    truth["cores"] = os.cpu_count()
    failed = []
    for name in wanted:
        t0 = time.perf_counter()
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
        if name.startswith("keras_"):
            env["KERAS_BACKEND"] = "jax"
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name], env=env,
                           capture_output=True, text=True)
        lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
        if p.returncode or not lines:
            failed.append(name)
            print(f"{name}: FAILED (rc {p.returncode})\n{(p.stderr or p.stdout)[-2000:]}", flush=True)
            continue
        result = json.loads(lines[-1][len("RESULT "):])
        entry = result["entry"]
        for key, value in entry.pop("versions").items():
            truth[key] = value
        truth[name] = entry
        print(f"{name}: {entry['slow_ms_per_step']} -> {entry['fixed_ms_per_step']} ms (x{entry['ratio']}), "
              f"{entry['steps']} steps, {result['bytes'] / 1e6:.2f} MB, timed in {result['timing_s']} s, "
              f"captured in {result['capture_s']} s, {time.perf_counter() - t0:.0f} s in all", flush=True)
        os.makedirs(ZOO, exist_ok=True)
        with open(truth_path, "w") as f:
            json.dump(truth, f, indent=2, sort_keys=True)
            f.write("\n")
    if failed:
        sys.exit(f"failed: {failed}")


if __name__ == "__main__":
    main()
