"""Time every top-3 finding's fix on the held-out real programs, without the profiler: `real/truth.json`.

`python sample_traces/time_real.py [--only NAME ...]` reads the committed captures of each program
(`real/<name>` and `real/<name>_confirm`, made by capture_real.py), takes the top three findings of
each, applies each one's fix as its recommendation writes it (the first concrete change it names;
FIXES says which, and why where the fix cannot be applied to what its owner is), and times the
program with and without it: each variant is built, seeded alike and warmed up by two epochs of its
fit (tracing, XLA compiles, the text pipeline's cache), then timed in turns with the others
(ROUNDS rounds, the order rotated each round; a round is whole epochs lasting MIN_ROUND_S or
more), and each side keeps its fastest round: on a shared machine other work only slows a round
down. Beside that ratio, each fix's `paired_ratio` (the median over rounds of its time over the
original's in the same round) and `median_ratio` cross-check it. A few changes no finding offers
(REFERENCES: XLA turned over, steps_per_execution, SGD) are timed alike, so the change that pays
most is known.

A time is per step of the program as written (the epoch's wall time over its batch count), so a
fix that changes the batch size is timed over the same samples.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture_real as cr  # noqa: E402

ROUNDS = 15
MIN_ROUND_S = 0.8  # a round runs whole epochs until it has lasted this long
SPE = 8  # steps_per_execution where a fix names no number: every program's epoch is a multiple of 8
TRUTH = os.path.join(cr.REAL, "truth.json")

SGD = {"fix": "compile(optimizer=keras.optimizers.SGD(learning_rate=<the example's Adam rate>, momentum=0.9))",
       "changes": {"compile": {"optimizer": ("SGD", {"learning_rate": 0.001, "momentum": 0.9})}}}
SGD_PLAIN = {"fix": "compile(optimizer=keras.optimizers.SGD(learning_rate=<the example's Adam rate>))",
             "changes": {"compile": {"optimizer": ("SGD", {"learning_rate": 0.001, "momentum": 0.0})}},
             "why": "'plain SGD (`keras.optimizers.SGD(learning_rate=...)`, no momentum) updates only those rows': "
                    "the first change named; the example's learning rate"}
STEPS = {"fix": f"compile(steps_per_execution={SPE})", "changes": {"compile": {"steps_per_execution": SPE}}}


def _batch(program_batch: int) -> dict:
    return {"fix": f"batch_size={2 * program_batch} (twice the example's {program_batch})",
            "changes": {"batch_size": 2 * program_batch}}


def _not_applicable(why: str) -> dict:
    return {"fix": None, "changes": None, "applicable": False, "why": why}


# finding id -> the change its recommendation names first, per program (kind-wide where the same).
# "alternatives": the recommendation names several; the first that applies is timed.
COMMON = {
    "optimizer/adam": {**SGD, "why": "'use a plain update where it trains as well (SGD with momentum ...)': the "
                                     "first change named; momentum 0.9 and the example's learning rate"},
    "host_overhead/framework": {**STEPS, "why": "'Cut the per-step cost with fewer calls: `steps_per_execution` in "
                                                "fit, larger batches': the first named; no number given, 8"},
    "xla_cpu/jit_compile": {"fix": "compile(jit_compile=False)", "changes": {"compile": {"jit_compile": False}},
                            "why": "the step compiled with jit_compile=True: the fix turns it off"},
}
FIXES = {
    "text_cnn": {
        "layer/conv1d": {"fix": "Conv1D(64, ...) for the first Conv1D (half its 128 filters)",
                         "changes": {"filters": (64, 128)},
                         "why": "'fewer filters, a smaller kernel ... or a depthwise-separable convolution': the "
                                "first named, halved"},
        "host_overhead/dispatch": {**_batch(32), "why": "'run fewer, larger ops: a larger batch ...': the first named"},
    },
    "vae": {
        "layer/conv2d_transpose_1": {"fix": "Conv2DTranspose(16, ...) for the decoder's second (half its 32 filters)",
                                     "changes": {"decoder_filters": (64, 16)},
                                     "why": "'fewer filters, ...': the first named, halved"},
        "layer/conv2d_transpose": {"fix": "Conv2DTranspose(32, ...) for the decoder's first (half its 64 filters)",
                                   "changes": {"decoder_filters": (32, 32)},
                                   "why": "'fewer filters, ...': the first named, halved"},
        "host_overhead/dispatch": {**_batch(128), "why": "'run fewer, larger ops: a larger batch ...': the first named"},
    },
    "recommender": {
        "host_overhead/dispatch": {**_batch(128), "why": "'run fewer, larger ops: a larger batch ...': the first named"},
        "input/map_ops": _not_applicable(
            "'Vectorize the map: `batch()` first and map over whole batches': the program has no map; it gives fit "
            "NumPy arrays, and the map is Keras' own adapter slicing each batch out of them (GatherV2): nothing as "
            "written can be changed"),
    },
    "xception": {
        "layer/separable_conv2d": {"fix": "SeparableConv2D(64, ...) for the first SeparableConv2D (half its 128 filters)",
                                   "changes": {"first_filters": 64},
                                   "why": "'fewer filters, a smaller `depth_multiplier`, or downsample before it': "
                                          "the first named, halved"},
        "layer/batch_normalization_1": _not_applicable(
            "'make it smaller, replace it with a cheaper kind of layer, or mixed precision on GPU/TPU': a "
            "BatchNormalization has no size to make smaller (no units or filters: its cost is its input's), no "
            "cheaper kind of layer is named, and the run is on a CPU"),
        "host_overhead/dispatch": {**_batch(8), "why": "'run fewer, larger ops: a larger batch ...': the first named"},
    },
    "bilstm": {
        "host_overhead/dispatch": {**_batch(32), "why": "'run fewer, larger ops: a larger batch ...': the first named"},
    },
    "transformer": {
        "layer/transformer_block": {"fix": "TransformerBlock(embed_dim, num_heads, ff_dim=16) (half its 32 units)",
                                    "changes": {"ff_dim": 16},
                                    "why": "'fewer units, a narrower input ..., or mixed precision' / 'make it "
                                           "smaller': the block's units are its feed-forward Dense's, halved"},
        "host_overhead/dispatch": {**_batch(32), "why": "'run fewer, larger ops: a larger batch ...': the first named"},
    },
}
# A fix found in no table: the regularizer's (its id names the weights), a while loop's.
BY_KIND = {
    "regularizer": {"fix": "embeddings_regularizer=None on both embeddings, Adam(weight_decay=1e-6)",
                    "changes": {"regularizer": None, "optimizer": {"weight_decay": 1e-6}},
                    "why": "'use a smaller coefficient-free alternative (the optimizer's `weight_decay` ...)': the "
                           "first named"},
    "while_loop": {"fix": "LSTM(unroll=True)", "changes": {"lstm": {"unroll": True}},
                   "why": "'unroll it (`unroll=True` on the LSTM/GRU, on the layer a Bidirectional wraps too)': the "
                          "first named; the sequences are 16 steps, fixed (the adapted example pads to 16)"},
}
BY_KIND["stall"] = _not_applicable(
    "'find what runs in them (the steps listed), and do it less often': nothing in these programs runs every few "
    "steps inside an epoch (no callback with batch hooks but the profiler's, no saving or logging by batch); a "
    "step that took 3x the median on this shared machine (load 5-7 on two cores) has nothing in the program to "
    "do less often")
REFERENCES = {  # changes no top finding offers, timed so the change that pays most is known
    "text_cnn": {"jit_compile=True": {"changes": {"compile": {"jit_compile": True}}}},
    "vae": {"jit_compile=True": {"changes": {"compile": {"jit_compile": True}}}},
    "recommender": {"jit_compile=True": {"changes": {"compile": {"jit_compile": True}}}},
    "xception": {"jit_compile=False": {"changes": {"compile": {"jit_compile": False}}}},
    "bilstm": {"jit_compile=True": {"changes": {"compile": {"jit_compile": True}}},
               "LSTM(unroll=True)": {"changes": {"lstm": {"unroll": True}}}},
    "transformer": {"jit_compile=True": {"changes": {"compile": {"jit_compile": True}}}},
}
for _name, _refs in REFERENCES.items():  # the common fixes, where no top finding of a program offers them
    _refs.setdefault("SGD(momentum=0.9)", SGD)
    _refs.setdefault(f"steps_per_execution={SPE}", STEPS)


# Why a fix measured slower than the program as written (ratio > 1.05), found by looking at the
# program and its timings: the condition, and words a recommendation that states it would use.
HURTS: dict[str, dict[str, dict]] = {}


def fix_for(name: str, fid: str, kind: str) -> dict | None:
    return FIXES.get(name, {}).get(fid) or COMMON.get(fid) or BY_KIND.get(kind)


def top_findings(name: str) -> dict:
    """{capture: [finding, ...]} for the program's committed captures: the top three as reported."""
    from tftrace.api import analyze
    out = {}
    for capture in (name, name + "_confirm"):
        path = os.path.join(cr.REAL, capture)
        if not os.path.isdir(path):
            continue
        run = analyze(path).runs[0]
        out[capture] = [{
            "rank": b.rank, "id": b.id, "kind": b.kind, "title": b.title, "basis": b.projection_basis,
            "step_ms": round(b.step_ps / 1e9, 3), "projected_step_ms": round(b.step_if_removed_ps / 1e9, 3),
            "projected_ratio": round(b.step_if_removed_ps / b.step_ps, 3) if b.step_ps else None,
            "measured_step_ms": None if b.measured_step_ps is None else round(b.measured_step_ps / 1e9, 3),
            "tie_rank": b.tie_rank, "recommendation": b.recommendation,
        } for b in run.bottlenecks[:3]]
    return out


