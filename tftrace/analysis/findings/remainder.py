"""Host time inside steps that no named cause explains (on device runs: the device idling for
the host), by owner: the ops the host dispatches one by one and whose they are (op runs per
step, what each costs, the owners with the most runs), the user's Python that holds it, or the
framework call that does; never the step function itself."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.host_calls import host_call_fact
from tftrace.analysis.findings.per_call import predict_python
from tftrace.analysis.findings.where import framework_of, hottest_fact
from tftrace.analysis.owners.how_run import how_run

_OP_OWNERS = ("layer", "optimizer", "metric", "regularizer", "loss", "code", "step", "copy", "collective", "debug")
DISPATCH_SHARE = 0.5  # of the unexplained host time: op dispatch must hold this much to be named as its owner
MIN_RUNS = 20  # op runs per step: fewer, and host time between them is not the cost of dispatching them
MAX_RUN_US = 200.0  # a longer gap per op run is something else than scheduling it
_TOP_RUNS = 3


def detect(ctx: Context, explained: float) -> list[Finding]:
    rest = ctx.breakdown.host_overhead - explained
    if rest <= 0:
        return []
    device = ctx.tl.device_busy is not None
    if not device and ctx.overhead.pipeline_ps and ctx.loop == "predict":
        return predict_python(ctx, rest)
    where, in_fn = hottest_fact(ctx, ("inside steps",))
    dispatch = _dispatch(ctx, rest)
    lead = ("share of step time the device runs no op and no copy while the host works" if device else
            "share of step time with no op, no input wait and no named cause")
    if dispatch is not None and not where:
        title, facts = dispatch
        kind = "device_idle" if device else "host_overhead"
        loop = ("custom" if ctx.loop == "custom" else "keras") + ("_cpu" if ctx.on_cpu else "")
        fix = fix_for("dispatch", ctx.idiom(loop))
        p = projection.dispatch(ctx, rest * ctx.wall_ps, "the host's time between op runs, scheduling them")
        return [Finding(kind, title, rest, (pct_fact(lead, rest), *facts), fix, p.step_ps,
                        "host_overhead", subject="dispatch", **p.fields())]
    if not where:
        where, in_fn = host_call_fact(ctx, rest * ctx.wall_ps)
    facts = (pct_fact(lead, rest), *where, *_owners_fact(ctx))
    if device:
        return [Finding("device_idle", "Device idle, waiting for the host" + in_fn, rest, facts,
                        fix_for("device_idle", ctx.idiom()),
                        ctx.projected(rest * ctx.wall_ps), "host_overhead", subject=_function(in_fn) or "host",
                        **projection.unknown(ctx, _UNPRICED).fields())]
    framework = framework_of(ctx, ("inside steps",)) if in_fn and where else ""
    if framework:  # the framework's own Python (TensorFlow's call into its runtime): its time, not a function to fix
        title = f"{framework} running the step, outside any op{in_fn.replace(' in ', ' (in ', 1)})"
        subject = "framework"
    else:
        title = ("Python time inside steps" + in_fn) if in_fn and where else "Framework time inside steps, outside any op"
        subject = _function(in_fn) if in_fn and where else "framework"
    how = "_".join(w for w in ("captured" if ctx.captured else "", "cpu" if ctx.on_cpu else "") if w) or "any"
    variant = "torch_xla" if ctx.torch_xla else "torch" if ctx.torch else how
    p = _per_call(ctx, rest) if framework else None
    if p is not None:
        facts = (*facts, fact("projected", f"with steps_per_execution={SPE}, this time once per {SPE} steps"))
    p = p or projection.unknown(ctx, _UNPRICED)
    return [Finding("host_overhead", title, rest, facts, fix_for("host_overhead", variant), p.step_ps,
                    "host_overhead", subject=subject, **p.fields())]


SPE = 8  # the steps_per_execution a projection assumes (the fix's own example)


def _per_call(ctx: Context, rest: float):
    """TensorFlow's own time around a Keras step's graph ops, in its call into the runtime
    (argument handling, the executor's set-up, the outputs), is paid once per call: with
    `steps_per_execution` it is paid once per that many steps. None where the step is not one
    graph call per step of a Keras loop on TensorFlow (XLA's runtime, several steps a call)."""
    spe = ctx.owners.program.steps_per_execution if ctx.owners.program is not None else None
    if ctx.loop != "keras" or ctx.torch or ctx.jax or ctx.tf_xla or (spe or 1) > 1 or _graph_loop(ctx):
        return None
    return projection.dispatch(ctx, rest * ctx.wall_ps * (1 - 1 / SPE),
                               f"{1 - 1 / SPE:.0%} of TensorFlow's time around the ops, paid once per call")


# Host time no cause claimed: the trace shows where it sits, not which of the fixes offered
# (fewer calls, a compiled step, larger batches) removes how much of it.
_UNPRICED = ("the trace shows this host time but not what runs in it, so not how much of it each fix offered "
             "removes: time the fix (TraceCallback(confirm=True)) to find out")


def _dispatch(ctx: Context, rest: float):
    """(title, facts) when the ops the host dispatches one by one hold most of this time: how
    many per step, what each costs, and whose they are; None otherwise."""
    rows = [r for r in ctx.owners.rows if r.kind in _OP_OWNERS]
    host = [(r, r.per_step_ps - r.compute_ps) for r in rows if r.per_step_ps > r.compute_ps]
    dispatch_ps = sum(ps for _r, ps in host)
    if dispatch_ps < DISPATCH_SHARE * rest * ctx.per_step_ps or not host:
        return None
    runs = sum(r.runs for r in rows)
    if runs < MIN_RUNS:
        return None
    per_run_us = dispatch_ps / runs / 1e6
    if per_run_us > MAX_RUN_US:
        return None
    by_owner: dict[str, float] = {}
    for r in rows:
        label = r.owner
        by_owner[label] = by_owner.get(label, 0.0) + r.runs
    top = sorted(by_owner.items(), key=lambda kv: (-kv[1], kv[0]))[:_TOP_RUNS]
    lead, lead_runs = top[0]
    title = (f"Host time dispatching {runs:.0f} op runs per step ({per_run_us:.1f} us each), "
             f"{lead_runs / runs:.0%} of them run by {lead}")
    facts = (fact("op runs per step", round(runs, 1)), fact("host time per op run", round(per_run_us, 2), "us"),
             fact("owners with the most op runs", ", ".join(f"{k}: {v:.0f}" for k, v in top)))
    return title, facts


def _owners_fact(ctx: Context) -> tuple:
    """The framework's own time, as the owners table holds it."""
    fw = ctx.owners.row("framework")
    if fw is None or fw.per_step_ps <= 0:
        return ()
    return (fact("framework time per step outside any op", round(fw.per_step_ps / 1e9, 3), "ms"),)


def _function(in_fn: str) -> str:
    """` in your load_batch()` -> `load_batch`: the function a title names, as a finding's subject."""
    return in_fn.removeprefix(" in ").removeprefix("your ").removesuffix("()")


def _graph_loop(ctx: Context) -> bool:
    """A layer runs a graph loop (an RNN's while loop): the executor's time between its ops is paid
    per iteration, not per call, so how much of it fewer calls remove is not in the trace."""
    return any((run := how_run(ctx, r.name)) is not None and run.kind == "while_loop"
               for r in ctx.owners.rows if r.kind == "layer")
