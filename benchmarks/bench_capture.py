"""What a capture does to the run it records: untraced step, steps outside windows, the report's step.

    python benchmarks/bench_capture.py            # every backend, both models; figures into RESULTS.md
    python benchmarks/bench_capture.py torch jax  # those backends again; the others' last figures kept
    python benchmarks/bench_capture.py --child tensorflow mlp   # one backend and model (a fresh process)

Each (backend, model)'s figures are kept in benchmarks/data/bench_capture/ as they come, and the
table is made of the newest of each: on a loaded machine a backend can be run again on its own.

Each (Keras backend, model) runs in its own process. Epochs alternate between a plain `fit` and a
`fit` with `TraceCallback` whose only window lies in an epoch that never runs (and, on TensorFlow,
Keras' `TensorBoard(profile_batch=...)` likewise): each epoch is timed from its begin to its end
hook by a callback with no batch hooks, so the timing itself changes nothing, and the medians over
the rounds are compared. Then a few fits with a default window each are analysed, and the report's
median and mean step (the mean with the gap after each), as traced and less the profiler's own time
(the steps the report judges), are set against the steady untraced step: plain fits timed by their
batch-begin hooks from batch 2 to the epoch's end (a begin hook: Keras still dispatches the end hooks
on its worker thread), just before and just after, because this machine's pace drifts by tens of
percent from one fit to the next. Medians against the median gap from one batch's begin to the next
(on JAX, whose host runs ahead of its device so that a begin hook times a dispatch, against the mean),
means against the mean; and the mean also against the same epoch's untraced steps after the window
(TraceCallback's own figure, which its report gives).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# The MLP's epoch outlasts a default window of its sub-ms steps (at most 500), leaving untraced steps after it.
MODELS = {"mlp": dict(steps=900, batch=8), "cnn": dict(steps=60, batch=32)}
BACKENDS = ("tensorflow", "jax", "torch")
WARM = 2  # an epoch's first steps: a new iterator, and the first batches through it
# Each capture's report against the untraced steps: its median (traced, and less the profiler's own
# time) over their median, its mean with the gaps (likewise) over their mean, and its mean less the
# profiler over the same epoch's untraced steps after the window (TraceCallback's own figure).
RATIOS = ("median", "median_less", "mean", "mean_less", "after")
_BEGIN, _END = "<!-- bench_capture begin -->", "<!-- bench_capture end -->"


def _model(keras, kind: str):
    keras.utils.set_random_seed(0)
    if kind == "mlp":
        layers = [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)]
    else:
        layers = [keras.Input((32, 32, 3)), keras.layers.Conv2D(32, 3, activation="relu"),
                  keras.layers.MaxPooling2D(), keras.layers.Conv2D(64, 3, activation="relu"),
                  keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)]
    model = keras.Sequential(layers)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data(kind: str):
    import numpy as np
    spec = MODELS[kind]
    n = spec["steps"] * spec["batch"]
    shape = (n, 32) if kind == "mlp" else (n, 32, 32, 3)
    rng = np.random.default_rng(0)
    return rng.random(shape).astype("float32"), rng.integers(0, 10, n)


def child(backend: str, kind: str, rounds: int = 15, captures: int = 7) -> dict:
    os.environ["KERAS_BACKEND"] = backend
    import keras

    import tftrace
    from tftrace.api import analyze

    class EpochClock(keras.callbacks.Callback):  # epoch hooks only: Keras' batch dispatch is untouched
        def __init__(self):
            super().__init__()
            self.seconds = []

        def on_epoch_begin(self, epoch, logs=None):
            self._t = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._t)

    class BatchClock(keras.callbacks.Callback):  # a begin hook too: Keras still hands end hooks to its worker
        def on_epoch_begin(self, epoch, logs=None):
            self.begins = {}

        def on_train_batch_begin(self, batch, logs=None):
            self.begins[batch] = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.end = time.perf_counter()  # the callback list has read the logs: every step done

        def after(self, step: int) -> float:
            """Seconds per step from `step` to the epoch's end."""
            return (self.end - self.begins[step]) / (spec["steps"] - step)

        def median_after(self, step: int) -> float:
            """The median seconds from one batch's begin to the next, from `step` to the epoch's end."""
            times = [self.begins[b] for b in range(step, spec["steps"])] + [self.end]
            return statistics.median(b - a for a, b in zip(times, times[1:]))

    model, (x, y) = _model(keras, kind), _data(kind)
    spec = MODELS[kind]
    ahead = backend == "jax"  # the host runs ahead of the device: its hooks time dispatch
    model.fit(x, y, batch_size=spec["batch"], epochs=2, verbose=0)  # compiled and warm
    tmp = tempfile.mkdtemp(prefix="bench_capture_")
    never = dict(epochs=(10_000,), evaluate_steps=None, predict_steps=None)
    variants = {"plain": lambda: [], "TraceCallback": lambda: [tftrace.TraceCallback(tmp, **never)]}
    if backend == "tensorflow":
        far = 10 ** 7  # a window past the last step: Keras' hooks run, the profiler never starts
        variants["Keras TensorBoard"] = lambda: [keras.callbacks.TensorBoard(tmp, profile_batch=(far, far + 1),
                                                                            write_graph=False)]
    per_step = {name: [] for name in variants}
    for _ in range(rounds):
        for name, callbacks in variants.items():
            clock = EpochClock()
            model.fit(x, y, batch_size=spec["batch"], epochs=1, verbose=0, callbacks=[clock, *callbacks()])
            per_step[name].append(clock.seconds[0] / spec["steps"])
    untraced = statistics.median(per_step["plain"])
    quartiles = statistics.quantiles(per_step["plain"], n=4)
    out = {"backend": backend, "model": kind, "params": model.count_params(), "rounds": rounds,
           "untraced_ms": untraced * 1e3, "noise": (quartiles[2] - quartiles[0]) / 2 / untraced,
           "outside": {k: statistics.median(v) / untraced - 1 for k, v in per_step.items() if k != "plain"}}

    def steady() -> tuple[float, float]:
        """A plain fit's steps from batch WARM to the epoch's end (no epoch start-up in them), ms:
        their mean and their median."""
        clock = BatchClock()
        model.fit(x, y, batch_size=spec["batch"], epochs=1, verbose=0, callbacks=[clock])
        return clock.after(WARM) * 1e3, clock.median_after(WARM) * 1e3
    names = ("TraceCallback", "Keras TensorBoard") if backend == "tensorflow" else ("TraceCallback",)
    ratios = {n: {k: [] for k in RATIOS + ("drift",)} for n in names}
    arounds, medians, afters = [], [], []
    for i in range(captures):
        for name in names:
            log_dir = os.path.join(tmp, f"{name.replace(' ', '_')}{i}")
            cb = tftrace.TraceCallback(log_dir, evaluate_steps=None, predict_steps=None) \
                if name == "TraceCallback" else keras.callbacks.TensorBoard(log_dir, profile_batch=(3, 7),
                                                                            write_graph=False)
            before, clock = steady(), BatchClock()
            model.fit(x, y, batch_size=spec["batch"], epochs=1, verbose=0, callbacks=[clock, cb])
            later = steady()
            # This machine's pace drifts by tens of percent between fits: the fits either side, averaged.
            around, median = (before[0] + later[0]) / 2, (before[1] + later[1]) / 2
            ratios[name]["drift"].append(abs(later[0] - before[0]) / around)
            if ahead:  # the host's begin hooks time its dispatch: only the mean is the device's pace
                median = around
            report = analyze(log_dir).to_dict()["runs"][0]["steps"]
            traced, less = _iterations(report["steps"])
            # The same epoch's steps after the window, untraced: as TraceCallback timed them (its
            # report says so), and for Keras' callback from the batch after its stop (batch 7's end).
            after = report["untraced_ms"] if name == "TraceCallback" else clock.after(8) * 1e3
            got = {"median": statistics.median(traced) / median, "median_less": statistics.median(less) / median,
                   "mean": statistics.mean(traced) / around, "mean_less": statistics.mean(less) / around,
                   "after": statistics.mean(less) / after if after else float("nan")}
            for k, v in got.items():
                ratios[name][k].append(v)
            arounds.append(around)
            medians.append(median)
            afters.append(after)
    out.update(steady_ms=statistics.median(arounds), steady_median_ms=statistics.median(medians),
               after_ms=statistics.median(afters), ratios=ratios)
    # The dearer case: a window still to come in this epoch (each batch is checked against it).
    later = dict(never, epochs=(0,), fit_steps=(10 ** 7, 10 ** 7 + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the fit window lies beyond the steps that ran"
        out["hooks_us"] = _hook_cost(keras, model, tftrace.TraceCallback(tmp, **later))
    return out


def _iterations(rows: list[dict]) -> tuple[list[float], list[float]]:
    """The report's steps, each with the gap after it (what a turn of the loop costs, as the untraced
    clocks time it; the last has none), ms: as traced, and less the profiler's own time in the step.
    On JAX the last holds two steps' device work and the first only a dispatch (TraceCallback's pacing)."""
    traced = [row["dur_ms"] + after.get("idle_ms", 0.0) for row, after in zip(rows, rows[1:] + [{}])]
    return traced, [t - row.get("profiler_ms", 0.0) for t, row in zip(traced, rows)]


def _sidecar_steps(run_dir: str) -> list:
    with open(os.path.join(run_dir, "tftrace_run.json")) as f:
        return json.load(f)["steps"]


def _hook_cost(keras, model, cb, n: int = 20_000, rounds: int = 7) -> float:
    """The callback's own per-batch cost outside windows, in microseconds: a CallbackList's batch
    hooks called in a tight loop with and without it (on this thread: Keras' worker pool is off
    here, so its scheduling noise is not in the figure)."""
    from keras.src.callbacks.callback_list import CallbackList

    def per_batch(callbacks) -> float:
        calls = CallbackList(callbacks, add_history=True, model=model, epochs=1, steps=n, verbose=0)
        calls.on_train_begin()
        calls.on_epoch_begin(0)
        calls._async_train = False
        t0 = time.perf_counter()
        for i in range(n):
            calls.on_train_batch_begin(i)
            calls.on_train_batch_end(i, None)
        seconds = time.perf_counter() - t0
        calls.on_epoch_end(0, {})
        calls.on_train_end()
        return seconds / n * 1e6
    plain, traced = [], []
    for _ in range(rounds):
        plain.append(per_batch([]))
        traced.append(per_batch([cb]))
    return statistics.median(traced) - statistics.median(plain)


_KEPT = os.path.join(ROOT, "benchmarks", "data", "bench_capture")


def _run_child(backend: str, kind: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3",
           "CUDA_VISIBLE_DEVICES": ""}
    if backend == "torch":  # torch's OpenMP threads spin: on a shared 2-core machine its steps then stall for tens of ms
        env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run([sys.executable, __file__, "--child", backend, kind], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=3600)  # a loaded machine runs the torch MLP for 20+ minutes
    if proc.returncode != 0:
        raise SystemExit(f"{backend} {kind} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    os.makedirs(_KEPT, exist_ok=True)
    with open(os.path.join(_KEPT, f"{backend}_{kind}.json"), "w") as f:
        json.dump(result, f)
    return result


def _kept(backend: str, kind: str) -> dict | None:
    try:
        with open(os.path.join(_KEPT, f"{backend}_{kind}.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _table(results: list[dict]) -> str:
    rows = ["| backend | model | params | untraced step ms: epoch; steady mean, median; after the window "
            "| steps outside windows: TraceCallback (this machine's noise: half the plain epochs' interquartile "
            "range) | its hooks per batch | Keras TensorBoard(profile_batch) "
            "| report's median / untraced median: traced; less the profiler (each capture, and in brackets how "
            "far the plain fits either side drifted apart) | report's mean / untraced mean: traced; less the "
            "profiler | less the profiler, mean / the same epoch's untraced steps after the window (TraceCallback's own "
            "figure, in its report) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        tb = r["outside"].get("Keras TensorBoard")
        rows.append(f"| {r['backend']} | {r['model']} | {r['params']:,} | {r['untraced_ms']:.3f}; "
                    f"{r['steady_ms']:.3f}, {r['steady_median_ms']:.3f}; {r['after_ms']:.3f} | "
                    f"{100 * r['outside']['TraceCallback']:+.2f}% (±{100 * r.get('noise', 0):.1f}%) | "
                    f"{r['hooks_us']:.2f} us ({100 * r['hooks_us'] / 1e3 / r['untraced_ms']:.2f}%) | "
                    f"{'-' if tb is None else f'{100 * tb:+.2f}%'} | "
                    + " | ".join(_ratios(r["ratios"], keys) for keys in (("median", "median_less"), ("mean", "mean_less"),
                                                                         ("after",))) + " |")
    return "\n".join(rows)


def _ratios(by_capture: dict, keys: tuple[str, ...]) -> str:
    """Per variant: the median over captures of each ratio, then each capture's (with the drift
    of the fits around it after the first ratio's)."""
    def one(got: dict, i: int) -> str:
        cells = "/".join(f"{got[k][i]:.2f}" for k in keys)
        return cells + (f" ({100 * got['drift'][i]:.0f}%)" if keys[0] == "median" else "")
    out = []
    for name, got in by_capture.items():
        if not got[keys[0]]:
            continue
        overall = "/".join(f"{statistics.median(got[k]):.2f}x" for k in keys if got[k])
        out.append(f"{name} **{overall}**: " + ", ".join(one(got, i) for i in range(len(got[keys[0]]))))
    return "; ".join(out)


def main() -> None:
    import keras  # noqa: F401 - the version only; the work is in the children
    from results import put_block
    chosen = [b for b in sys.argv[1:] if b in BACKENDS] or list(BACKENDS)
    results = [_run_child(b, m) if b in chosen else _kept(b, m) for b in BACKENDS for m in MODELS]
    results = [r for r in results if r is not None]
    table = _table(results)
    print(table)
    versions = {}
    for name in ("keras", "tensorflow", "jax", "torch"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            pass
    block = "\n".join([
        _BEGIN, "## What a capture does to the run it records", "",
        "Produced by `python benchmarks/bench_capture.py` on this 2-core shared machine, CPU only ("
        + ", ".join(f"{k} {v}" for k, v in versions.items()) + "). Untraced step: the median over "
        "alternating epochs of a plain `fit` (epoch time per step, timed by a callback with epoch hooks "
        "only); steps outside windows: the same with the callback whose window never opens; its hooks per "
        "batch: a CallbackList's batch hooks called in a tight loop with and without it, its window still "
        "to come in that epoch (the figure the epochs' noise hides); report's "
        "median and mean step: `tftrace analyze` on a fit with a default window (from step 2, at least 5 "
        "steps and 100 ms; Keras' TensorBoard: profile_batch=(3, 7)), each step with the gap after it, as "
        "traced and less the profiler's own time (the steps the report judges), over the steady untraced "
        "step (batch 2 to the epoch's end, median against median begin-to-begin gap, on JAX against the "
        "mean as its host runs ahead; mean against mean) of the plain fits just before and after it, and "
        "over the same epoch's untraced steps after the window. In bold: the median over "
        "captures; then each capture's. In brackets: how far apart the two plain fits around that capture "
        "ran, this machine's own noise at the moment.", "", table, "", _END])
    put_block(os.path.join(ROOT, "benchmarks", "RESULTS.md"), block, _BEGIN, _END)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        main()
