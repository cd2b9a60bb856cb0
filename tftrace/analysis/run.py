"""Analyse one Trace into a RunReport: every analysis, in data-flow order."""

from __future__ import annotations

import numpy as np

from tftrace.analysis.bottlenecks import bottlenecks
from tftrace.analysis.breakdown import event_classes, timeline
from tftrace.analysis.eager import eager_layers
from tftrace.analysis.input import input_pipeline
from tftrace.analysis.ops import op_stats, op_table
from tftrace.analysis.overhead import overhead
from tftrace.analysis.steps import find_steps, run_mode
from tftrace.analysis.verdict import verdict
from tftrace.report import Breakdown, RunReport, StepRow, StepsSummary
from tftrace.events import Trace

DEFAULT_TOP = 15
_COMPUTE_CATEGORIES = {"matmul", "convolution", "reduction", "reshape", "elementwise", "activation",
                       "normalization", "pooling", "dropout", "loss", "optimizer"}


def analyze_trace(trace: Trace, name: str, top: int | None = DEFAULT_TOP) -> RunReport:
    """The full report of one run; `top` bounds the ranked op, layer and category lists."""
    steps = find_steps(trace)
    table = op_table(trace, *eager_layers(trace, steps.starts))
    stats = op_stats(trace, table, top)
    classes = event_classes(trace)
    tl = timeline(trace, steps, classes)
    ov = overhead(trace, steps, classes, tl.busy)
    parts = Breakdown(*(round(tl.fraction(p), 6) for p in (tl.input, tl.compute, tl.overhead, tl.idle)))
    mode = run_mode(trace, steps)
    eager = _is_eager(table)
    pipeline = input_pipeline(trace, top)
    summary = _steps_summary(steps, tl)
    notes = _notes(trace, steps, eager)
    return RunReport(
        path=trace.path, name=name, hosts=trace.hosts, devices=trace.devices, mode=mode, eager=eager,
        steps=summary, breakdown=parts, verdict=verdict(parts, tl.wall_ps > 0),
        bottlenecks=bottlenecks(parts, tl, ov, stats, pipeline, mode, eager,
                                device=any(ln.role == "device_ops" for ln in trace.lines)),
        ops=stats.ops, layers=stats.layers, categories=stats.categories, input_pipeline=pipeline, notes=notes,
    )


def _is_eager(table) -> bool:
    """The model's own ops ran eagerly (op by op) rather than inside tf.function graphs."""
    model_ops = table[table["category"].isin(_COMPUTE_CATEGORIES) & (table["device"] == "host")]
    eager = int(model_ops.loc[model_ops["eager"], "self_ps"].sum())
    return eager > 0 and eager >= int(model_ops.loc[~model_ops["eager"], "self_ps"].sum())


def _steps_summary(steps, tl) -> StepsSummary:
    if steps.kind in ("none",) or not len(tl.dur):
        return StepsSummary(0, steps.source, 0, 0, steps.note)
    rows = tuple(StepRow(int(n), int(s), int(d), int(i), int(c), int(o), int(g)) for n, s, d, i, c, o, g in
                 zip(steps.numbers, tl.start, tl.dur, tl.input, tl.compute, tl.overhead, tl.idle))
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
