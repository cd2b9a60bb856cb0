"""Where the model's own compute goes, by owner: the layer (and its phase), the optimizer, a
metric, a regularizer, the loss, the step function's own ops, copies; each finding says what
about the owner costs that much (its class and settings, its op types, its op runs, how it is
run), with the op types as evidence, never an op category on its own."""

from __future__ import annotations

from collections import defaultdict

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact, run_floor
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for, layer_fix
from tftrace.analysis.findings.roofline_price import priced
from tftrace.analysis.owners.how_run import how_run
from tftrace.analysis.owners.knowledge import known
from tftrace.model.owners import OwnerRow

OP_OWNERS = ("layer", "optimizer", "metric", "regularizer", "loss", "code", "step", "copy", "collective", "debug")
_CONFIGURED = ("metric", "regularizer", "debug")  # owners the user configured: named whenever they hold a real share
TOP = 2  # the heaviest op owners named (configured ones come on top of these)
SPREAD = 0.6  # unused by the owners' findings; kept for callers that read it
# Beside a pipeline that sets the step time (analysis.verdict.paced), by why it does.
PACED_FACTS = {
    "busy": fact("the input pipeline sets the step time: with less compute a step waits longer for input and "
                 "takes as long"),
    "cores": fact("the input pipeline's work fills the cores: a lighter model frees only its own share of the "
                  "CPU work"),
}


def detect(ctx: Context) -> list[Finding]:
    b = ctx.breakdown
    if b.compute <= 0:
        return []
    owners = _by_owner(ctx.owners.rows)
    compute_ps = sum(o.compute_ps for o in owners)
    if compute_ps <= 0:
        return []
    ranked = sorted(owners, key=lambda o: (-o.compute_ps, o.kind, o.name))
    chosen = ranked[:TOP] + [o for o in ranked[TOP:] if o.kind in _CONFIGURED]
    out = []
    unscoped = ctx.torch and not any(e.layer for e in ctx.table)
    for o in chosen:
        share = o.compute_ps / ctx.per_step_ps
        if share <= 0:
            continue
        if unscoped and o.kind == "step":
            # A PyTorch trace names no module scopes: this owner is the whole model, whose removal
            # no fix makes; the breakdown and op tables show its time.
            continue
        out.append(_finding(ctx, o, share, o.compute_ps / compute_ps))
    return out


class _Owner:
    """One owner's rows (a layer's phases together), with its compute part and the rest."""

    def __init__(self, kind: str, name: str):
        self.kind, self.name = kind, name
        self.rows: list[OwnerRow] = []

    @property
    def compute_ps(self) -> float:
        return sum(r.compute_ps for r in self.rows)

    @property
    def wall_ps(self) -> int:
        return sum(r.per_step_ps for r in self.rows)


def _by_owner(rows) -> list:
    """Op owners, a layer's phases merged."""
    grouped: dict[tuple, _Owner] = {}
    for r in rows:
        if r.kind not in OP_OWNERS:
            continue
        o = grouped.setdefault((r.kind, r.name), _Owner(r.kind, r.name))
        o.rows.append(r)
    return list(grouped.values())


def _finding(ctx: Context, o: _Owner, share: float, of_model: float) -> Finding:
    per_step = o.compute_ps  # per step
    phases = defaultdict(float)
    types: dict[str, int] = {}
    runs = 0.0
    for p in o.rows:
        phases[p.phase or "-"] += p.compute_ps
        runs += p.runs
    facts = [pct_fact("share of each step in its ops", share), ms_fact("its ops' time per step", per_step),
             pct_fact("of the model's op time", of_model), fact("op runs per step", round(runs, 1))]
    top_types = o.rows[0].what if len(o.rows) == 1 else ", ".join(
        dict.fromkeys(t for p in sorted(o.rows, key=lambda p: -p.compute_ps) for t in p.what.split(", ") if t))
    if top_types:
        facts.append(fact("its top op types", top_types))
    if len(phases) > 1 or "backward" in phases:
        total = sum(phases.values()) or 1
        facts.append(fact("by phase", ", ".join(f"{k} {v / total:.0%}" for k, v in
                                                 sorted(phases.items(), key=lambda kv: -kv[1]))))
    dispatch = o.wall_ps - o.compute_ps
    if dispatch > 0.02 * ctx.per_step_ps:
        facts.append(ms_fact("and the host's dispatch of its op runs, per step", dispatch))
    if o.kind == "layer" and how_run(ctx, o.name) is not None and how_run(ctx, o.name).kind == "while_loop":
        share = o.wall_ps / ctx.per_step_ps  # the loop's dispatch is its cost: the finding holds the owner's time
    title, fix, more, kind = _describe(ctx, o, share)
    facts += more
    if not ctx.owners.program.known and o.kind in ("step", "metric", "regularizer"):
        facts += [fact("unknown", u) for u in ctx.owners.program.unknown]
    p = _projection(ctx, o, kind, facts, of_model)
    part = "host_overhead" if kind == "while_loop" else "compute"  # a loop's cost is its dispatch
    return Finding(kind, title, share, _paced(ctx, facts), fix, p.step_ps, part, subject=o.name, **p.fields())


def _projection(ctx: Context, o: _Owner, kind: str, facts: list, of_model: float) -> projection.Projection:
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


