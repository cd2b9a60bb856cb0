"""What host overhead inside steps is made of: per-call tf.data pipeline building, tf.function
tracing, eager op dispatch, your named regions, and the Python/framework time left over.

Building a pipeline is a phase, not only its ops: between `RangeDataset`, `MapDataset`...
`MakeIterator` runs tf.data's and Keras' own Python, and the dataset functions are traced. On
the main thread, a phase runs from the first to the last pipeline event (a pipeline op or a
trace) that no step-function call or input wait separates; the whole phase is per-call work.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import is_pipeline_op, spans
from tftrace.analysis.intervals import covered, merge, union
from tftrace.analysis.steps.found import STEP_FUNCTIONS, Steps
from tftrace.analysis.sums import CHUNK
from tftrace.model.events import Trace

TRACING = ("tf.function-graph_building", "TraceFunction", "tf.function-tracing")  # graph building events
# Ops that make a new iterator: one per call that builds its input pipeline (a call's start-up).
ITERATOR_BUILDS = {"MakeIterator", "AnonymousIterator", "AnonymousIteratorV2", "AnonymousIteratorV3",
                   "MultiDeviceIteratorInit", "AnonymousMultiDeviceIteratorV3"}


@dataclass(frozen=True)
class Overhead:
    pipeline_ps: int  # phases building tf.data datasets and iterators inside steps (per-call predict)
    pipeline_ops: tuple[tuple[str, int], ...]  # (op type, total self ps), largest first
    tracing_ps: int  # tf.function tracing inside steps, outside pipeline-building phases
    traced: tuple[tuple[str, int], ...]  # functions traced inside the window, with counts
    eager_ps: int  # eager op execution (compute, but dispatched op by op)
    eager_count: int
    regions: tuple[tuple[str, int], ...] = ()  # tftrace.region() names: step time beyond ops and input
    pipeline_tracing_ps: int = 0  # tracing the pipeline's own functions, inside its phases
    pipeline_builds: int = 0  # iterators made inside steps: one per call that builds its input pipeline


def overhead(trace: Trace, steps: Steps, classes: tuple[np.ndarray, np.ndarray],
             busy: tuple[np.ndarray, np.ndarray]) -> Overhead:
    """`busy`: the merged input and compute intervals the timeline found."""
    ev = trace.events
    start = np.asarray(steps.starts, np.int64)
    end = np.asarray(steps.ends, np.int64)
    is_input, is_compute = classes
    known = is_input | is_compute
    def extra(s, e):
        """Step time the intervals [s, e) cover beyond input and compute: measured where they
        lie (the busy intervals elsewhere add the same to both sides), not over the whole trace."""
        if len(s) == 0:
            return 0
        near = slice(np.searchsorted(busy[1], s.min(), side="right"), np.searchsorted(busy[0], e.max(), side="left"))
        b_s, b_e = busy[0][near], busy[1][near]
        both = union((b_s, b_e), merge(s, e))
        return int(covered(*both, start, end).sum() - covered(b_s, b_e, start, end).sum())

    pipe, tracing, eager = _kinds(trace)
    eager &= is_compute
    # Only the few rows these masks pick are placed against the steps, not every event.
    rows = np.flatnonzero(pipe | tracing | eager)
    rows = rows[_inside(ev["start_ps"][rows], start, end)]
    pipe_rows, eager_rows = rows[pipe[rows]], rows[eager[rows]]
    phases = _phases(trace, rows[pipe[rows] | tracing[rows]], pipe, is_input, start, end)
    tracing_rows = np.flatnonzero(tracing & ~known)  # tracing that is neither input nor compute
    in_phase = _inside(ev["start_ps"][tracing_rows], *phases)
    self_ps = ev["self_ps"]
    regions = [(r, extra(*spans(ev, trace.named(trace.codes([r])) & ~known))) for r in trace.sidecar.get("regions", [])]
    return Overhead(
        pipeline_ps=extra(*phases), pipeline_ops=_by_type(trace, ev["name"][pipe_rows], self_ps[pipe_rows]),
        tracing_ps=extra(*_row_spans(ev, tracing_rows[~in_phase])), traced=_traced(trace, start, end),
        eager_ps=int(self_ps[eager_rows].sum()), eager_count=len(eager_rows),
        regions=tuple(sorted(((r, ps) for r, ps in regions if ps > 0), key=lambda kv: (-kv[1], kv[0]))),
        pipeline_tracing_ps=extra(*_row_spans(ev, tracing_rows[in_phase])),
        pipeline_builds=_builds(trace, ev["name"][pipe_rows]),
    )


def _kinds(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per event: is it a pipeline op, tracing, an eager op? One pass over the events for all three."""
    table = np.zeros(len(trace.names) + 1, np.uint8)
    table[[c for c, op in trace.ops.items() if is_pipeline_op(op)]] |= 1
    table[trace.codes(TRACING)] |= 2
    table[[c for c, op in trace.ops.items() if op.kind == "eager"]] |= 4
    kind = table.take(trace.events["name"])
    return (kind & 1) > 0, (kind & 2) > 0, (kind & 4) > 0


