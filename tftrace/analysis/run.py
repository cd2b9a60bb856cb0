"""Analyse one Trace into a RunReport: every analysis, in data-flow order."""

from __future__ import annotations

import dataclasses

import numpy as np

from tftrace.analysis.breakdown import event_classes, timeline
from tftrace.analysis.eager import eager_layers
from tftrace.analysis.experiment import interpret, measured_verdict
from tftrace.analysis.findings import Context, diagnose
from tftrace.analysis.input import input_pipeline
from tftrace.analysis.memory import allocators
from tftrace.analysis.memory_findings import memory_findings
from tftrace.analysis.ops import op_stats, op_table
from tftrace.analysis.overhead import overhead
from tftrace.analysis.python import python_profile
from tftrace.analysis.device_link import DeviceWork, extend_to_device, link_device_work
from tftrace.analysis.devices import device_rows
from tftrace.analysis.hosts import HostView, host_rows, slowest, straggler
from tftrace.analysis.mode import run_mode
from tftrace.analysis.step_view import step_view
from tftrace.analysis.steps import STEP_FUNCTIONS, Steps, find_steps
from tftrace.analysis.verdict import verdict
from tftrace.analysis.window import window_note
from tftrace.report import Breakdown, RunReport, StepRow, StepsSummary
from tftrace.events import Trace
from tftrace.memory_report import Memory

DEFAULT_TOP = 15
_KERAS_MARKERS = {"train", "test", "predict", "profiled batch"}  # TraceCallback, tf.keras, Keras 3's TensorBoard
_COMPUTE_CATEGORIES = {"matmul", "convolution", "reduction", "reshape", "elementwise", "activation",
                       "normalization", "pooling", "dropout", "loss", "optimizer"}


def analyze_trace(trace: Trace, name: str, top: int | None = DEFAULT_TOP, ops: str = "all") -> RunReport:
    """The full report of one run; `top` bounds the ranked op, layer and category lists; `ops`
    lists all ops, or only host or only device ops. With several hosts, steps and the breakdown
    are the slowest host's (it sets everyone's step time); ops add up over all hosts."""
    views = [_host_view(trace.of_host(h)) for h in trace.hosts] if len(trace.hosts) > 1 else []
    timed = trace.of_host(slowest(views).host) if views else trace  # whose steps the report shows
    steps, work = _steps_with_device_work(timed)
    classes = event_classes(timed)
    table = op_table(trace, *eager_layers(trace, steps.starts))
    stats = op_stats(trace, table, top, ops)
    tl = timeline(timed, steps, classes, work)
    ov = overhead(timed, steps, classes, tl.busy)
    parts = _parts(tl)
    mode, mode_source = run_mode(timed, steps, table)
    eager = _is_eager(table)
    pipeline = input_pipeline(trace, top)
    python = python_profile(timed, tl.start, tl.start + tl.dur)  # all rows: the findings look through them
    ctx = Context(timed, steps, tl, parts, ov, stats, table, pipeline, mode, eager, _loop(timed, steps, mode), python,
                  straggler(views))
    found = diagnose(ctx)
    summary = _steps_summary(steps, tl, timed.hosts[0] if views else "")
    judged = verdict(parts, tl.wall_ps > 0, tl.device_busy is not None)
    experiment = interpret(trace.experiment, summary, judged.bound) if trace.experiment is not None else None
    return RunReport(
        path=trace.path, name=name, hosts=trace.hosts, devices=trace.devices, mode=mode, mode_source=mode_source,
        eager=eager, steps=summary, breakdown=parts, verdict=measured_verdict(judged, experiment), bottlenecks=found,
        ops=stats.ops, layers=stats.layers, categories=stats.categories, input_pipeline=pipeline,
        notes=_notes(trace, steps, eager), host_op_ps=stats.host_self_ps, device_op_ps=stats.device_self_ps,
        per_host=host_rows(views), per_device=device_rows(trace),
        python=dataclasses.replace(python, rows=python.rows[:top] if top else python.rows),
        step_view=step_view(timed, tl.start, tl.dur, tl.idle, steps.numbers, classes[0]),
        cut_short=window_note(trace.sidecar, steps.count if steps.kind != "window" else 0), experiment=experiment,
        memory=_memory(trace, steps, table, judged.bound, mode),
    )


