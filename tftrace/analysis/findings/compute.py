"""Where the model's own compute goes, by owner: the layer (and its phase), the optimizer, a
metric, a regularizer, the loss, the step function's own ops, copies; each finding says what
about the owner costs that much (its class and settings, its op types, its op runs, how it is
run), with the op types as evidence, never an op category on its own."""

from __future__ import annotations

from collections import defaultdict

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for, layer_fix
from tftrace.analysis.findings.owner_projection import OP_OWNERS, projected, sparse_update
from tftrace.analysis.owners.how_run import how_run
from tftrace.analysis.owners.knowledge import known
from tftrace.model.owners import OwnerRow

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
    p = projected(ctx, o, kind, facts, of_model)
    # A loop's share holds its dispatch too, but it explains none of the host's other dispatch: the
    # host time left (the optimizer's op runs, say) is still named by the remainder.
    return Finding(kind, title, share, _paced(ctx, facts), fix, p.step_ps, "compute", subject=o.name, **p.fields())


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
        fix = layer_fix(o.name, cls, params if isinstance(params, int) else -1, _category_of(ctx, o.name), top,
                        o.name in program.outputs)
        if o.name in program.outputs:
            facts.append(fact("makes the model's output"))
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
        key = "optimizer_extras" if extras else ("optimizer_jax" if ctx.jax else
                                                  "optimizer_sparse" if sparse_update(ctx)[0] > 0 else "optimizer")
        return (f"Optimizer {o.name}: {share:.0%} of each step updating the weights",
                fix_for(key, ctx.idiom("cpu" if ctx.on_cpu else "any"), extras=extras),
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
            fix_for("outside_layers", ctx.idiom("captured" if ctx.captured else "any")),
            [fact("owner", "the step function's own ops outside every layer, loss, metric and optimizer scope")],
            "step")


def _category_of(ctx: Context, layer: str) -> str:
    top = max((e for e in ctx.table if e.layer == layer and e.category != "input"),
              key=lambda e: (e.self_ps, e.name), default=None)
    return top.category if top else ""


def _paced(ctx: Context, facts) -> tuple:
    return (*facts, PACED_FACTS[ctx.paced]) if ctx.paced else tuple(facts)


__all__ = ["detect", "ms", "SPREAD"]
