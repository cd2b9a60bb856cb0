"""Make a JAX trace made mostly of one HLO proto: `python benchmarks/make_hlo_trace.py [--mb 300]`.

A jitted function that closes over a large numpy array embeds it in its module as a constant,
and the profiler writes the module's HLO proto (constant included) into the trace's
`/host:metadata` plane: the trace is a few hundred MB while its events are a few hundred. Needs
`pip install "tftrace[jax]"`. Time the read with `python benchmarks/bench_xla.py benchmarks/data/hlo_heavy`.

Output: benchmarks/data/hlo_heavy/plugins/profile/<run>/<host>.xplane.pb (git-ignored).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "hlo_heavy")


def capture(mb: int) -> str:
    import jax
    import jax.numpy as jnp
    import numpy as np

    big = np.random.default_rng(0).standard_normal(mb * 2 ** 20 // 4).astype(np.float32)
    step = jax.jit(lambda x: (x * 0.5 + big).sum())  # `big` is a numpy array: a constant of the module
    x = jnp.ones(big.shape, jnp.float32)
    shutil.rmtree(OUT, ignore_errors=True)
    jax.profiler.start_trace(OUT)
    for _ in range(5):
        step(x).block_until_ready()
    jax.profiler.stop_trace()
    return glob.glob(os.path.join(OUT, "**", "*.xplane.pb"), recursive=True)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="size of the array the function closes over")
    path = capture(parser.parse_args().mb)
    print(f"hlo_heavy: {path} ({os.path.getsize(path) / 2 ** 20:.0f} MB)")


if __name__ == "__main__":
    main()