def _memory(trace: Trace, steps: Steps, table, bound: str, mode: str) -> Memory:
    """Per allocator, the peak and what holds it, with the memory findings; steps only where the
    trace found real ones (a whole window is no step)."""
    real = steps.kind not in ("window", "none")
    spans = (steps.starts, steps.ends, steps.numbers) if real else ((), (), ())
    rows = allocators(trace, *spans, {e.name: e.layer for e in table if e.layer})
    return Memory(rows, memory_findings(rows, bound, mode))


def _host_view(trace: Trace) -> HostView:
    """One host's steps and breakdown (a host of a run with several)."""
    steps, work = _steps_with_device_work(trace)
    tl = timeline(trace, steps, event_classes(trace), work)
    parts = _parts(tl)
    table = op_table(trace)
    collective = sum(e.self_ps for e in table if e.category == "collective")
    return HostView(trace.hosts[0], steps, tl, parts, verdict(parts, tl.wall_ps > 0).bound, collective)


def _parts(tl) -> Breakdown:
    return Breakdown(*(round(tl.fraction(p), 6) for p in (tl.input, tl.compute, tl.overhead, tl.idle)))


def _steps_with_device_work(trace: Trace) -> tuple[Steps, DeviceWork]:
    """Steps, with the device work each launched; host-found steps run on to their last device
    event."""
    steps = find_steps(trace)
    starts, ends = np.asarray(steps.starts, np.int64), np.asarray(steps.ends, np.int64)
    work = link_device_work(trace, starts, ends, np.asarray(steps.numbers, np.int64),
                            by_group=steps.source.startswith("device step line"))
    if steps.kind in ("marker", "function") and work.how != "none":
        steps = dataclasses.replace(steps, ends=tuple(extend_to_device(ends, work, trace).tolist()))
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
    if steps.kind == "function" and steps.names and steps.names[0] in STEP_FUNCTIONS and mode in ("train", "evaluate"):
        return "keras"
    return "custom" if mode in ("train", "evaluate", "unknown", "mixed") else "predict"


def _is_eager(table) -> bool:
    """The model's own ops ran eagerly (op by op) rather than inside tf.function graphs."""
    model_ops = [e for e in table if e.category in _COMPUTE_CATEGORIES and e.device == "host"]
    eager = sum(e.self_ps for e in model_ops if e.eager)
    return eager > 0 and eager >= sum(e.self_ps for e in model_ops if not e.eager)


def _steps_summary(steps, tl, host: str = "") -> StepsSummary:
    """`host`: with several hosts, the one whose steps these are (the slowest)."""
    source = f"{steps.source} on host {host}, the slowest" if host else steps.source
    if steps.kind in ("none",) or not len(tl.dur):
        return StepsSummary(0, source, 0, 0, steps.note)
    zeros = np.zeros(len(tl.dur), np.int64)
    device = [x if x is not None else zeros for x in (tl.device_busy, tl.copies, tl.input_wait)]
    rows = tuple(StepRow(*map(int, values)) for values in
                 zip(steps.numbers, tl.start, tl.dur, tl.input, tl.compute, tl.overhead, tl.idle, *device))
    count = 0 if steps.kind == "window" else len(rows)
    return StepsSummary(count, source, int(tl.dur.mean()), int(np.median(tl.dur)), steps.note, rows)


def _notes(trace: Trace, steps, eager: bool) -> tuple[str, ...]:
    notes = []
    if eager:
        notes.append("the model ran eagerly (Keras 3 runs model(x) op by op outside tf.function); "
                     "XProf attributes none of this time to ops, tftrace does")
    if steps.kind == "marker" and steps.count == 1:
        notes.append("only one step was captured: step-to-step spread cannot be measured")
    if len(trace.hosts) > 1:
        notes.append(f"{len(trace.hosts)} hosts: steps and breakdown are the slowest host's (in synchronous "
                     "training it sets every host's step time); ops add up over all hosts; see the hosts table")
    notes += [f"left out, unreadable: {p}" for p in trace.problems]
    return tuple(notes)


def failed_run(path: str, name: str, error: str) -> RunReport:
    """The report entry of a run that could not be read."""
    return RunReport(path=path, name=name, error=error)
