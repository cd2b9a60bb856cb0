"""What an owner's fix saves (compute.py's findings): its work removed outright (a metric, a
penalty, debugging ops, a layer's layout or dropout pattern), a loop run op by op vectorised, the
arithmetic at a cheaper precision's rate, a plain optimizer's update, or the model's own
arithmetic at the efficiency the roofline shows is reachable; never the model's arithmetic
removed. `o` is one owner's rows together (compute._Owner: kind, name, rows, wall_ps, compute_ps)."""

from __future__ import annotations

from tftrace.analysis.findings import projection
from tftrace.analysis.findings.base import fact, run_floor
from tftrace.analysis.findings.contention import beside, paced_wall
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
    if kind == "regularizer":
        return _paced_projection(ctx, _penalty_to_decay(ctx, o))
    if kind in _REMOVED or (o.kind == "step" and not ctx.xla and any(e.layer for e in ctx.table)
                            and not _model_like(ctx)):
        return _paced_projection(ctx, _removed_with_cores(ctx, o, facts))
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
    dense, kept = sparse_update(ctx) if kind == "optimizer" and not ctx.jax else (0.0, 0.0)
    if kind == "optimizer" and dense > 0:
        facts.append(fact("projected", f"with plain SGD, the rows of the tables a batch looks up updated, not every "
                                       f"row: {dense / (dense + kept):.0%} of the update's op time (its dense "
                                       "arithmetic) goes, the gradient's gathering of its rows stays"))
        return _paced_projection(ctx, projection.removed(
            ctx, dense / (dense + kept) * o.wall_ps * ctx.n,
            f"{o.name}'s dense update of every row (its elementwise ops, {dense / (dense + kept):.0%} of its op time): "
            "plain SGD applies the sparse gradient to the rows it holds"))
    if kind == "optimizer" and o.name.lower() not in _PLAIN_OPTIMIZERS:
        facts.append(fact("projected", f"with SGD with momentum, about {1 - SIMPLER:.0%} of {o.name}'s time: the "
                                       "weight-sized arrays it reads and writes per weight, 5 of Adam's 7"))
        return _paced_projection(ctx, projection.removed(ctx, SIMPLER * o.wall_ps * ctx.n,
                                                         f"{SIMPLER:.0%} of {o.name}'s update: the weight-sized arrays "
                                                         "SGD with momentum does not read or write"))
    # Copies and collectives wait for data to arrive: their time is no kernel's rate to price.
    on_roofline = priced(ctx, o.kind, o.name, o.compute_ps, _words(o), of_model) \
        if o.kind in ("layer", "loss", "code", "step") else None
    if on_roofline is not None:
        return _paced_projection(ctx, on_roofline)
    return projection.unknown(ctx, f"{_words(o)}'s ops are the model's own arithmetic: the trace cannot say what they "
                                   "should cost without their FLOPs and the device's peak; the fix changes the model, "
                                   "so time it (TraceCallback(confirm=True), or the changed model against this one)")


def _removed_with_cores(ctx: Context, o, facts: list) -> projection.Projection:
    """The owner's ops and their dispatch go. Where other owners' ops ran beside its ops, they
    shared the cores and the owners table's split of the step's op time by each op's time as it
    ran says little of what goes: the owner takes its part of that time by each op's work at its
    own pace (contention.py). Its ops then also hid those ops' dispatch (a wait shows only where
    no op runs, and goes to the op that opens the next run), so the dispatch it takes is its op
    runs' part of all the owners' dispatch, at most what it was given."""
    got = beside(ctx, o.kind, o.name) if o.wall_ps >= MIN_HELD * ctx.per_step_ps else None
    if got is None or got.beside_ps < MIN_BESIDE * got.span_ps or not got.span_ps:
        return projection.removed(ctx, o.wall_ps * ctx.n, f"{_words(o)}'s ops and their dispatch")
    rows = [r for r in ctx.owners.rows if r.kind in OP_OWNERS]
    runs = sum(r.runs for r in rows)
    mine = sum(r.runs for r in o.rows)
    dispatch = min(o.wall_ps - o.compute_ps,
                   sum(r.per_step_ps - r.compute_ps for r in rows) * mine / runs if runs else 0.0)
    facts.append(fact("ops beside it", f"{got.runs / ctx.n:.0f} runs a step of other owners' ops ran beside its ops, "
                                       f"{got.slowdown:.1f}x their own pace"))
    work = paced_wall(ctx, o.kind, o.name)
    return projection.removed(ctx, work + dispatch * ctx.n,
                              f"its part of the step's op time, shared by the work each op does at its own pace "
                              f"({work / ctx.n / 1e9:.3g} ms per step), and its op runs' part of the host's dispatch")


MIN_BESIDE = 0.05  # of the span its ops ran: less beside them is a few stray runs, not cores shared
# Of the step: an owner holding less held the cores too briefly for how its time is split to move
# its figure by more than the run's noise.
MIN_HELD = 0.1


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


def _penalty_to_decay(ctx: Context, o) -> projection.Projection:
    """A penalty's fix as written moves it into the optimizer's `weight_decay`: the penalty's ops
    and its gradient go, and the update does one more read and write of each weight it decays (2
    of the 7 weight-sized arrays an Adam update moves), at most that much of the optimizer's time."""
    update_ps = sum(r.per_step_ps for r in ctx.owners.rows if r.kind == "optimizer")
    decay_ps = min(DECAY * update_ps, o.wall_ps)
    return projection.removed(ctx, (o.wall_ps - decay_ps) * ctx.n,
                              f"{_words(o)}'s ops and their dispatch, less the optimizer's weight decay in their place "
                              f"({DECAY:.0%} of its update, {decay_ps / 1e9:.2f} ms per step)")


DECAY = 2 / 7  # of an Adam update's time: one more read and write of each weight


# The ops that gather an embedding table's sparse gradient (the rows a batch looked up) and apply
# it: what an update that takes the gradient as it is keeps.
SPARSE_TYPES = ("UnsortedSegmentSum", "ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterUpdate",
                "ResourceSparseApplyGradientDescent", "ScatterNd", "TensorScatterAdd")
MIN_SPARSE = 0.05  # of the optimizer's op time: the sparse gradient's ops must hold this much to be one


def sparse_update(ctx: Context) -> tuple[float, float]:
    """(dense, sparse) op time of an optimizer that applies an embedding table's sparse gradient
    densely (the gradient's rows gathered by UnsortedSegmentSum, then every row of the table and
    its slots rewritten); (0, 0) where its ops gather no sparse gradient."""
    opt = [e for e in ctx.table if e.category == "optimizer"]
    kept = sum(e.self_ps for e in opt if e.type in SPARSE_TYPES)
    total = sum(e.self_ps for e in opt)
    if not total or kept < MIN_SPARSE * total:
        return 0.0, 0.0
    return float(total - kept), float(kept)


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


# What SGD with momentum saves beside an adaptive optimizer's update, by the weight-sized arrays
# each moves per weight: Adam reads the weight, its gradient and two slots and writes three; SGD
# with momentum reads three and writes two. On six real programs (sample_traces/real) the switch
# saved 16-44% of the optimizer's measured time; counting ops instead (a fifth left) promised 2-5x that.
SIMPLER = 2 / 7
_PLAIN_OPTIMIZERS = {"sgd", "sgd_optimizer", "optimizer"}
