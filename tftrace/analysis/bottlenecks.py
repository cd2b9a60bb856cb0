"""Ranked bottlenecks: each with its share of step time, the evidence, a concrete fix, and the
step time it would leave if its time were gone."""

from __future__ import annotations

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.host_findings import MIN_SHARE, idle_findings, input_findings, ms, overhead_findings
from tftrace.analysis.ops import OpStats
from tftrace.analysis.overhead import Overhead
from tftrace.report import Bottleneck, Breakdown, InputPipeline, PythonProfile

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
                mode: str, eager: bool, keras_loop: bool = False, straggler=None,
                python: PythonProfile | None = None) -> tuple[Bottleneck, ...]:
    """`keras_loop`: steps are Keras' own (its step functions or markers), so the gaps between
    them are Keras' loop and callbacks rather than the user's code. `straggler`: the finding
    about the slowest of several hosts, if one is. `python` names the Python functions behind
    input, overhead and idle time, where samples or tracer events exist."""
    found = [straggler] if straggler else []
    found += input_findings(b, tl, pipeline, python) + overhead_findings(b, tl, ov, mode, eager, python)
    found += idle_findings(b, tl, mode, keras_loop, python) + _compute(b, ops)
    found = [f for f in found if f[0] >= MIN_SHARE]
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    per_step = tl.wall_ps / max(len(tl.dur), 1)
    return tuple(Bottleneck(i, kind, title, round(share, 4), evidence, fix, _projected(per_step, share),
                            round(per_step))
                 for i, (share, kind, title, evidence, fix) in enumerate(found, 1))


def _projected(per_step: float, share: float) -> int:
    """The mean step (with the gap after it) without this time. Shares are of wall time covered
    once however many threads overlap, so removing it saves at most that much."""
    return round(per_step * max(1.0 - share, 0.0))


def _compute(b: Breakdown, ops: OpStats) -> list:
    """Hot spots among the model's own ops (tf.data stages are covered by the input finding);
    with a device, among the ops the device ran."""
    if b.compute < MIN_SHARE:
        return []
    cats = [c for c in ops.categories if c.category != "input"]
    model_ps = sum(c.self_ps for c in cats) or 1
    out = []
    if cats:
        top = cats[0]
        share = top.self_ps / model_ps
        out.append((b.compute * share, "category", f"Op category {top.category}",
                    f"{top.category} ops take {share:.0%} of the model's op time ({ms(top.self_ps)})",
                    _CATEGORY_FIXES.get(top.category, _CATEGORY_FIXES["other"])))
    if ops.layers:
        top = ops.layers[0]
        share = top.self_ps / model_ps
        params = f", {top.params:,} parameters" if top.params >= 0 else ""
        out.append((b.compute * share, "layer", f"Layer {top.layer}",
                    f"layer {top.layer} takes {share:.0%} of the model's op time ({ms(top.self_ps)}{params})",
                    "This layer is where the model's compute goes; shrink it, or change its kind (see category)."))
    if ops.model_op is not None:
        top = ops.model_op
        share = top.self_ps / model_ps
        out.append((b.compute * share, "op", f"Op {top.name} ({top.type})",
                    f"{top.count} runs, {ms(top.self_ps)} self time ({share:.0%} of the model's op time)",
                    _CATEGORY_FIXES.get(top.category, _CATEGORY_FIXES["other"])))
    return out
