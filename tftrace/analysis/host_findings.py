"""Findings about time the model's ops do not take: waiting for input, per-call framework work,
tracing, eager dispatch, your own code, the device idling, and the gaps between steps.

Each finding is (share of wall time, kind, title, evidence, recommendation).
"""

from __future__ import annotations

import os

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.overhead import Overhead
from tftrace.analysis.python import hottest
from tftrace.report import Breakdown, InputPipeline, PythonProfile

MIN_SHARE = 0.03  # below 3% of step time nothing is worth a user's attention (XProf's "all others" bar)


def ms(ps: float) -> str:
    return f"{ps / 1e9:.2f} ms"


_STAGE_FIXES = {
    "python": ("The pipeline runs Python (a generator via from_generator / PyFunc) one batch at a time under "
               "the GIL. Move the augmentation into tf.data (`ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE)`) "
               "or Keras preprocessing layers, end with `.prefetch(tf.data.AUTOTUNE)`, or use a "
               "`keras.utils.PyDataset` with `workers>1` (and `use_multiprocessing=True`)."),
    "map": ("Parallelize the map: `num_parallel_calls=tf.data.AUTOTUNE`, vectorize it by batching first, and "
            "`cache()` anything that does not change between epochs."),
    "read": "Read in parallel (`interleave(..., num_parallel_calls=AUTOTUNE)`), cache decoded data, prefetch.",
    "other": "Add `.prefetch(tf.data.AUTOTUNE)` at the end of the pipeline and parallelize its slowest stage.",
}


def _stage_fix(stage: str) -> str:
    low = stage.lower()
    if "pyfunc" in low or "generator" in low or "flatmap" in low:
        return _STAGE_FIXES["python"]
    if "map" in low:
        return _STAGE_FIXES["map"]
    if any(k in low for k in ("tfrecord", "textline", "read", "interleave")):
        return _STAGE_FIXES["read"]
    return _STAGE_FIXES["other"]


def _slowest_stage(pipeline: InputPipeline) -> tuple[str, str]:
    """(title suffix, evidence suffix) naming the slowest tf.data stage, if any."""
    if not pipeline.slowest:
        return "", ""
    top = next(s for s in pipeline.stages if s.name == pipeline.slowest)
    return (f": slowest stage {top.name}",
            f"; slowest tf.data stage: {top.name}, {ms(top.self_ps)} self time ({top.share:.0%} of pipeline time)")


def where_python(python: PythonProfile | None, places: tuple[str, ...], what: str) -> tuple[str, str]:
    """(title suffix, evidence suffix) naming the Python function that takes the most of these
    places' time, from stack samples or Python tracer events, if there are any."""
    found = hottest(python, places) if python is not None else None
    if found is None:
        return "", ""
    row, share = found
    where = f"{os.path.basename(row.file)}:{row.line}" if row.owner == "user" else f"{_short_path(row.file)}:{row.line}"
    whose = "your " if row.owner == "user" else ""
    return (f" in {whose}{row.function}()",
            f"; {what} spends {share:.0%} of its Python time in {whose}`{row.function}` ({where})")


