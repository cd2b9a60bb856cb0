"""Grow step-function calls into the user's iterations: the framework work each call needs
(building its input pipeline, tracing, Keras' per-call setup) belongs to the call it serves.

Method. The main thread's events are merged into blocks of activity. Between two calls, the
longest stretch with no activity at all is where one iteration ends and the next begins: the
user's own Python (loading an image, a callback) runs there, and TensorFlow records nothing.
Everything else between the calls joins the call before or after that stretch. Before the
first call and after the last, a stretch counts as a boundary only if it is as long as the
shortest boundary between calls; otherwise the iteration reaches the first or last activity.
"""

from __future__ import annotations

import numpy as np

from tftrace.analysis.intervals import merge
from tftrace.model.events import Trace


def main_thread_activity(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Merged blocks of activity on the threads that run the user's loop."""
    mask = trace.on_lines(lambda ln: ln.role == "python")
    idx = np.flatnonzero(mask)
    start = trace.events["start_ps"][idx]
    return merge(start, start + trace.events["dur_ps"][idx])


def grow_calls(trace: Trace, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Iteration windows around calls [starts, ends) (sorted, not nested): each reaches out to
    the quiet stretches that separate it from its neighbours."""
    blocks = main_thread_activity(trace)
    if len(starts) == 0 or len(blocks[0]) == 0:
        return starts, ends
    gap_lo, gap_hi = blocks[1][:-1], blocks[0][1:]  # quiet stretches between activity blocks
    new_start, new_end = starts.copy(), ends.copy()
    shortest = None
    for i in range(len(starts) - 1):
        gap = _longest(gap_lo, gap_hi, ends[i], starts[i + 1])
        if gap is None:
            new_end[i] = new_start[i + 1] = ends[i]
            continue
        new_end[i], new_start[i + 1] = gap
        shortest = gap[1] - gap[0] if shortest is None else min(shortest, gap[1] - gap[0])
    first, last = int(blocks[0][0]), int(blocks[1][-1])
    new_start[0] = _edge(gap_lo, gap_hi, min(first, starts[0]), starts[0], shortest, at_end=False)
    new_end[-1] = _edge(gap_lo, gap_hi, ends[-1], max(last, ends[-1]), shortest, at_end=True)
    return new_start, new_end


def _gaps_within(gap_lo, gap_hi, lo, hi) -> np.ndarray:
    a = np.searchsorted(gap_lo, lo, side="left")
    b = np.searchsorted(gap_hi, hi, side="right")
    return np.arange(a, max(a, b))


def _longest(gap_lo, gap_hi, lo, hi) -> tuple[int, int] | None:
    idx = _gaps_within(gap_lo, gap_hi, lo, hi)
    idx = idx[gap_hi[idx] > gap_lo[idx]] if len(idx) else idx
    if len(idx) == 0:
        return None
    best = idx[np.argmax(gap_hi[idx] - gap_lo[idx])]
    return int(gap_lo[best]), int(gap_hi[best])


def _edge(gap_lo, gap_hi, lo, hi, shortest, at_end: bool) -> int:
    """Where the first iteration starts (or the last ends): at the longest quiet stretch on that
    side if it is a boundary as long as those between calls, else at the first (last) activity."""
    gap = _longest(gap_lo, gap_hi, lo, hi)
    if gap is None or shortest is None or gap[1] - gap[0] < shortest:
        return hi if at_end else lo
    return gap[0] if at_end else gap[1]
