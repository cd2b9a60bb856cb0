"""What an owner's fix saves (compute.py's findings): its work removed outright (a metric, a
penalty, debugging ops, a layer's layout or dropout pattern), a loop run op by op vectorised, the
arithmetic at a cheaper precision's rate, a plain optimizer's update, or the model's own
arithmetic at the efficiency the roofline shows is reachable; never the model's arithmetic
removed. `o` is one owner's rows together (compute._Owner: kind, name, rows, wall_ps, compute_ps)."""

from __future__ import annotations

from tftrace.analysis.findings import projection
from tftrace.analysis.findings.base import fact, run_floor
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.roofline_price import priced
from tftrace.analysis.owners.how_run import how_run

OP_OWNERS = ("layer", "optimizer", "metric", "regularizer", "loss", "code", "step", "copy", "collective", "debug")


def projected(ctx: Context, o, kind: str, facts: list, of_model: float) -> projection.Projection:
    """What the owner's fix saves, by what it changes: work removed outright (a metric, a penalty,
    debugging ops, a layout's transposes), a loop run op by op made one op, the arithmetic at a
    cheaper precision's rate, a plain optimizer's update; the model's own arithmetic is never
    projected away: without a cost model of it the trace cannot say what it should cost."""
    run = how_run(ctx, o.name) if o.kind == "layer" else None
    if run is not None and kind in _REMOVED:  # the pattern's ops go; the rest of the layer stays
        return _paced_projection(ctx, projection.removed(ctx, run.share * o.wall_ps * ctx.n,
                                                         f"layer {o.name}'s {run.title.split(' of it ', 1)[-1]} "
                                                         f"({run.share:.0%} of its op time) and their dispatch"))
    if kind in _REMOVED or (o.kind == "step" and not ctx.xla and any(e.layer for e in ctx.table)
                            and not _model_like(ctx)):
        return _paced_projection(ctx, projection.removed(ctx, o.wall_ps * ctx.n, f"{_words(o)}'s ops and their dispatch"))
    if kind == "while_loop":
        return _paced_projection(ctx, _vectorised(ctx, o))
    if kind == "precision":
        return _paced_projection(ctx, projection.scaled(
            ctx, o.wall_ps * (1 - 1 / WIDER) * ctx.n,
            f"{_words(o)}'s ops at float32's rate, which moves half the bytes of float64 and has fused kernels: "
            f"about {WIDER:g}x faster"))
    if kind == "optimizer" and o.name.lower() in _PLAIN_OPTIMIZERS:
        return projection.unknown(ctx, f"{_words(o)} is already a plain update: its work per weight is what the "
                                       "training needs; fewer weights to train is the lever, which changes the model")
    if kind == "optimizer" and o.name.lower() not in _PLAIN_OPTIMIZERS:
        facts.append(fact("projected", f"with a plain update (SGD), about {1 - SIMPLER:.0%} of {o.name}'s work per "
                                       "weight"))
        return _paced_projection(ctx, projection.removed(ctx, SIMPLER * o.wall_ps * ctx.n,
                                                         f"{SIMPLER:.0%} of {o.name}'s update: what a plain SGD update "
                                                         "does not do"))
    # Copies and collectives wait for data to arrive: their time is no kernel's rate to price.
    on_roofline = priced(ctx, o.kind, o.name, o.compute_ps, _words(o), of_model) \
        if o.kind in ("layer", "loss", "code", "step") else None
    if on_roofline is not None:
        return _paced_projection(ctx, on_roofline)
    return projection.unknown(ctx, f"{_words(o)}'s ops are the model's own arithmetic: the trace cannot say what they "
                                   "should cost without their FLOPs and the device's peak; the fix changes the model, "
                                   "so time it (TraceCallback(confirm=True), or the changed model against this one)")


