"""Per-call pipeline building: Keras' predict (or fit/evaluate called per batch) wraps its input
in a new tf.data dataset and iterator on every call."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.small_steps import graph_ps
from tftrace.analysis.steps.found import STEP_FUNCTIONS

_CALLS = {"train": "model.fit", "evaluate": "model.evaluate"}


def detect(ctx: Context) -> list[Finding]:
    ov = ctx.overhead
    # Built on most steps: a call per batch. Built in a few only, it is the start-up of a call
    # that runs many steps (the stall detector names it), paid once per call.
    if not ov.pipeline_ps or ov.pipeline_builds * 2 < ctx.n:
        return []
    call = _CALLS.get(ctx.mode, "model.predict")
    n = ctx.n
    facts = [ms_fact("per call building the input pipeline", ov.pipeline_ps / n)]
    if ov.pipeline_ops:
        facts.append(fact("pipeline ops per call", ", ".join(f"{t} {ms(ps / n)}" for t, ps in ov.pipeline_ops[:4])))
    if ov.pipeline_tracing_ps:
        facts.append(ms_fact("of it tracing its dataset functions, per call", ov.pipeline_tracing_ps / n))
    facts += [pct_fact("share of the step the model's own ops take", ctx.tl.fraction(ctx.tl.compute)),
              ms_fact("the model's own ops, per call", ctx.tl.compute.sum() / n)]
    loop = "predict" if call == "model.predict" else "keras"
    share = ov.pipeline_ps / ctx.wall_ps
    if loop == "predict":
        # Called directly, the model runs none of predict's per-call work: neither the pipeline
        # nor the Python around it (argument handling, data adapters, callbacks, output conversion).
        share = max(share, ctx.breakdown.host_overhead)
        facts.append(ms_fact("predict's other per-call work (its Python, no op running), per call",
                             max(ctx.tl.overhead.sum() - ov.pipeline_ps, 0) / n))
        tl = ctx.tl
        p = projection.kept(ctx, (tl.compute.sum() + tl.input.sum() + tl.idle.sum()) / n, "removed",
                            "the model's own ops, its input wait and the work between calls: called directly, the "
                            "model runs no per-call pipeline and no Keras Python around it")
    else:
        # One call over all the batches pays the call's set-up once: a step keeps the run of its
        # step function, less the wait for a fresh iterator's first batch (prefetched in a long
        # call).
        run = max(_step_function_ps(ctx) - ctx.tl.input.sum() / n, ctx.tl.compute.sum() / n)
        share = max(share, ctx.breakdown.host_overhead)
        p = projection.kept(ctx, run, "removed",
                            f"the run of its step function, less the wait for each call's fresh iterator: called "
                            f"once over all the batches, {call} builds its pipeline, iterator and callbacks once, "
                            "not per batch")
    return [Finding("per_call_overhead", f"Per-call {call} overhead: a tf.data pipeline built every call",
                    share, tuple(facts), fix_for("per_call_overhead", loop, call=call), p.step_ps, "host_overhead",
                    subject=call, **p.fields())]


def predict_python(ctx: Context, rest: float) -> list[Finding]:
    """Host overhead left in per-call predict steps once the pipeline is counted: predict's own
    Python (argument handling, data adapters, output conversion)."""
    facts = (pct_fact("share of step time with no op and no input wait", rest),
             fact("model.predict's own Python (argument handling, data adapters, output conversion) on every call"))
    p = projection.removed(ctx, rest * ctx.wall_ps, "predict's per-call Python")
    return [Finding("host_overhead", "Keras' per-call Python around each predict", rest, facts,
                    fix_for("predict_python", "predict"), p.step_ps, "host_overhead", subject="model.predict",
                    **p.fields())]


_CALLED = "EagerLocalExecute: __inference_"  # TensorFlow calling a tf.function's graph


def _step_function_ps(ctx: Context) -> float:
    """Per step, the time TensorFlow spends running Keras' step function (its graph called, ops,
    executor and input wait inside), or the steps' graph time where the trace has no such call."""
    fns = set(STEP_FUNCTIONS) | set(ctx.steps.names)
    rows = ctx.rows_named(lambda n: n.startswith(_CALLED) and n[len(_CALLED):].rsplit("_", 1)[0] in fns)
    rows = rows[ctx.inside(ctx.trace.events["start_ps"][rows]) >= 0]
    if not len(rows):
        return graph_ps(ctx)
    return float(ctx.trace.events["dur_ps"][rows].sum()) / ctx.n