def _short_path(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            parts = parts[parts.index(marker) + 1:]
            break
    return "/".join(parts) if len(parts) <= 3 else f"{parts[0]}/.../{parts[-1]}"


def input_findings(b: Breakdown, tl: Timeline, pipeline: InputPipeline, python: PythonProfile | None = None) -> list:
    """Waiting for input: the host blocked in IteratorGetNext (CPU runs), or the device idle
    while the host waits for input data (device runs)."""
    steps = max(len(tl.dur), 1)
    title, stage = _slowest_stage(pipeline)
    py_title, py_evidence = where_python(python, ("input pipeline",), "the input pipeline")
    if py_title:
        title, stage = py_title + (f" ({pipeline.slowest} stage)" if pipeline.slowest else ""), stage + py_evidence
    out = []
    if b.input >= MIN_SHARE and tl.device_busy is None:
        out.append((b.input, "input", "Input pipeline" + (title or ": waiting for input"),
                    f"input is {b.input:.0%} of step time ({ms(tl.input.sum() / steps)} per step waiting in "
                    f"IteratorGetNext){stage}", _stage_fix(pipeline.slowest)))
    if tl.device_busy is not None and b.input >= MIN_SHARE:
        out.append((b.input, "input", "Host-to-device copies",
                    f"for {b.input:.0%} of step time the device only copies input in ({ms(tl.input.sum() / steps)} "
                    "per step)", "Prefetch to the device (`tf.data.experimental.prefetch_to_device` or a "
                    "distribution strategy's dataset), use pinned host memory, and send smaller dtypes (uint8 "
                    "images, cast on the device)."))
    wait = tl.fraction(tl.input_wait) if tl.input_wait is not None else 0.0
    if wait >= MIN_SHARE:
        out.append((wait, "input", "Device idle while the host waits for input data" + title,
                    f"for {wait:.0%} of step time the device runs nothing while the host waits in IteratorGetNext "
                    f"({ms(tl.input_wait.sum() / steps)} per step){stage}", _stage_fix(pipeline.slowest)))
    return out


def overhead_findings(b: Breakdown, tl: Timeline, ov: Overhead, mode: str, eager: bool,
                      python: PythonProfile | None = None) -> list:
    wall = tl.wall_ps or 1
    steps = max(len(tl.dur), 1)
    out = []
    if ov.pipeline_ps:
        out.append(_per_call(ov, tl, mode, wall, steps))
    if ov.tracing_ps:
        names = ", ".join(f"{n} x{c}" for n, c in ov.traced[:4]) or "functions traced inside the window"
        out.append((ov.tracing_ps / wall, "retracing", "tf.function tracing inside the measured steps",
                    f"{ms(ov.tracing_ps)} of graph building inside steps ({names})",
                    "Each trace rebuilds a graph: keep input shapes and dtypes stable (pad or bucket them), pass "
                    "tensors not Python scalars, or set `reduce_retracing=True` / an `input_signature`."))
    if eager and ov.eager_ps:
        out.append((ov.eager_ps / wall, "eager", "Eager execution: ops dispatched one by one",
                    f"{ov.eager_count} eager ops take {ms(ov.eager_ps)} inside steps; each pays Python and "
                    "dispatch cost (model(x) in Keras 3 runs eagerly outside tf.function)",
                    "Run the model as a graph: `model.predict_on_batch(x)`, or wrap the call in `tf.function` "
                    "(`jit_compile=True` for XLA) and reuse it across calls."))
    for name, ps in ov.regions:
        out.append((ps / wall, "user_region", f"Your code in tftrace.region('{name}')",
                    f"{ms(ps / steps)} per step inside '{name}' runs no TensorFlow op",
                    "This Python work sits on every step's path: batch it (one call for many items), move it "
                    "into a tf.data pipeline (`map(..., num_parallel_calls=tf.data.AUTOTUNE)` + `prefetch`) so "
                    "it overlaps the model, or cache its result."))
    explained = sum(o[0] for o in out if o[1] in ("per_call_overhead", "retracing", "user_region"))
    rest = _rest(b, tl, explained, per_call=bool(ov.pipeline_ps) and mode not in ("train", "evaluate"))
    py_title, py_evidence = where_python(python, ("inside steps",), "the main thread inside steps")
    out += [(share, kind, title + py_title, evidence + py_evidence, fix) for share, kind, title, evidence, fix in rest]
    return out


def _per_call(ov: Overhead, tl: Timeline, mode: str, wall: int, steps: int):
    call = {"train": "model.fit", "evaluate": "model.evaluate"}.get(mode, "model.predict")
    ops = ", ".join(f"{t} {ms(ps / steps)}" for t, ps in ov.pipeline_ops[:4])
    tracing = ov.pipeline_tracing_ps
    traced = f"; {ms(tracing / steps)} of it tracing its dataset functions" if tracing else ""
    model = tl.fraction(tl.compute)
    if call == "model.predict":
        fix = ("model.predict() wraps its input in a new tf.data dataset and iterator on every call, which costs far "
               "more than the model itself on one item or a small batch. Call the model directly: "
               "`model(x, training=False)`, or a `tf.function`-wrapped call you reuse "
               "(`fast = tf.function(lambda x: model(x, training=False))`), or `model.predict_on_batch(x)`; or "
               "collect many inputs into one batch and call predict once.")
    else:
        fix = (f"{call}() builds a new tf.data pipeline and iterator on every call: call it once over the whole "
               "dataset (more epochs or steps per call) instead of once per batch, or use `train_on_batch` / "
               "`test_on_batch` for single batches.")
    return (ov.pipeline_ps / wall, "per_call_overhead",
            f"Per-call {call} overhead: a tf.data pipeline built every call",
            f"{ms(ov.pipeline_ps / steps)} per call builds the input pipeline ({ops}{traced}); the "
            f"model's own ops take {model:.1%} of the step ({ms(tl.compute.sum() / steps)} per call)", fix)


def _rest(b: Breakdown, tl: Timeline, explained: float, per_call: bool) -> list:
    """Host overhead no named cause explains; on device runs, the device idling for the host."""
    if tl.device_busy is not None:
        wait = tl.fraction(tl.input_wait) if tl.input_wait is not None else 0.0
        rest = b.host_overhead - wait - explained
        if rest < MIN_SHARE:
            return []
        return [(rest, "device_idle", "Device idle, waiting for the host",
                 f"for {rest:.0%} of step time the device runs no op and no copy while the host works (launches, "
                 "Python, framework)",
                 "The host cannot keep the device fed: run the step as one compiled function "
                 "(`jit_compile=True`), raise `steps_per_execution`, prefetch to the device, and move per-step "
                 "Python (logging, .numpy(), metrics) off the step's path.")]
    rest = b.host_overhead - explained
    if rest < MIN_SHARE:
        return []
    if per_call:
        return [(rest, "host_overhead", "Keras' per-call Python around each predict",
                 f"{rest:.0%} of step time runs no op and waits on no input: model.predict's own Python (argument "
                 "handling, data adapters, output conversion) on every call",
                 "The same fix as for predict's pipeline: call the model directly (`model(x, training=False)` or a "
                 "reused `tf.function`), or predict many inputs in one call.")]
    return [(rest, "host_overhead", "Python and framework time inside steps",
             f"{rest:.0%} of step time runs no op and waits on no input (Python, dispatch, launches)",
             "Give each call more work: larger batches, `steps_per_execution` in compile(), and move per-step "
             "Python (logging, conversions, .numpy()) out of the loop.")]


def idle_findings(b: Breakdown, tl: Timeline, mode: str, keras_loop: bool, python: PythonProfile | None = None) -> list:
    """The gaps between steps: Keras' loop and callbacks in fit/evaluate, else the user's Python."""
    if b.idle < MIN_SHARE:
        return []
    gaps = max(len(tl.dur) - 1, 1)
    per_gap = ms(tl.idle.sum() / gaps)
    py_title, py_evidence = where_python(python, ("between steps",), "the time between steps")
    if keras_loop and mode in ("train", "evaluate"):
        return [(b.idle, "idle", "Gaps between steps" + py_title,
                 f"{b.idle:.0%} of wall time passes between steps ({per_gap} per gap) in Keras' loop and callbacks"
                 + py_evidence,
                 "Work between steps (callbacks, logging, metrics) stalls the model: trim per-batch callbacks, "
                 "raise `steps_per_execution`, and log less often.")]
    return [(b.idle, "idle", "Your Python between iterations" + py_title,
             f"{per_gap} per iteration outside TensorFlow ({b.idle:.0%} of wall time): your Python between calls, "
             "such as loading data" + py_evidence,
             "Overlap it with the model: load and preprocess in a tf.data pipeline (`Dataset.map(..., "
             "num_parallel_calls=tf.data.AUTOTUNE)` + `prefetch`) or a background thread, process several items "
             "per call, and cache what does not change.")]
