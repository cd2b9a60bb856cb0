"""Analyse one Trace into a RunReport: every analysis, in data-flow order."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import event_classes, timeline
from tftrace.analysis.eager_layers import eager_layers
from tftrace.analysis.confirmation import interpret, measured_verdict
from tftrace.analysis.findings import Context, diagnose, memory_findings
from tftrace.analysis.input import ranked_pipeline, stage_totals
from tftrace.analysis.measured import ratios
from tftrace.analysis.memory.allocators import allocators
from tftrace.analysis.ops import OpEntry, merge_tables, op_stats, op_table
from tftrace.analysis.overhead import overhead
from tftrace.analysis.python import python_profile
from tftrace.analysis.steps.device_link import DeviceWork, extend_to_cpu_modules, extend_to_device, link_device_work
from tftrace.analysis.devices import device_rows
from tftrace.analysis.hosts import HostView, host_rows, slowest
from tftrace.analysis.steps.mode import run_mode
from tftrace.analysis.steps.startup import startup_steps, steady
from tftrace.analysis.steps.median_step import step_view
from tftrace.analysis.steps.found import STEP_FUNCTIONS, Steps, find_steps
from tftrace.analysis.pipeline_load import PipelineLoad, pipeline_load
from tftrace.analysis.steps.ran_ahead import ran_ahead_note
from tftrace.analysis.capture_cost import capture_note
from tftrace.analysis.cost.rows import with_costs, with_layer_flops, with_peaks
from tftrace.analysis.cost.summary import host_costs, merge_costs, run_cost, top_rows
from tftrace.analysis.steps.cpu_pace import paced_by_module_runs
from tftrace.analysis.profiler_cost import SAMPLER, ProfilerCost, less_profiler, profiler_cost, profiler_notes
from tftrace.analysis.untraced_pace import UntracedPace, untraced_note, untraced_pace
from tftrace.analysis.verdict import HIGHLY_INPUT, paced, verdict
from tftrace.analysis.steps.cut_short import window_note
from tftrace.model.report import DEFAULT_TOP, Breakdown, DeviceRow, RunReport, StepRow, StepsSummary, Verdict
from tftrace.model.events import Trace
from tftrace.model.memory import AllocatorRow, Memory

_KERAS_MARKERS = {"train", "test", "predict", "profiled batch"}  # TraceCallback, tf.keras, Keras 3's TensorBoard
_COMPUTE_CATEGORIES = {"matmul", "convolution", "reduction", "reshape", "elementwise", "activation",
                       "normalization", "pooling", "dropout", "loss", "optimizer"}


@dataclass(frozen=True)
class HostPart:
    """What one host adds to its run's report (the map's result): its steps and their parts, op
    table, tf.data stage totals, devices and memory peaks; no events, so it is small enough to
    travel between processes."""

    host: str
    view: HostView
    table: tuple[OpEntry, ...]
    stages: dict
    devices: tuple[str, ...]  # device planes
    device_rows: tuple[DeviceRow, ...]
    memory: tuple[AllocatorRow, ...]  # with this host's own steps
    costs: dict = dataclasses.field(default_factory=dict)  # (op name, on a device) -> its cost (analysis/cost)


def analyze_trace(trace: Trace, name: str, top: int | None = DEFAULT_TOP, ops: str = "all") -> RunReport:
    """The full report of one run; `top` bounds the ranked op, layer and category lists; `ops`
    lists all ops, or only host or only device ops. With several hosts, steps and the breakdown
    are the slowest host's (it sets everyone's step time); ops add up over all hosts."""
    if len(trace.hosts) > 1:
        parts = [host_part(trace.of_host(h)) for h in trace.hosts]
        return combine_hosts(parts, trace.of_host, name, top, ops)
    part, classes, judged = _host_part(trace)
    return _report(trace, [part], name, top, ops, classes, judged)


def host_part(trace: Trace) -> HostPart:
    """The map: one host's part of its run's report (merged intervals left out: only the
    slowest host's are needed, and combine_hosts makes those again)."""
    part, _classes, _judged = _host_part(trace)
    tl = part.view.tl
    empty = np.zeros(0, np.int64)
    return dataclasses.replace(part, view=dataclasses.replace(part.view, tl=dataclasses.replace(tl, busy=(empty, empty))))


def combine_hosts(parts: list[HostPart], load_host, name: str, top: int | None = DEFAULT_TOP,
                  ops: str = "all", problems: tuple[str, ...] = ()) -> RunReport:
    """The reduce: a run's report from its hosts' parts (in host order); `load_host(host)` gives
    the Trace of the slowest host, whose steps, breakdown and findings the report shows;
    `problems` names host files left out."""
    timed = load_host(slowest([p.view for p in parts]).host)
    if problems:
        timed = dataclasses.replace(timed, problems=tuple(problems) + timed.problems)
    return _report(timed, parts, name, top, ops)


def _host_part(trace: Trace) -> tuple[HostPart, tuple, Judged]:
    steps, work = steps_with_device_work(trace)
    classes = event_classes(trace)
    tl = timeline(trace, steps, classes, work)
    own = profiler_cost(trace, tl)
    parts = _parts(less_profiler(tl, own))
    table = op_table(trace, *eager_layers(trace, steps.starts))
    collective = sum(e.self_ps for e in table if e.category == "collective")
    judged = _judge(trace, tl, own, classes[1], steps.numbers)
    view = HostView(trace.hosts[0] if trace.hosts else "", steps, tl, parts, judged.verdict.bound, collective, own)
    real = steps.kind not in ("window", "none")
    spans = (steps.starts, steps.ends, steps.numbers) if real else ((), (), ())
    memory = allocators(trace, *spans, {e.name: e.layer for e in table if e.layer})
    return HostPart(view.host, view, tuple(table), stage_totals(trace), trace.devices, device_rows(trace),
                    memory, host_costs(trace)), classes, judged


def _report(timed: Trace, parts: list[HostPart], name: str, top: int | None, ops: str,
            classes: tuple | None = None, judged: Judged | None = None) -> RunReport:
    """The report from the timed (slowest) host's Trace and every host's part."""
    views = [p.view for p in parts] if len(parts) > 1 else []
    if classes is None:  # the timed host's intervals, made again: its part travelled without them
        steps, work = steps_with_device_work(timed)
        classes = event_classes(timed)
        tl = timeline(timed, steps, classes, work)
        own = profiler_cost(timed, tl)
    else:
        steps, tl, own = parts[0].view.steps, parts[0].view.tl, parts[0].view.profiler
    table = merge_tables(p.table for p in parts) if views else list(parts[0].table)
    stats = op_stats(timed, table, top, ops)
    ov = overhead(timed, steps, classes, tl.busy)
    breakdown = _parts(less_profiler(tl, own))
    mode, mode_source = run_mode(timed, steps, table)
    eager = _is_eager(table)
    pipeline = ranked_pipeline(_sum_stages(p.stages for p in parts), top)
    python = python_profile(timed, tl.start, tl.start + tl.dur)  # all rows: the findings look through them
    judged = judged or _judge(timed, tl, own, classes[1], steps.numbers)
    memory_rows = _memory_rows(parts)
    pace = untraced_pace(timed.sidecar, tl, own)
    summary = _steps_summary(steps, tl, own, timed.hosts[0] if views else "", pace)
    # Every row of the roofline for the findings, which price the model's arithmetic on it; the
    # report lists the top ones.
    cost = run_cost(timed, table, merge_costs(p.costs for p in parts), summary.count, summary.mean_ps, None, mode)
    ctx = Context(trace=timed, steps=steps, tl=tl, breakdown=_parts(tl), profiler=own, overhead=ov, ops=stats, table=table,
                  pipeline=pipeline, mode=mode, eager=eager, loop=_loop(timed, steps, mode), python=python,
                  hosts=tuple(views), load=judged.load, paced=judged.paced, bound=judged.verdict.bound,
                  memory=memory_rows, measured=ratios(timed.experiment), roofline=cost.roofline)
    found = diagnose(ctx)
    cost = dataclasses.replace(cost, roofline=top_rows(cost.roofline, top))
    experiment = interpret(timed.experiment, summary, judged.verdict.bound) if timed.experiment is not None else None
    hosts = tuple(p.host for p in parts) if views else timed.hosts
    return RunReport(
        path=timed.path, name=name, hosts=hosts, devices=tuple(sorted({d for p in parts for d in p.devices})),
        mode=mode, mode_source=mode_source, framework="pytorch" if ctx.torch else "", eager=eager,
        steps=summary, breakdown=breakdown,
        verdict=measured_verdict(judged.verdict, experiment), bottlenecks=found,
        ops=with_costs(stats.ops, cost), layers=with_layer_flops(stats.layers, cost), categories=stats.categories,
        input_pipeline=pipeline,
        notes=_notes(len(hosts), timed.problems, steps, eager) + _profiler_notes(timed, tl, own, classes[1], steps.numbers, judged.verdict.bound)
        + untraced_note(pace) + capture_note(timed.sidecar, timed.python_samples, steps.count, _named(own, SAMPLER))
        + (ran_ahead_note(tl) if ctx.jax else ()),
        host_op_ps=stats.host_self_ps,
        device_op_ps=stats.device_self_ps, per_host=host_rows(views),
        per_device=tuple(sorted((with_peaks(r, cost) for p in parts for r in p.device_rows),
                                key=lambda r: (r.host, r.device))),
        python=dataclasses.replace(python, rows=python.rows[:top] if top else python.rows),
        step_view=step_view(timed, tl.start, tl.dur, tl.idle, steps.numbers, classes[0]),
        cut_short=window_note(timed.sidecar, steps.count if steps.kind != "window" else 0), experiment=experiment,
        memory=Memory(memory_rows, memory_findings(ctx)), owners=ctx.owners.rows[:top] if top else ctx.owners.rows,
        flops_per_step=cost.flops_per_step, mfu=cost.mfu, roofline=cost.roofline,
    )


def _sum_stages(stage_totals) -> dict[str, int]:
    out: dict[str, int] = {}
    for totals in stage_totals:
        for k, v in totals.items():
            out[k] = out.get(k, 0) + v
    return out


def _memory_rows(parts: list[HostPart]) -> tuple[AllocatorRow, ...]:
    """Every host's allocators, largest peak first; named by host when there are several."""
    if len(parts) == 1:
        return parts[0].memory
    rows = [dataclasses.replace(r, host=p.host) for p in parts for r in p.memory]
    return tuple(sorted(rows, key=lambda r: (-r.peak_bytes, r.host, r.name)))


@dataclass(frozen=True)
class Judged:
    """The verdict, with the input pipeline's load behind it and why it sets the pace ("" if not)."""

    verdict: Verdict
    load: PipelineLoad | None
    paced: str


def _judge(trace: Trace, tl, own: ProfilerCost | None, compute, numbers) -> Judged:
    """The verdict, of the steady state and of the steps less the profiler's own time:
    steps holding a call's start-up are left out (and named); the pipeline's load is measured on
    the host only, how long its threads work only where the step waits for it."""
    device = tl.device_busy is not None
    startup = startup_steps(trace, tl)
    judged = less_profiler(tl, own)
    if len(startup):
        tl, judged = steady(tl, startup), steady(judged, startup)
    parts = _parts(judged)
    load = None if device else pipeline_load(trace, tl, compute, parts.input >= HIGHLY_INPUT)
    left_out = ", ".join(str(numbers[i]) for i in startup)
    why = f"step {left_out} left out: a call's start-up, building its input iterator" if len(startup) else ""
    wait = tl.fraction(tl.input_wait) if device and tl.input_wait is not None else 0.0
    return Judged(verdict(parts, tl.wall_ps > 0, device, load, why, wait), load, paced(parts, device, load))


def _parts(tl) -> Breakdown:
    return Breakdown(*(round(tl.fraction(p), 6) for p in (tl.input, tl.compute, tl.overhead, tl.idle)))


def steps_with_device_work(trace: Trace) -> tuple[Steps, DeviceWork]:
    """Steps, with the device work each launched; host-found steps run on to their last device
    event."""
    steps = find_steps(trace)
    steps = paced_by_module_runs(trace, steps) or steps  # the host ran ahead of XLA:CPU: its pace
    starts, ends = np.asarray(steps.starts, np.int64), np.asarray(steps.ends, np.int64)
    work = link_device_work(trace, starts, ends, np.asarray(steps.numbers, np.int64),
                            by_group=steps.source.startswith("device step line"))
    if steps.kind in ("marker", "function") and work.how != "none":
        steps = dataclasses.replace(steps, ends=tuple(extend_to_device(ends, work, trace).tolist()))
    elif steps.kind == "function":
        steps = dataclasses.replace(steps, ends=tuple(extend_to_cpu_modules(trace, starts, ends).tolist()))
    return steps, work


def _loop(trace: Trace, steps: Steps, mode: str) -> str:
    """Who drives the steps: `keras` (fit or evaluate: the time between steps is Keras' loop and
    callbacks), `predict` (predict or model calls, per item in the user's loop or per batch in
    Keras'), or `custom` (the user's own training loop)."""
    if mode == "predict":
        return "predict"
    user_marked = trace.sidecar.get("mode") == "trace"  # tftrace.trace() with tftrace.step(): the user's loop
    if steps.kind == "marker" and not user_marked and all(n.lower() in _KERAS_MARKERS for n in steps.names):
        return "keras"
    if steps.kind == "marker" and trace.sidecar.get("mode") in ("fit", "evaluate"):  # TraceCallback on torch
        return "keras"
    if steps.kind == "function" and steps.names and steps.names[0] in STEP_FUNCTIONS and mode in ("train", "evaluate"):
        return "keras"
    if steps.kind == "function" and steps.source.endswith("(Keras 3 on JAX)") and mode != "predict":
        return "keras"
    return "custom" if mode in ("train", "evaluate", "unknown", "mixed") else "predict"


def _is_eager(table) -> bool:
    """The model's own ops ran eagerly (op by op) rather than inside tf.function graphs."""
    model_ops = [e for e in table if e.category in _COMPUTE_CATEGORIES and e.device == "host"]
    eager = sum(e.self_ps for e in model_ops if e.eager)
    return eager > 0 and eager >= sum(e.self_ps for e in model_ops if not e.eager)


def _steps_summary(steps, tl, own: ProfilerCost | None, host: str = "", pace: UntracedPace | None = None) -> StepsSummary:
    """`host`: with several hosts, the one whose steps these are (the slowest). Where the
    profiler's own time is known, each row says its share and the summary gives the steps less it;
    `pace`: the same call's steps the capture timed untraced."""
    source = f"{steps.source} on host {host}, the slowest" if host else steps.source
    if steps.kind in ("none",) or not len(tl.dur):
        return StepsSummary(0, source, 0, 0, steps.note)
    zeros = np.zeros(len(tl.dur), np.int64)
    device = [x if x is not None else zeros for x in (tl.device_busy, tl.copies, tl.input_wait)]
    spent = own.step_ps if own is not None else zeros
    rows = tuple(StepRow(*map(int, values)) for values in
                 zip(steps.numbers, tl.start, tl.dur, tl.input, tl.compute, tl.overhead, tl.idle, *device, spent))
    count = 0 if steps.kind == "window" else len(rows)
    extra = {}
    if own is not None:
        dur = tl.dur - own.step_ps
        extra = dict(profiler_ps=int(own.step_ps.mean()), median_less_profiler_ps=int(np.median(dur)),
                    mean_less_profiler_ps=int(dur.mean()))
    if pace is not None:
        extra.update(untraced_ps=pace.ps, untraced_steps=pace.steps)
    return StepsSummary(count, source, int(tl.dur.mean()), int(np.median(tl.dur)), steps.note, rows, **extra)


def _named(own: ProfilerCost | None, owner: str) -> bool:
    return own is not None and any(s.owner == owner for s in own.sources)


def _profiler_notes(trace: Trace, tl, own: ProfilerCost | None, compute, numbers, bound: str) -> tuple[str, ...]:
    """The profiler's notes, with the traced steps' own verdict where leaving it out changed it."""
    if own is None:
        return ()
    traced = _judge(trace, tl, None, compute, numbers).verdict.bound
    return profiler_notes(own, bound, traced)


def _notes(hosts: int, problems: tuple[str, ...], steps, eager: bool) -> tuple[str, ...]:
    notes = []
    if eager:
        notes.append("the model ran eagerly (Keras 3 runs model(x) op by op outside tf.function); "
                     "XProf attributes none of this time to ops, tftrace does")
    if steps.kind == "marker" and steps.count == 1:
        notes.append("only one step was captured: step-to-step spread cannot be measured")
    if hosts > 1:
        notes.append(f"{hosts} hosts: steps and breakdown are the slowest host's (in synchronous "
                     "training it sets every host's step time); ops add up over all hosts; see the hosts table")
    notes += [f"left out, unreadable: {p}" for p in problems]
    return tuple(notes)