def _vectorised(ctx: Context, o: _Owner) -> projection.Projection:
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


def _words(o: _Owner) -> str:
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


def _describe(ctx: Context, o: _Owner, share: float) -> tuple[str, str, list, str]:
    """(title, fix, facts about what the owner is and how it runs, finding kind)."""
    program = ctx.owners.program
    if o.kind == "layer":
        cls = program.layer_classes.get(o.name, "")
        params = ctx.trace.sidecar.get("layer_params", {}).get(o.name, -1)
        facts = [fact("class", cls)] if cls else []
        if isinstance(params, int) and params >= 0:
            facts.append(fact("parameters", f"{params:,}"))
        if o.name in program.layer_config:
            facts.append(fact("settings", program.layer_config[o.name]))
        if o.name in program.layer_policies:
            facts.append(fact("dtype policy", program.layer_policies[o.name]))
        run = how_run(ctx, o.name)
        head = f"Layer {o.name}" + (f" ({cls})" if cls else "")
        if run is not None:
            facts += run.facts
            return f"{head}: {share:.0%} of each step, {run.title}", run.fix, facts, run.kind
        top = o.rows[0].what.split(", ")[0] if o.rows[0].what else "its ops"
        backward = sum(p.compute_ps for p in o.rows if p.phase == "backward") / max(o.compute_ps, 1)
        phase = f", {backward:.0%} of it the backward pass" if backward >= 0.5 else ""
        fix = layer_fix(o.name, cls, params if isinstance(params, int) else -1, _category_of(ctx, o.name), top)
        return f"{head}: {share:.0%} of each step in its ops{phase}", fix, facts, "layer"
    if o.kind == "optimizer":
        facts = []
        if program.optimizer:
            facts.append(fact("optimizer", program.optimizer))
        if program.trainable_weights >= 0:
            facts.append(fact("weights it updates", program.trainable_weights))
        if program.optimizer_extras:
            facts.append(fact("settings that add work per weight", ", ".join(program.optimizer_extras)))
        if program.constrained:
            facts.append(fact("constraints applied after each update", "; ".join(program.constrained)))
        extras = ", ".join(program.optimizer_extras + tuple(f"constraint {c}" for c in program.constrained))
        key = "optimizer_extras" if extras else ("optimizer_jax" if ctx.jax else "optimizer")
        return (f"Optimizer {o.name}: {share:.0%} of each step updating the weights",
                fix_for(key, "cpu" if ctx.on_cpu else "any", extras=extras),
                facts, "optimizer")
    if o.kind == "metric":
        configs = [program.metric_configs.get(m, m) for m in program.metrics] or [o.name]
        facts = [fact("compiled metrics", ", ".join(configs))] if program.metrics else []
        return (f"Metric {o.name}: {share:.0%} of each step computing it on every batch",
                fix_for("metric", name=o.name), facts, "metric")
    if o.kind == "regularizer":
        return (f"Regularizer {o.name}: {share:.0%} of each step in the penalty and its gradient",
                fix_for("regularizer", name=o.name), [], "regularizer")
    if o.kind == "loss":
        return (f"Loss {o.name}: {share:.0%} of each step", fix_for("loss", name=o.name), [], "loss")
    if o.kind == "debug":
        entry = known(o.name, ctx.xla)
        facts = [fact("what puts it there", entry.why)] if entry else []
        where = sorted({e.name.rsplit("/", 1)[0] for e in ctx.table if e.type == o.name and "/" in e.name})[:3]
        if where:
            facts.append(fact("where it runs", ", ".join(where)))
        title = entry.title if entry else "ops a step should not pay for"
        return (f"{o.name} ops ({title}): {share:.0%} of each step", fix_for(entry.key if entry else "outside_layers",
                "jax" if ctx.jax else "any"), facts, entry.key if entry else "debug")
    if o.kind == "code":
        return (f"Code {o.name}: {share:.0%} of each step in the ops it makes", fix_for("code", name=o.name),
                [fact("where", o.name)], "code")
    if o.kind in ("copy", "collective"):
        return (f"{'Copies' if o.kind == 'copy' else 'Collectives'} ({o.name}): {share:.0%} of each step",
                fix_for("transfer" if o.kind == "copy" else "collective"), [], o.kind)
    if not any(e.layer for e in ctx.table):
        return (f"The model's ops, whose names carry no layer scope: {share:.0%} of each step",
                fix_for("outside_layers"), [fact("owner", "no op of this trace names a layer scope")], "step")
    return (f"The step function's ops outside any layer: {share:.0%} of each step",
            fix_for("outside_layers", "torch" if ctx.torch else "captured" if ctx.captured else "any"),
            [fact("owner", "the step function's own ops outside every layer, loss, metric and optimizer scope")],
            "step")


def _category_of(ctx: Context, layer: str) -> str:
    top = max((e for e in ctx.table if e.layer == layer and e.category != "input"),
              key=lambda e: (e.self_ps, e.name), default=None)
    return top.category if top else ""


def _paced(ctx: Context, facts) -> tuple:
    return (*facts, PACED_FACTS[ctx.paced]) if ctx.paced else tuple(facts)


__all__ = ["detect", "ms", "SPREAD"]