def _materialize(changes):
    """Changes as the program takes them: an optimizer named as (class, config) made fresh."""
    import keras
    changes = json.loads(json.dumps(changes))  # a copy; tuples become lists
    opt = changes.get("compile", {}).get("optimizer")
    if isinstance(opt, list):
        changes["compile"]["optimizer"] = getattr(keras.optimizers, opt[0])(**opt[1])
    return changes


class _Variant:
    """The program built with `changes`, warmed up; `ms()` times a round of whole epochs of its fit
    (as many as last MIN_ROUND_S: a round of a few milliseconds is all scheduling noise here), per
    step of the program as written."""

    def __init__(self, program, changes, steps: int):
        import keras

        class Clock(keras.callbacks.Callback):
            """Seconds inside the epochs of one fit call (the data adapter's set-up stays out)."""

            def on_train_begin(self, logs=None):
                self.seconds = 0.0

            def on_epoch_begin(self, epoch, logs=None):
                self.t0 = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                self.seconds += time.perf_counter() - self.t0

        self.clock = Clock()
        self.model, self.data, self.own = cr.build(program, _materialize(changes or {}))
        self.steps = steps
        self.epochs = 1
        self._fit()  # traces, compiles, fills caches
        self._fit()
        self.epochs = max(1, math.ceil(MIN_ROUND_S / max(self.clock.seconds, 1e-3)))

    def _fit(self):  # the clock first: its epoch end comes before a checkpoint's save
        self.model.fit(**self.data, epochs=self.epochs, verbose=0, callbacks=[self.clock, *self.own])

    def ms(self) -> float:
        self._fit()
        return self.clock.seconds * 1e3 / (self.steps * self.epochs)


