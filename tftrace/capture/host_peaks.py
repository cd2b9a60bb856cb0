"""The CPU's peaks, measured once a process: a float32 matmul in the framework that runs the model, a memory copy.

What a roofline on the CPU needs and no trace holds. Best of a few short runs (a fraction of a
second in all), so a busy moment does not set the peak; the figure is what this host reached
here, not a data-sheet number. No random op is used: the framework's random state stays as the
user left it."""

from __future__ import annotations

import os
import threading
import time

MATMUL_N = 1024  # 2.1 GFLOP a matmul: tens of ms on one core, a few on many
COPY_BYTES = 64 << 20  # 64 MiB each way: far past any cache
REPEATS = 3

_cache: dict = {}  # (framework, dtypes) -> the figure, measured once a process


def measure(framework: str, dtypes=("float32",)) -> dict:
    """`host_peaks` for the sidecar: {"flops_per_s": {dtype: FLOP/s}, "bytes_per_s", "how",
    "threads"}; `framework`: "tensorflow", "jax", "torch" or "numpy". Raises where it cannot run."""
    key = (framework, tuple(dtypes))
    if key not in _cache:
        threads = _threads(framework)
        rates = {d: _matmul_rate(framework, d) for d in dtypes}
        flops = {d: rate for d, (rate, _n) in rates.items()}
        sizes = "/".join(sorted({f"{n}x{n}" for _rate, n in rates.values()}))
        copy = _copy_rate(threads)
        how = (f"measured on this host: the best of {REPEATS} {sizes} matmuls in {_label(framework)} per dtype, "
               f"and of {REPEATS} copies of {COPY_BYTES >> 20} MiB on {threads} threads (bytes read plus written)")
        _cache[key] = {"flops_per_s": flops, "bytes_per_s": copy, "how": how, "threads": threads}
    return dict(_cache[key])


def _label(framework: str) -> str:
    return {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}.get(framework, "NumPy")


def _threads(framework: str) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        if framework == "torch":
            import torch
            return int(torch.get_num_threads())
        if framework == "tensorflow":
            import tensorflow as tf
            return int(tf.config.threading.get_intra_op_parallelism_threads() or cores)
    except Exception:
        pass
    return int(cores)


def _best(run, repeats: int = REPEATS) -> float:
    run()  # warm: first-call set-up (kernels chosen, pages touched) is not the peak
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - began)
    return best


def _matmul_rate(framework: str, dtype: str) -> tuple[float, int]:
    n = MATMUL_N
    seconds = _best(_matmul(framework, dtype, n))
    if seconds < 0.005:  # a host this fast times the call around it as much: a matmul 8x larger
        n *= 2
        seconds = _best(_matmul(framework, dtype, n), repeats=3)
    return 2.0 * n ** 3 / seconds, n


def _matmul(framework: str, dtype: str, n: int):
    """A call that multiplies two n x n matrices of `dtype` on the CPU and waits for the result."""
    if framework == "tensorflow":
        import tensorflow as tf
        with tf.device("/CPU:0"):
            a = tf.fill((n, n), tf.constant(0.5, dtype=tf.as_dtype(dtype)))

        def run():
            with tf.device("/CPU:0"):
                tf.linalg.matmul(a, a)[0, 0].numpy()  # one element back: the product is done
        return run
    if framework == "jax":
        import jax
        import jax.numpy as jnp
        cpu = jax.devices("cpu")[0]
        a = jax.device_put(jnp.full((n, n), 0.5, dtype=dtype), cpu)
        dot = jax.jit(jnp.dot)
        return lambda: dot(a, a).block_until_ready()
    if framework == "torch":
        import torch
        a = torch.full((n, n), 0.5, dtype=getattr(torch, dtype), device="cpu")
        return lambda: torch.mm(a, a)
    import numpy as np
    a = np.full((n, n), 0.5, dtype=dtype)
    return lambda: a @ a


def _copy_rate(threads: int) -> float:
    """Bytes a second through memory: a large buffer copied by `threads` threads, a slice each."""
    import numpy as np
    src = np.ones(COPY_BYTES, dtype=np.uint8)
    dst = np.empty_like(src)
    threads = max(1, min(int(threads), 64))
    bounds = [COPY_BYTES * i // threads for i in range(threads + 1)]

    def part(i: int) -> None:
        np.copyto(dst[bounds[i]:bounds[i + 1]], src[bounds[i]:bounds[i + 1]])  # releases the GIL

    def run() -> None:
        if threads == 1:
            part(0)
            return
        workers = [threading.Thread(target=part, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    return 2.0 * COPY_BYTES / _best(run)
