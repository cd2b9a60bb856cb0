"""The zoo of projection programs (issue 46): held-out analogs whose fix saves more than the owner's
own ops, each with a fixed twin timed without the profiler:
`python sample_traces/capture_zoo_projections.py [--only NAME ...] [--again]`.

Each program (the TensorFlow ones in zoo_projection_programs.py, the JAX one here) plants one
cause and has a fixed twin that applies the fix as the finding words it. For each, this script (reusing capture_zoo's and capture_jax_zoo's machinery):

1. times the slow and the fixed program without the profiler, alternating, ROUNDS rounds each,
   and keeps each side's fastest round (other work on a shared machine only slows a round
   down); every round and the machine's load average while timing go into the truth;
2. captures the slow program once, the way its `how` says, into `zoo/<name>/` (TensorFlow) or
   `jax_zoo/<name>/` (JAX, in a process of its own, as capture_jax_zoo.py does);
3. records the truth in `zoo/ground_truth.json` or `jax_zoo/ground_truth.json`, each entry
   marked `"set": "projections"` (tests/test_zoo_projections.py reads them; the older zoo
   tests leave them out), with `causes`: the finding kinds that word this fix.

`--again` captures the programs of AGAIN a second time, each in a fresh process, into
`zoo_again/<name>/` (same layout, no timing), for the test that two captures of one program
lead with the same finding or a declared tie.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import capture_zoo as zoo  # noqa: E402
from zoo_projection_programs import PROGRAMS  # noqa: E402 - the TensorFlow programs

AGAIN = os.path.join(HERE, "zoo_again")
ROUNDS = 5  # alternating slow / fixed rounds; each side's fastest is its figure
SET = "projections"


# -- timing -----------------------------------------------------------------------------------------

def fastest(slow, fixed, rounds: int = ROUNDS) -> dict:
    """Slow and fixed timed in turns, `rounds` each: the fastest round of each, every round, and the
    1-minute load average seen while timing."""
    s, f, loads = [], [], [os.getloadavg()[0]]
    for _ in range(rounds):
        s.append(slow())
        f.append(fixed())
        loads.append(os.getloadavg()[0])
    best_s, best_f = min(s), min(f)
    return {"slow_ms_per_step": round(best_s, 3), "fixed_ms_per_step": round(best_f, 3),
            "ratio": round(best_f / best_s, 4), "slow_ms_rounds": [round(v, 3) for v in s],
            "fixed_ms_rounds": [round(v, 3) for v in f], "load": [round(min(loads), 2), round(max(loads), 2)],
            "timing": f"alternating slow and fixed, {rounds} rounds each, the fastest round of each"}


# -- JAX programs (each in a process of its own, JAX_PLATFORMS=cpu, as capture_jax_zoo.py runs) ----

def numpy_callback():
    """A jitted MLP train step (batches of 1024) standardises and clips its batch on the host through
    jax.pure_callback into numpy every step (code ported from numpy): the step stops until Python
    answers, and the batch goes to the host and back. The fix: the same math in jax.numpy inside
    the jitted step."""
    import jax
    import jax.numpy as jnp
    import capture_jax_zoo as z
    params, x, y, train_step = z._mlp(256, 2, 1024)

    def standardise_np(a):
        a = np.asarray(a)
        a = np.sign(a) * np.log1p(np.abs(a))
        a = (a - a.mean(axis=0)) / (a.std(axis=0) + 1e-6)
        a = np.clip(a, -3.0, 3.0)
        return np.tanh(a * 0.5).astype(np.float32)

    def standardise_jnp(a):
        a = jnp.sign(a) * jnp.log1p(jnp.abs(a))
        a = (a - a.mean(axis=0)) / (a.std(axis=0) + 1e-6)
        return jnp.tanh(jnp.clip(a, -3.0, 3.0) * 0.5)

    def step_with(standardise):
        def step(params, x, y):
            return train_step(params, standardise(x), y)
        return jax.jit(step)

    slow_step = step_with(lambda a: jax.pure_callback(standardise_np, jax.ShapeDtypeStruct(a.shape, a.dtype), a))
    fixed_step = step_with(standardise_jnp)
    state = {"s": params, "f": params}

    def slow():
        state["s"], loss = slow_step(state["s"], x, y)
        loss.block_until_ready()

    def fixed():
        state["f"], loss = fixed_step(state["f"], x, y)
        loss.block_until_ready()

    return {"slow": slow, "fixed": fixed, "round_steps": (20, 80), "capture": z._plain(slow, 8), "steps": 8,
            "how": z.PLAIN,
            "bound": ["compute", "host_overhead", "idle"], "causes": ["python_op"], "names": ["pure_callback"],
            "fix": "the standardisation in jax.numpy inside the jitted step"}


JAX_PROGRAMS = {"numpy_callback": numpy_callback}
# Captured a second time into zoo_again/: one TF CPU program (TraceCallback), one captured the stock
# way (plain start/stop), one JAX.
AGAIN_PROGRAMS = ("pairwise_metric", "fit_per_batch", "numpy_callback")


def _round_ms(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) * 1e3 / n


def jax_one(name: str, root: str, timed: bool) -> None:
    """The child process of one JAX program: warm up, time (unless `timed` is off), capture."""
    import jax
    import capture_jax_zoo as z
    np.random.seed(0)
    program = JAX_PROGRAMS[name]()
    entry = _entry(JAX_PROGRAMS[name], program, ("how", "bound", "causes", "names", "fix", "steps"))
    program["slow"](), program["fixed"]()  # compiles both
    if timed:
        n_slow, n_fixed = program["round_steps"]  # about as long a round on each side
        entry.update(fastest(lambda: _round_ms(program["slow"], n_slow), lambda: _round_ms(program["fixed"], n_fixed)))
    size = z._capture(name, program, root)
    entry["versions"] = {"jax": jax.__version__}
    print("RESULT " + json.dumps({"entry": entry, "bytes": size}), flush=True)


# -- running them -----------------------------------------------------------------------------------

def _entry(fn, program: dict, keys) -> dict:
    entry = {k: program[k] for k in keys if k in program}
    entry["cause"] = program["causes"][0]
    entry["what"] = " ".join(fn.__doc__.split())
    entry["set"] = SET
    return entry


def _write(path: str, name: str, entry: dict, top: dict) -> None:
    truth = json.load(open(path)) if os.path.exists(path) else {}
    truth.update(top)
    truth[name] = entry
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(truth, f, indent=2, sort_keys=True)
        f.write("\n")


def run_tf(name: str, again: bool) -> None:
    """One TensorFlow program in this process: timed and captured into zoo/ (or only captured
    again into zoo_again/)."""
    tf, keras = zoo._tf(), zoo._keras()
    tf.config.threading.set_inter_op_parallelism_threads(2)
    keras.utils.set_random_seed(0)
    sys.path.insert(0, os.path.dirname(HERE))
    import tftrace
    with tempfile.TemporaryDirectory() as scratch, tftrace.trace(scratch):  # the profiler's one-off start-up
        keras.ops.sum(keras.ops.ones((8, 8)))
    t0 = time.perf_counter()
    program = PROGRAMS[name]()
    entry = _entry(PROGRAMS[name], program, ("how", "bound", "causes", "names", "fix", "confirm"))
    if not again:
        entry.update(fastest(program["slow"], program["fixed"]))
    t1 = time.perf_counter()
    zoo._capture(name, program, AGAIN if again else zoo.ZOO)
    if program.get("cleanup"):
        shutil.rmtree(program["cleanup"], ignore_errors=True)
    entry["capture_s"] = round(time.perf_counter() - t1, 1)
    root = AGAIN if again else zoo.ZOO
    if again:
        entry = {k: entry[k] for k in ("how", "cause", "causes", "set", "capture_s")}
        entry["of"] = f"zoo/{name}"
    _write(os.path.join(root, "ground_truth.json"), name, entry,
           {"tensorflow": tf.__version__, "keras": keras.__version__, "cores": os.cpu_count()})
    timed = "captured again" if again else \
        f"{entry['slow_ms_per_step']} -> {entry['fixed_ms_per_step']} ms (x{entry['ratio']}), load {entry['load']}"
    print(f"{name}: {timed}, capture {entry['capture_s']} s, {time.perf_counter() - t0:.0f} s in all", flush=True)


def run_jax(name: str, again: bool) -> bool:
    """One JAX program in a child process (JAX_PLATFORMS=cpu), its truth into jax_zoo/ (or
    zoo_again/)."""
    import capture_jax_zoo as z
    root = AGAIN if again else z.ZOO
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--jax-one", name, "--root", root]
                       + (["--untimed"] if again else []), env=env, capture_output=True, text=True)
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if p.returncode or not lines:
        print(f"{name}: FAILED (rc {p.returncode})\n{(p.stderr or p.stdout)[-3000:]}", flush=True)
        return False
    result = json.loads(lines[-1][len("RESULT "):])
    entry = result["entry"]
    versions = entry.pop("versions")
    if again:
        entry = {k: entry[k] for k in ("how", "cause", "causes", "set", "steps")}
        entry["of"] = f"jax_zoo/{name}"
    _write(os.path.join(root, "ground_truth.json"), name, entry, {**versions, "cores": os.cpu_count()})
    timed = "captured again" if again else \
        f"{entry['slow_ms_per_step']} -> {entry['fixed_ms_per_step']} ms (x{entry['ratio']}), load {entry['load']}"
    print(f"{name}: {timed}, {result['bytes'] / 1e6:.2f} MB", flush=True)
    return True


def main() -> None:
    import argparse
    names = sorted({*PROGRAMS, *JAX_PROGRAMS})
    parser = argparse.ArgumentParser(description="Regenerate issue 46's projection programs and their truth.")
    parser.add_argument("--only", choices=names, action="append", help="only this program (repeatable)")
    parser.add_argument("--again", action="store_true", help="capture AGAIN_PROGRAMS a second time into zoo_again/")
    parser.add_argument("--jax-one", choices=sorted(JAX_PROGRAMS), help=argparse.SUPPRESS)  # the JAX child
    parser.add_argument("--tf-one", choices=sorted(PROGRAMS), help=argparse.SUPPRESS)  # the TF child
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--untimed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.jax_one:
        jax_one(args.jax_one, args.root, not args.untimed)
        return
    if args.tf_one:
        run_tf(args.tf_one, args.untimed)
        return
    wanted = args.only or (list(AGAIN_PROGRAMS) if args.again else names)
    failed = []
    for name in wanted:
        if name in JAX_PROGRAMS:
            ok = run_jax(name, args.again)
        else:  # each in a fresh process: one program's threads, caches and policies never touch the next
            cmd = [sys.executable, os.path.abspath(__file__), "--tf-one", name] + (["--untimed"] if args.again else [])
            ok = subprocess.run(cmd).returncode == 0
        if not ok:
            failed.append(name)
    if failed:
        sys.exit(f"failed: {failed}")


if __name__ == "__main__":
    main()