def _steps(program) -> int:
    data = program.data()
    x = data["x"]
    if hasattr(x, "cardinality"):
        return int(x.cardinality())
    return -(-len(x) // data["batch_size"])


def time_program(name: str) -> dict:
    program = cr.load(name)
    captures = top_findings(name)
    variants = {"original": {"fix": "the example as written", "changes": {}}}
    findings, missing = {}, []
    for capture, tops in captures.items():
        for f in tops:
            fix = fix_for(name, f["id"], f["kind"])
            if f["kind"] == "optimizer" and "no momentum" in f["recommendation"]:  # the sparse tables' fix
                fix = SGD_PLAIN
            if fix is None:
                missing.append(f"{capture}: {f['id']} ({f['title']}): {f['recommendation'][:200]}")
                continue
            key = fix["fix"] or f"not applicable: {f['id']}"
            findings.setdefault(f["id"], {"fix": fix["fix"], "why": fix["why"], "key": key,
                                          "applicable": fix.get("applicable", True), "reports": {}})
            findings[f["id"]]["reports"][capture] = {k: f[k] for k in (
                "rank", "title", "basis", "step_ms", "projected_step_ms", "projected_ratio", "measured_step_ms",
                "tie_rank", "recommendation")}
            if fix.get("applicable", True):
                variants.setdefault(key, {"fix": fix["fix"], "changes": fix["changes"]})
    if missing:
        sys.exit(f"{name}: no fix written down for these findings (add them to FIXES):\n  " + "\n  ".join(missing))
    offered = set(variants)
    for ref, spec in REFERENCES.get(name, {}).items():
        if not any(v["changes"] == spec["changes"] for v in variants.values()):
            variants[ref] = {"fix": spec.get("fix", ref), "changes": spec["changes"], "reference": True}
    steps = _steps(program)
    print(f"{name}: {len(variants)} variants, {steps} steps an epoch", flush=True)
    built = {}
    for key, v in variants.items():
        t0 = time.perf_counter()
        built[key] = _Variant(program, v["changes"], steps)
        print(f"  built {key!r} in {time.perf_counter() - t0:.1f} s", flush=True)
    rounds, loads = {k: [] for k in built}, []
    order = list(built)
    for r in range(ROUNDS):
        loads.append([round(x, 2) for x in os.getloadavg()])
        for key in order[r % len(order):] + order[:r % len(order)]:
            rounds[key].append(round(built[key].ms(), 3))
        print(f"  round {r}: " + ", ".join(f"{k[:24]} {rounds[k][-1]:.1f}" for k in order), flush=True)
    base = min(rounds["original"])
    median = {key: statistics.median(r) for key, r in rounds.items()}
    timed = {key: {**{k: v for k, v in variants[key].items() if k != "changes"},
                   "changes": variants[key]["changes"], "ms": min(rounds[key]), "rounds_ms": rounds[key],
                   "ratio": round(min(rounds[key]) / base, 3),
                   "median_ratio": round(median[key] / median["original"], 3),
                   "paired_ratio": _paired(rounds[key], rounds["original"])} for key in built}
    for key, hurts in HURTS.get(name, {}).items():
        if key in timed:
            timed[key]["hurts_when"] = hurts
    for f in findings.values():
        f["slow_ms"] = base
        if f["applicable"]:
            f["fixed_ms"], f["ratio"] = timed[f["key"]]["ms"], timed[f["key"]]["ratio"]
            f["median_ratio"] = timed[f["key"]]["median_ratio"]
            f["paired_ratio"] = timed[f["key"]]["paired_ratio"]
            if "hurts_when" in timed[f["key"]]:
                f["hurts_when"] = timed[f["key"]]["hurts_when"]
        else:  # nothing a user can change as written: the step stays as it is
            f["fixed_ms"], f["ratio"], f["median_ratio"], f["paired_ratio"] = base, 1.0, 1.0, 1.0
    return {"origin": program.__doc__, "steps_per_epoch": steps, "rounds": ROUNDS, "loadavg": loads,
            "epochs_per_round": {k: b.epochs for k, b in built.items()},
            "slow_ms": base, "variants": timed, "offered": sorted(offered - {"original"}),
            "findings": findings, "top": {c: [f["id"] for f in tops] for c, tops in captures.items()}}


def _paired(fixed: list[float], original: list[float]) -> float:
    """The median over rounds of the fix's time over the original's in the same round: a cross-check
    of the fastest rounds' ratio that a slow drift of the machine's load cannot tilt."""
    return round(statistics.median(f / o for f, o in zip(fixed, original)), 3)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=cr.PROGRAMS)
    args = parser.parse_args(argv)
    truth = json.load(open(TRUTH)) if os.path.exists(TRUTH) else {"programs": {}}
    truth["how"] = " ".join(__doc__.split("\n\n")[1].split())
    for name in args.only:
        truth["programs"][name] = time_program(name)
        with open(TRUTH, "w") as f:  # after each program: a later one's failure keeps the others
            json.dump(truth, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