def _model_like(ctx: Context) -> bool:
    """Do the ops outside every scope (layer, loss, optimizer, metric) do much of the model's kind
    of arithmetic (matmuls and convolutions: MODEL_LIKE of their time)? Then they are likely the
    model itself, in scopes this trace does not name as layers (a TF1, Hub or vendor-fused model),
    not a custom step's own work to take out (an SVD, a monitor's statistics)."""
    outside = [e for e in ctx.table if not e.layer and e.category not in _SCOPED]
    total = sum(e.self_ps for e in outside)
    arithmetic = sum(e.self_ps for e in outside if e.category in ("matmul", "convolution"))
    return total > 0 and arithmetic >= MODEL_LIKE * total


MODEL_LIKE = 0.3
_SCOPED = ("input", "transfer", "collective", "optimizer", "loss")


def _vectorised(ctx: Context, o) -> projection.Projection:
    """A layer run op by op in a graph loop, vectorised: one op per kind over the whole batch. What
    goes is each iteration's fixed cost: the host's dispatch of its op runs, the loop's own
    machinery (the host time inside steps no op accounts for, where the loop holds most op runs),
    and, in its ops, what each run costs whatever it computes (the cheapest quarter of its runs);
    the arithmetic stays."""
    floor = run_floor([e for e in ctx.table if e.layer == o.name])
    runs = sum(r.runs for r in o.rows)
    removed = o.wall_ps - o.compute_ps
    if runs >= 0.5 * _op_runs(ctx):  # the loop is most of the step: the host's time between ops is its
        others = sum(r.per_step_ps - r.compute_ps for r in ctx.owners.rows if r.kind in OP_OWNERS and r.kind != "step"
                     and not (r.kind == "layer" and r.name == o.name) and r.per_step_ps > r.compute_ps)
        mine = ctx.breakdown.host_overhead * ctx.per_step_ps - others - _profiler_ps(ctx)
        removed = max(removed, mine)
    removed += min(floor * runs, o.compute_ps)
    return projection.dispatch(ctx, removed * ctx.n,
                               f"the loop's per-iteration cost: the host's dispatch of its {runs:.0f} op runs a step, "
                               f"the loop's machinery, and {floor / 1e6:.0f} us of each run's own time")


def _profiler_ps(ctx: Context) -> float:
    return sum(r.per_step_ps for r in ctx.owners.rows if r.kind == "profiler")


def _op_runs(ctx: Context) -> float:
    return sum(r.runs for r in ctx.owners.rows if r.kind in OP_OWNERS)


WIDER = 2.0  # float64 against float32 arithmetic on the same device: at least twice the time
# Owners whose fix deletes their work: the step keeps everything else.
_REMOVED = ("metric", "regularizer", "debug", "debug_ops", "python_op", "layout", "casts", "dropout")


def _words(o) -> str:
    return {"layer": f"layer {o.name}", "step": "the step function's own ops"}.get(o.kind, f"{o.kind} {o.name}")


def _paced_projection(ctx: Context, p: projection.Projection) -> projection.Projection:
    """Beside a pipeline that sets the pace, less compute saves nothing (or only the model's share
    of the cores' work)."""
    if not ctx.paced:
        return p
    if ctx.paced == "cores":
        load = ctx.load
        saved = (ctx.per_step_ps - p.step_ps) * load.model_ps / (load.cpu_ps + load.model_ps)
        return projection.Projection(round(ctx.per_step_ps - saved), p.basis, p.how + "; the pipeline fills the cores "
                                     "beside it, so only the model's share of their work goes")
    return projection.Projection(round(ctx.per_step_ps), p.basis, p.how + "; but the input pipeline sets the step "
                                 "time, so the step waits as long for input")


# What a plain SGD update costs beside an adaptive optimizer's (Adam and the like read and write
# two moment slots, with several ops each, per weight): about a fifth of the work.
SIMPLER = 0.8
_PLAIN_OPTIMIZERS = {"sgd", "sgd_optimizer", "optimizer"}
