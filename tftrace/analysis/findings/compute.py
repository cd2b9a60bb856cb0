"""Where the model's own compute goes: its heaviest layer (with its top op), and the op category
when that category's time spreads over several layers."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context

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
    "other": "Look at the top ops below: the op types that lead are where a smaller or different layer would save time.",
}
_LAYER_FIX = ("Layer {layer} is where the model's compute goes: make it smaller (fewer {what}), replace it with a "
              "cheaper kind of layer (its top op says which work dominates), or run it in mixed precision on GPU/TPU.")
_WHAT = {"convolution": "filters, a smaller kernel, or a depthwise-separable convolution",
         "matmul": "units", "reshape": "large reshapes (GlobalAveragePooling2D instead of Flatten)"}
SPREAD = 0.6  # the category finding shows when its top layer holds less than this share of it
# Beside a pipeline that sets the step time (analysis.verdict.paced), by why it does.
PACED_FACTS = {
    "busy": fact("the input pipeline sets the step time: with less compute a step waits longer for input and "
                 "takes as long"),
    "cores": fact("the input pipeline's work fills the cores: a lighter model frees only its own share of the "
                  "CPU work"),
}


def detect(ctx: Context) -> list[Finding]:
    b, ops = ctx.breakdown, ctx.ops
    cats = [c for c in ops.categories if c.category != "input"]
    model_ps = sum(c.self_ps for c in cats)
    if b.compute <= 0 or not model_ps:
        return []
    out = []
    layer_cat = ""
    if ops.layers:
        top = ops.layers[0]
        share = top.self_ps / model_ps
        top_op = max((e for e in ctx.table if e.layer == top.layer and e.category != "input"),
                     key=lambda e: (e.self_ps, e.name), default=None)
        layer_cat = top_op.category if top_op else ""
        facts = [pct_fact(f"share of the model's op time in layer {top.layer}", share), ms_fact("its op time", top.self_ps)]
        if top.params >= 0:
            facts.append(fact("parameters", f"{top.params:,}"))
        if top_op is not None:
            facts.append(fact("its top op", f"{top_op.type} ({top_op.category}, {ms(top_op.self_ps)}, {top_op.phase})"))
        fix = _LAYER_FIX.format(layer=top.layer, what=_WHAT.get(layer_cat, "units or channels"))
        out.append(Finding("layer", f"Layer {top.layer}: {share:.0%} of the model's op time", b.compute * share,
                           _paced(ctx, facts), fix, _projected(ctx, share), "compute"))
    top = cats[0]
    share = top.self_ps / model_ps
    in_layer = sum(e.self_ps for e in ctx.table if ops.layers and e.layer == ops.layers[0].layer
                   and e.category == top.category)
    if top.category == "other":  # no category to name: the op type that holds the time is the evidence
        out.append(_op_type(ctx, model_ps))
    elif not ops.layers or top.category != layer_cat or in_layer < SPREAD * top.self_ps:
        op_type, ps, total = _top_type(ctx, top.category)
        of_cat = ps / max(total, 1)
        facts = (pct_fact(f"share of the model's op time in {top.category} ops", share), ms_fact("their op time", top.self_ps),
                 pct_fact(f"of it in {op_type} ops", of_cat))
        out.append(Finding("category", f"Op category {top.category}: {share:.0%} of the model's op time, "
                                       f"{of_cat:.0%} of it {op_type}",
                           b.compute * share, _paced(ctx, facts), _CATEGORY_FIXES.get(top.category, _CATEGORY_FIXES["other"]),
                           _projected(ctx, share), "compute"))
    return out


# Op types outside the known categories that say what to do about them.
_TYPE_FIXES = (
    (("PyFunc", "EagerPyFunc", "PyFuncStateless"), "`{type}` runs Python inside the graph under the GIL: do that work "
     "with TensorFlow ops (or in the input pipeline, ahead of the step), or precompute it."),
    (("StringFormat", "PrintV2", "Print", "Assert", "AsString", "StringJoin", "CheckNumerics"), "`{type}` is debugging "
     "or logging work (tf.print, tf.debugging asserts, string formatting) inside the step: remove it, or run it every "
     "N steps outside the compiled step."),
)
_TYPE_FIX = ("`{type}` takes the most of the model's op time: find where it runs (the op table lists each op with its "
             "layer) and remove it from the step, run it less often, or replace it with a cheaper op.")


def _top_type(ctx: Context, category: str) -> tuple[str, int, int]:
    """The op type that holds most of a category's time: (type, its time, the category's time)."""
    by_type: dict[str, int] = {}
    for e in ctx.table:
        if e.category == category:
            by_type[e.type] = by_type.get(e.type, 0) + e.self_ps
    op_type, ps = max(by_type.items(), key=lambda kv: (kv[1], kv[0]))
    return op_type, ps, sum(by_type.values())


def _op_type(ctx: Context, model_ps: int) -> Finding:
    """The op type that leads among ops of no known category (a custom, Python or debug op)."""
    op_type, ps, _total = _top_type(ctx, "other")
    share = ps / model_ps
    count = sum(e.count for e in ctx.table if e.type == op_type and e.category == "other")
    facts = (pct_fact(f"share of the model's op time in {op_type} ops", share), ms_fact("their op time", ps),
             fact("runs", count))
    fix = next((text for types, text in _TYPE_FIXES if op_type in types), _TYPE_FIX).format(type=op_type)
    return Finding("op_type", f"Op {op_type}: {share:.0%} of the model's op time", ctx.breakdown.compute * share,
                   _paced(ctx, facts), fix, _projected(ctx, share), "compute")


def _projected(ctx: Context, share: float) -> int:
    """The mean step without `share` of the model's op time."""
    if ctx.paced == "cores":  # steps last as long as the CPU work of pipeline and model together
        load = ctx.load
        return round(ctx.per_step_ps * (1 - share * load.model_ps / (load.cpu_ps + load.model_ps)))
    if ctx.paced:  # a lighter model waits longer for the pipeline
        return round(ctx.per_step_ps)
    return ctx.projected(ctx.breakdown.compute * share * ctx.wall_ps)


def _paced(ctx: Context, facts) -> tuple:
    return (*facts, PACED_FACTS[ctx.paced]) if ctx.paced else tuple(facts)