def _builds(trace: Trace, names: np.ndarray) -> int:
    """How many of the pipeline ops `names` make a new iterator (counted per name, not per row)."""
    codes, counts = np.unique(names, return_counts=True)
    return int(sum(n for c, n in zip(codes.tolist(), counts.tolist()) if trace.ops[c].type in ITERATOR_BUILDS))


def _row_spans(events, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    start = events["start_ps"][rows]
    return start, start + events["dur_ps"][rows]


def _phases(trace: Trace, rows: np.ndarray, pipe: np.ndarray, is_input: np.ndarray, start: np.ndarray,
            end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pipeline-building phases on the main thread: per step, the span of the pipeline events
    (`rows`, inside steps) between two anchors (step-function calls and input waits), which end
    a phase. A phase holds at least one pipeline op (`pipe`): tracing alone (a retraced
    tf.function) builds no pipeline."""
    ev = trace.events
    main = trace.on_lines(lambda ln: ln.role == "python")
    rows = rows[main[rows]]
    if len(rows) == 0 or len(start) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    anchors = np.sort(ev["start_ps"][(trace.named(trace.codes(STEP_FUNCTIONS)) | is_input) & main])
    s = ev["start_ps"][rows]
    e = s + ev["dur_ps"][rows]
    step = np.searchsorted(start, s, side="right") - 1
    key = step * (len(anchors) + 1) + np.searchsorted(anchors, s, side="right")
    order = np.argsort(key, kind="stable")
    key, s, e, has_op = key[order], s[order], e[order], pipe[rows][order]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    keep = np.maximum.reduceat(has_op.astype(np.int8), first) > 0
    lo = np.minimum.reduceat(s, first)[keep]
    hi = np.maximum.reduceat(e, first)[keep]
    return merge(lo, hi)


def _inside(s: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per time: does it fall in one of the windows [start, end) (sorted by start, disjoint)?
    A batch at a time: on millions of events a full-length index would double the memory."""
    out = np.zeros(len(s), bool)
    if len(start) == 0:
        return out
    for lo in range(0, len(s), CHUNK):
        part = s[lo:lo + CHUNK]
        i = np.searchsorted(start, part, side="right") - 1
        out[lo:lo + CHUNK] = (i >= 0) & (part < end[np.maximum(i, 0)])
    return out


def _by_type(trace: Trace, names: np.ndarray, self_ps: np.ndarray) -> tuple[tuple[str, int], ...]:
    totals: Counter = Counter()
    for code, ps in zip(names.tolist(), self_ps.tolist()):
        totals[trace.ops[code].type] += ps
    return tuple(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def _traced(trace: Trace, start: np.ndarray, end: np.ndarray) -> tuple[tuple[str, int], ...]:
    """tf.function calls that traced (stat tf_function_call = 'traced-...') inside steps."""
    rows = trace.stats["event"]
    fn_call = trace.stats["fn_call"]
    keep = np.flatnonzero(fn_call >= 0)
    keep = keep[_inside(trace.events["start_ps"][rows[keep]], start, end)]
    names = trace.events["name"][rows[keep]]
    counts: Counter = Counter()
    for name, call in zip(names.tolist(), fn_call[keep].tolist()):
        if trace.names[call].startswith("traced"):
            counts[trace.names[name]] += 1
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
