"""Analyse one Trace into a RunReport: every analysis, in data-flow order."""

from __future__ import annotations

import dataclasses

import numpy as np

from tftrace.analysis.bottlenecks import bottlenecks
from tftrace.analysis.breakdown import event_classes, timeline
from tftrace.analysis.eager import eager_layers
from tftrace.analysis.input import input_pipeline
from tftrace.analysis.ops import op_stats, op_table
from tftrace.analysis.overhead import overhead
from tftrace.analysis.device_link import DeviceWork, extend_to_device, link_device_work
from tftrace.analysis.mode import run_mode
from tftrace.analysis.steps import Steps, find_steps
from tftrace.analysis.verdict import verdict
from tftrace.report import Breakdown, RunReport, StepRow, StepsSummary
from tftrace.events import Trace

DEFAULT_TOP = 15
_KERAS_MARKERS = {"train", "test", "predict", "profiled batch"}  # TraceCallback, tf.keras, Keras 3's TensorBoard
_COMPUTE_CATEGORIES = {"matmul", "convolution", "reduction", "reshape", "elementwise", "activation",
                       "normalization", "pooling", "dropout", "loss", "optimizer"}


def analyze_trace(trace: Trace, name: str, top: int | None = DEFAULT_TOP, ops: str = "all") -> RunReport:
    """The full report of one run; `top` bounds the ranked op, layer and category lists; `ops`
    lists all ops, or only host or only device ops."""
    steps, work = _steps_with_device_work(trace)
    table = op_table(trace, *eager_layers(trace, steps.starts))
    stats = op_stats(trace, table, top, ops)
    classes = event_classes(trace)
    tl = timeline(trace, steps, classes, work)
    ov = overhead(trace, steps, classes, tl.busy)
    parts = Breakdown(*(round(tl.fraction(p), 6) for p in (tl.input, tl.compute, tl.overhead, tl.idle)))
    mode, mode_source = run_mode(trace, steps, table)
    eager = _is_eager(table)
    pipeline = input_pipeline(trace, top)
    summary = _steps_summary(steps, tl)
    notes = _notes(trace, steps, eager)
    return RunReport(
        path=trace.path, name=name, hosts=trace.hosts, devices=trace.devices, mode=mode, mode_source=mode_source,
        eager=eager,
        steps=summary, breakdown=parts, verdict=verdict(parts, tl.wall_ps > 0, tl.device_busy is not None),
        bottlenecks=bottlenecks(parts, tl, ov, stats, pipeline, mode, eager, _keras_loop(steps, mode)),
        ops=stats.ops, layers=stats.layers, categories=stats.categories, input_pipeline=pipeline, notes=notes,
        host_op_ps=stats.host_self_ps, device_op_ps=stats.device_self_ps,
    )


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


def _keras_loop(steps: Steps, mode: str) -> bool:
    """The steps are Keras' own batches, so the time between them is Keras' loop and callbacks.
    (Per-call predict steps are the user's loop: predict runs once per item there.)"""
    if steps.kind == "marker":
        return all(n.lower() in _KERAS_MARKERS for n in steps.names)
    return steps.kind == "function" and mode in ("train", "evaluate")


def _is_eager(table) -> bool:
    """The model's own ops ran eagerly (op by op) rather than inside tf.function graphs."""
    model_ops = table[table["category"].isin(_COMPUTE_CATEGORIES) & (table["device"] == "host")]
    eager = int(model_ops.loc[model_ops["eager"], "self_ps"].sum())
    return eager > 0 and eager >= int(model_ops.loc[~model_ops["eager"], "self_ps"].sum())


def _steps_summary(steps, tl) -> StepsSummary:
    if steps.kind in ("none",) or not len(tl.dur):
        return StepsSummary(0, steps.source, 0, 0, steps.note)
    zeros = np.zeros(len(tl.dur), np.int64)
    device = [x if x is not None else zeros for x in (tl.device_busy, tl.copies, tl.input_wait)]
    rows = tuple(StepRow(*map(int, values)) for values in
                 zip(steps.numbers, tl.start, tl.dur, tl.input, tl.compute, tl.overhead, tl.idle, *device))
    count = 0 if steps.kind == "window" else len(rows)
    return StepsSummary(count, steps.source, int(tl.dur.mean()), int(np.median(tl.dur)), steps.note, rows)


def _notes(trace: Trace, steps, eager: bool) -> tuple[str, ...]:
    notes = []
    if eager:
        notes.append("the model ran eagerly (Keras 3 runs model(x) op by op outside tf.function); "
                     "XProf attributes none of this time to ops, tftrace does")
    if steps.kind == "marker" and steps.count == 1:
        notes.append("only one step was captured: step-to-step spread cannot be measured")
    return tuple(notes)


def failed_run(path: str, name: str, error: str) -> RunReport:
    """The report entry of a run that could not be read."""
    return RunReport(path=path, name=name, error=error)
