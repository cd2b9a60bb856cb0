"""Layers of a PyTorch run from the ranges the capture put around each layer's call: an op
inside a layer's `record_function` range (the innermost, on its own thread) is that layer's."""

from __future__ import annotations

import numpy as np

from tftrace.analysis.sums import distinct
from tftrace.model.events import Trace

RANGED_KINDS = ("torch",)  # op kinds whose events these ranges label


def range_layers(trace: Trace, label_type) -> tuple[np.ndarray | None, list]:
    """Per event, an index into the returned labels (-1: none), from the sidecar's `layer_ranges`
    (the model's name first: its range holds every layer's, so it names no op itself). The
    forward pass only: autograd runs the backward ops outside the ranges."""
    names = list(trace.sidecar.get("layer_ranges") or [])[1:]
    codes = [c for c, op in trace.ops.items() if op.kind in RANGED_KINDS]
    if not names or not codes:
        return None, []
    labels = [label_type(name, "forward") for name in names]
    index = {name: i for i, name in enumerate(names)}
    range_of = {c: index[n] for c, n in enumerate(trace.names) if n in index and c not in trace.ops}
    if not range_of:
        return None, []
    ev = trace.events
    out = np.full(len(ev), -1, np.int16 if len(labels) < 2 ** 15 else np.int32)
    ops = np.flatnonzero(trace.named(codes))
    ranges = np.flatnonzero(trace.named(list(range_of)))
    which = np.array([range_of[c] for c in ev["name"][ranges].tolist()], np.int64)
    for line in distinct(ev["line"][ops]).tolist():
        mine = ranges[ev["line"][ranges] == line]
        if not len(mine):
            continue
        order = np.argsort(ev["start_ps"][mine], kind="stable")
        mine, label = mine[order], which[ev["line"][ranges] == line][order]
        r0, r1 = ev["start_ps"][mine], ev["start_ps"][mine] + ev["dur_ps"][mine]
        rows = ops[ev["line"][ops] == line]
        s0 = ev["start_ps"][rows]
        s1 = s0 + ev["dur_ps"][rows]
        k = np.searchsorted(r0, s0, side="right") - 1  # the last layer range begun before the op:
        ok = k >= 0                                     # layers' ranges never nest in each other
        inside = np.zeros(len(rows), bool)
        inside[ok] = s1[ok] <= r1[k[ok]]
        out[rows[inside]] = label[k[inside]]
    return out, labels
