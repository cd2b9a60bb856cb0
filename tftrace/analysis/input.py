"""tf.data pipeline stages: self time per stage (and per op run inside the pipeline)."""

from __future__ import annotations

import re

import numpy as np

from tftrace.analysis.sums import masked_sums
from tftrace.model.report import InputPipeline, StageRow
from tftrace.model.events import Trace

_INDEX = re.compile(r"\[\d+\]")
# Buffering and plumbing stages: their self time is mostly waiting for the stage before them,
# so they are never "the slowest stage" (they stay in the table).
_PLUMBING = {"Prefetch", "Root", "MaxIntraOpParallelism", "PrivateThreadPool", "Options", "Model",
             "FiniteTake", "Take", "Repeat", "ForeverRepeat"}


def stage_of(name: str) -> str:
    """`Iterator::Root::Prefetch::FlatMap[0]::Generator` -> `Generator`."""
    return _INDEX.sub("", name.rsplit("::", 1)[-1])


def input_pipeline(trace: Trace, top: int | None = None) -> InputPipeline:
    """Stages ranked by self time; ops that tf.data threads run (a generator's PyFunc, a map
    function's ops) count as stages too, named by their type."""
    return ranked_pipeline(stage_totals(trace), top)


def stage_totals(trace: Trace) -> dict[str, int]:
    """Self time per stage (ps): what one host adds to its run's input pipeline."""
    ev = trace.events
    totals: dict[str, int] = {}
    names = ev["name"]
    on_data = trace.on_lines(lambda ln: ln.role == "data")
    self_ps = ev["self_ps"]
    codes = np.fromiter(trace.ops, np.int64, len(trace.ops))
    mask = trace.named(codes) & (self_ps > 0)
    sums = masked_sums(names, self_ps, mask, len(trace.names))
    mask &= on_data
    dsums = masked_sums(names, self_ps, mask, len(trace.names))
    for code, op in trace.ops.items():
        if op.kind == "data" and sums[code] > 0:
            key = stage_of(op.name)
            totals[key] = totals.get(key, 0) + int(sums[code])
        elif dsums[code] > 0:
            key = f"{op.type} (op in tf.data)"
            totals[key] = totals.get(key, 0) + int(dsums[code])
    return totals


def ranked_pipeline(totals: dict[str, int], top: int | None = None) -> InputPipeline:
    """Stages (self time per stage, of one host or summed over hosts) ranked, with the slowest
    working stage."""
    total = sum(totals.values())
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    working = [k for k, _v in ranked if k not in _PLUMBING] or [k for k, _v in ranked]
    slowest = working[0] if working else ""
    shown = ranked[:top] + [kv for kv in ranked[top or len(ranked):] if kv[0] == slowest]
    stages = tuple(StageRow(k, v, round(v / total, 6) if total else 0.0) for k, v in shown)
    return InputPipeline(stages, slowest)
