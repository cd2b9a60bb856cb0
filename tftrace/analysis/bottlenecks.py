"""Ranked bottlenecks: each with its share of step time, the evidence, and a concrete fix."""

from __future__ import annotations

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.ops import OpStats
from tftrace.analysis.overhead import Overhead
from tftrace.report import Bottleneck, Breakdown, InputPipeline

MIN_SHARE = 0.03  # below 3% of step time nothing is worth a user's attention (XProf's "all others" bar)


def _ms(ps: float) -> str:
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


_CATEGORY_FIXES = {
    "matmul": "Dense layers dominate: narrow them, use mixed precision (`keras.mixed_precision.set_global_policy('mixed_float16')` on GPU/TPU), or larger batches for better kernel efficiency.",
    "convolution": "Convolutions dominate: fewer filters or depthwise-separable convolutions, channels-last layout, mixed precision on GPU/TPU, or XLA (`jit_compile=True`).",
    "reshape": "Data movement (Reshape/Transpose/Concat) dominates: avoid Flatten on large feature maps (GlobalAveragePooling2D), and layout changes between layers; XLA (`jit_compile=True`) fuses many of them.",
    "reduction": "Reductions dominate: check pooling/mean over large tensors; XLA (`jit_compile=True`) fuses them with their neighbours.",
    "elementwise": "Many small elementwise ops: `jit_compile=True` (XLA) fuses them into few kernels.",
    "activation": "Activations dominate: XLA (`jit_compile=True`) fuses them into the preceding op.",
    "normalization": "Normalization dominates: fused batch norm (the default) on channels-last, or fewer norm layers.",
    "pooling": "Pooling dominates: larger strides earlier, or GlobalAveragePooling instead of stacked pools.",
    "dropout": "Dropout's random masks cost time in training only; at inference Keras skips them.",
    "optimizer": "Optimizer updates dominate: fewer trainable weights (freeze more), or a fused optimizer / XLA.",
    "loss": "The loss dominates: use from_logits=True losses and avoid Python-side metric work per step.",
    "transfer": "Copies dominate: keep data on the device, prefetch to device, avoid .numpy() inside steps.",
    "collective": "Collectives dominate: larger per-replica batches or gradient accumulation to amortize all-reduce.",
    "other": "Look at the top ops below; ReadVariableOp/Identity-heavy traces often mean many tiny steps: use larger batches or `steps_per_execution`.",
}


def bottlenecks(b: Breakdown, tl: Timeline, ov: Overhead, ops: OpStats, pipeline: InputPipeline,
                mode: str, eager: bool, device: bool = False) -> tuple[Bottleneck, ...]:
    found: list[tuple[float, str, str, str, str]] = []
    if b.input >= MIN_SHARE:
        found.append(_input(b, tl, pipeline))
    found += _overhead(b, tl, ov, mode, eager, device)
    if b.idle >= MIN_SHARE:
        found.append((b.idle, "idle", "Gaps between steps",
                      f"{b.idle:.0%} of wall time passes between steps ({_ms(tl.idle.sum() / max(len(tl.dur) - 1, 1))} per gap)",
                      "Work between steps (callbacks, logging, Python in the loop) stalls the model: trim per-batch "
                      "callbacks, raise `steps_per_execution`, and batch work that runs per item."))
    found += _compute(b, ops)
    found = [f for f in found if f[0] >= MIN_SHARE]
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    return tuple(Bottleneck(i, kind, title, round(share, 4), evidence, fix)
                 for i, (share, kind, title, evidence, fix) in enumerate(found, 1))


def _input(b: Breakdown, tl: Timeline, pipeline: InputPipeline):
    evidence = f"input is {b.input:.0%} of step time ({_ms(tl.input.sum() / max(len(tl.dur), 1))} per step waiting in IteratorGetNext)"
    if pipeline.slowest:
        top = next(s for s in pipeline.stages if s.name == pipeline.slowest)
        evidence += f"; slowest tf.data stage: {top.name}, {_ms(top.self_ps)} self time ({top.share:.0%} of pipeline time)"
        title = f"Input pipeline: slowest stage {top.name}"
    else:
        title = "Waiting for input"
    return b.input, "input", title, evidence, _stage_fix(pipeline.slowest)


def _overhead(b: Breakdown, tl: Timeline, ov: Overhead, mode: str, eager: bool, device: bool) -> list:
    wall = tl.wall_ps or 1
    out = []
    # With no step function retraced, graph building inside steps is the per-call pipeline's
    # own dataset functions being traced anew: one finding, not two.
    per_call_tracing = ov.tracing_ps if ov.pipeline_ps and not ov.traced else 0
    steps = max(len(tl.dur), 1)
    if ov.pipeline_ps:
        share = (ov.pipeline_ps + per_call_tracing) / wall
        ops = ", ".join(f"{t} {_ms(ps)}" for t, ps in ov.pipeline_ops[:4])
        traced = f", plus {_ms(per_call_tracing / steps)} tracing its dataset functions" if per_call_tracing else ""
        call = {"train": "model.fit", "evaluate": "model.evaluate"}.get(mode, "model.predict")
        out.append((share, "per_call_overhead", f"Per-call {call} overhead: a tf.data pipeline built every call",
                     f"{_ms(ov.pipeline_ps / steps)} per step builds datasets and iterators ({ops}){traced}, "
                     f"against {_ms(tl.compute.sum() / steps)} per step running the model's ops",
                     f"{call}() wraps its input in a new tf.data pipeline and iterator on every call. For one item or "
                     "a small batch call `model(x, training=False)` or `model.predict_on_batch(x)`; better still, "
                     "collect items into one batch and call predict once."))
    if ov.tracing_ps and not per_call_tracing:
        share = ov.tracing_ps / wall
        names = ", ".join(f"{n} x{c}" for n, c in ov.traced[:4]) or "functions traced inside the window"
        out.append((share, "retracing", "tf.function tracing inside the measured steps",
                    f"{_ms(ov.tracing_ps)} of graph building inside steps ({names})",
                    "Each trace rebuilds a graph: keep input shapes and dtypes stable (pad or bucket them), pass "
                    "tensors not Python scalars, or set `reduce_retracing=True` / an `input_signature`."))
    if eager and ov.eager_ps:
        share = ov.eager_ps / wall
        out.append((share, "eager", "Eager execution: ops dispatched one by one",
                    f"{ov.eager_count} eager ops take {_ms(ov.eager_ps)} inside steps; each pays Python and "
                    "dispatch cost (model(x) in Keras 3 runs eagerly outside tf.function)",
                    "Run the model as a graph: `model.predict_on_batch(x)`, or wrap the call in `tf.function` "
                    "(`jit_compile=True` for XLA) and reuse it across calls."))
    for name, ps in ov.regions:
        share = ps / wall
        out.append((share, "user_region", f"Your code in tftrace.region('{name}')",
                    f"{_ms(ps / max(len(tl.dur), 1))} per step inside '{name}' runs no TensorFlow op",
                    "This Python work sits on every step's path: batch it (one call for many items), move it "
                    "into a tf.data pipeline (`map(..., num_parallel_calls=tf.data.AUTOTUNE)` + `prefetch`) so "
                    "it overlaps the model, or cache its result."))
    rest = b.host_overhead - sum(o[0] for o in out if o[1] in ("per_call_overhead", "retracing", "user_region"))
    if rest >= MIN_SHARE and device:
        out.append((rest, "device_idle", "Device idle, waiting for the host",
                    f"for {rest:.0%} of step time the device runs no op and no copy while the host works",
                    "The host cannot keep the device fed: run the step as one compiled function "
                    "(`jit_compile=True`), raise `steps_per_execution`, prefetch to the device, and move "
                    "per-step Python (logging, .numpy(), metrics) off the step's path."))
    elif rest >= MIN_SHARE:
        out.append((rest, "host_overhead", "Python and framework time inside steps",
                    f"{rest:.0%} of step time runs no op and waits on no input (Python, dispatch, launches)",
                    "Give each call more work: larger batches, `steps_per_execution` in compile(), and move "
                    "per-step Python (logging, conversions, .numpy()) out of the loop."))
    return out


def _compute(b: Breakdown, ops: OpStats) -> list:
    """Hot spots among the model's own ops (tf.data stages are covered by the input finding)."""
    if b.compute < MIN_SHARE:
        return []
    out = []
    cats = [c for c in ops.categories if c.category != "input"]
    model_ps = sum(c.self_ps for c in cats) or 1
    if cats:
        top = cats[0]
        share = top.self_ps / model_ps
        out.append((b.compute * share, "category", f"Op category {top.category}",
                    f"{top.category} ops take {share:.0%} of the model's op time ({_ms(top.self_ps)})",
                    _CATEGORY_FIXES.get(top.category, _CATEGORY_FIXES["other"])))
    if ops.layers:
        top = ops.layers[0]
        share = top.self_ps / model_ps
        params = f", {top.params:,} parameters" if top.params >= 0 else ""
        out.append((b.compute * share, "layer", f"Layer {top.layer}",
                    f"layer {top.layer} takes {share:.0%} of the model's op time ({_ms(top.self_ps)}{params})",
                    "This layer is where the model's compute goes; shrink it, or change its kind (see category)."))
    model_ops = [o for o in ops.ops if o.category != "input"]
    if model_ops:
        top = model_ops[0]
        share = top.self_ps / model_ps
        out.append((b.compute * share, "op", f"Op {top.name} ({top.type})",
                    f"{top.count} runs, {_ms(top.self_ps)} self time ({share:.0%} of the model's op time)",
                    _CATEGORY_FIXES.get(top.category, _CATEGORY_FIXES["other"])))
    return out
