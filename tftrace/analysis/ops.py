"""Op attribution: self time per op, and totals per layer and per category."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from tftrace.analysis.classify import INPUT, classify, trace_scopes
from tftrace.analysis.eager_layers import LABELLED_KINDS
from tftrace.analysis.sums import CHUNK, exact_sums
from tftrace.model.events import Trace
from tftrace.model.report import CategoryRow, LayerRow, OpRow


@dataclass(frozen=True)
class OpStats:
    """Ops ranked by self time, and their totals per layer and per category.

    Op shares are of all op self time (host and device); layer and category shares are of the
    main side's op time: the device's where there is one (what the step waits for), else the host's.
    """

    ops: tuple[OpRow, ...]
    layers: tuple[LayerRow, ...]
    categories: tuple[CategoryRow, ...]
    host_self_ps: int
    device_self_ps: int
    model_op: OpRow | None = None  # the main side's top op outside the input pipeline

    @property
    def main_side(self) -> str:
        return "device" if self.device_self_ps else "host"


_HOST, _DEVICE, _DATA = 0, 1, 2  # where an op ran; _DATA: a tf.data thread of the host
_SIDES = 3


class OpEntry(NamedTuple):
    """One op (by name, side, and layer for eager ops) with its attribution and totals."""

    name: str
    type: str
    category: str
    layer: str
    phase: str
    device: str  # "host", or the device kind
    eager: bool
    count: int
    self_ps: int


def op_table(trace: Trace, eager_label: np.ndarray | None = None, eager_labels: list | None = None) -> list[OpEntry]:
    """One entry per op name (and side, and layer for eager ops), with its attribution, count
    and total self time. Ops on tf.data threads are the input pipeline's, whatever their type.
    `eager_label` gives eager op events an index into `eager_labels`, the (layer, phase,
    category) their call order shows ("" keeps the op's own; -1: nothing shown)."""
    ev = trace.events
    if not trace.ops or len(ev) == 0:
        return []
    codes = np.fromiter(trace.ops, np.int64, len(trace.ops))
    # Dense op numbers: the per-key tables then hold ops only, not every name in the trace.
    dense = np.full(len(trace.names) + 1, -1, np.int64)
    dense[codes] = np.arange(len(codes))
    # Per line, the side its ops count on: tf.data threads run the input pipeline, whatever the op.
    side = np.array([_DATA if ln.role == "data" else _DEVICE if ln.on_device else _HOST for ln in trace.lines]
                    + [_HOST], np.int64)
    space = len(codes) * _SIDES
    labels = list(eager_labels or []) if eager_label is not None else []
    # Labelled ops (eager ops by call order; PyTorch's by their ranges and links) are summed apart,
    # per (op, label, side) that occurs: the table grows by what occurs, not by ops x labels.
    eager_codes = [c for c, op in trace.ops.items() if op.kind in LABELLED_KINDS] if labels else []
    eager_number = np.full(len(trace.names) + 1, -1, np.int64)
    eager_number[eager_codes] = np.arange(len(eager_codes))
    counts = np.zeros(space, np.int64)
    self_ps = np.zeros(space, np.int64)
    keyed: list[np.ndarray] = []  # labelled events' keys and self times, a batch at a time
    keyed_ps: list[np.ndarray] = []
    for lo in range(0, len(ev), CHUNK):  # a batch of events at a time: temporaries stay small
        part = slice(lo, lo + CHUNK)
        names = ev["name"][part]
        number = dense.take(names)
        sel = number >= 0
        where = side[ev["line"][part][sel]]
        key = number[sel] * _SIDES + where
        ps = ev["self_ps"][part][sel]
        if eager_codes:
            label = eager_label[part][sel].astype(np.int64)
            eager = eager_number[names[sel]]
            mine = (label >= 0) & (eager >= 0) & (where != _DATA)
            if mine.any():
                keyed.append((eager[mine] * len(labels) + label[mine]) * _SIDES + where[mine])
                keyed_ps.append(ps[mine])
                key, ps = key[~mine], ps[~mine]
        counts += np.bincount(key, minlength=space)
        self_ps += exact_sums(key, ps, space)
    scopes = trace_scopes(trace)
    device_kind = _device_kind(trace)
    # One op can appear under several event names (e.g. a kernel per GPU): merge them.
    merged: dict[tuple, list[int]] = {}

    def add(op, att, where: int, count: int, ps: int) -> None:
        entry = (op.name, op.type, att.category, att.layer, att.phase, device_kind if where == _DEVICE else "host",
                 op.kind == "eager")
        acc = merged.setdefault(entry, [0, 0])
        acc[0] += count
        acc[1] += ps

    for k in np.flatnonzero(counts).tolist():
        op = trace.ops[int(codes[k // _SIDES])]
        where = k % _SIDES
        add(op, INPUT if where == _DATA else classify(op, scopes), where, int(counts[k]), int(self_ps[k]))
    if keyed:
        uniq, inverse = np.unique(np.concatenate(keyed), return_inverse=True)
        inverse = inverse.reshape(-1)
        l_counts = np.bincount(inverse, minlength=len(uniq))
        l_ps = exact_sums(inverse, np.concatenate(keyed_ps), len(uniq))
        for k, c, p in zip(uniq.tolist(), l_counts.tolist(), l_ps.tolist()):
            where, pair = k % _SIDES, k // _SIDES
            op = trace.ops[eager_codes[pair // len(labels)]]
            lb = labels[pair % len(labels)]
            att = classify(op, scopes)
            att = att._replace(layer=lb.layer or att.layer, phase=lb.phase or att.phase,
                               category=lb.category or att.category)
            add(op, att, where, c, p)
    return [OpEntry(*entry, c, s) for entry, (c, s) in merged.items()]


def merge_tables(tables) -> list[OpEntry]:
    """Op tables of several hosts as one: counts and self times of the same op added, ops in
    the order first seen."""
    merged: dict[tuple, list[int]] = {}
    for table in tables:
        for e in table:
            acc = merged.setdefault(e[:7], [0, 0])
            acc[0] += e.count
            acc[1] += e.self_ps
    return [OpEntry(*key, c, s) for key, (c, s) in merged.items()]


def _device_kind(trace: Trace) -> str:
    kinds = sorted({ln.plane.split(":")[1] for ln in trace.lines if ln.on_device and ":" in ln.plane})
    return "/".join(kinds) or "device"


def op_stats(trace: Trace, table: list[OpEntry] | None = None, top: int | None = None,
             side: str = "all") -> OpStats:
    """Ops, layers and categories ranked by self time (ties by name); `top` cuts each list;
    `side` keeps only host or only device ops in the op list (shares keep one total)."""
    table = op_table(trace) if table is None else table
    host_total = sum(e.self_ps for e in table if e.device == "host")
    dev_total = sum(e.self_ps for e in table if e.device != "host")
    total = max(host_total + dev_total, 1)
    ranked = sorted(table, key=lambda e: (-e.self_ps, e.name, e.type, e.layer, e.device, e.eager))
    main = [e for e in ranked if e.device != "host"] if dev_total else ranked
    listed = ranked if side == "all" else [e for e in ranked if (e.device != "host") == (side == "device")]
    ops = tuple(_row(e, total) for e in (listed if top is None else listed[:top]))
    model = next((e for e in main if e.category != "input"), None)
    main_total = dev_total or host_total
    params = trace.sidecar.get("layer_params", {})
    layers = tuple(LayerRow(k, v, _share(v, main_total), int(params.get(k, -1)))
                   for k, v in _ranked([e for e in main if e.layer], "layer", top))
    cats = tuple(CategoryRow(k, v, _share(v, main_total)) for k, v in _ranked(main, "category", top))
    return OpStats(ops, layers, cats, host_total, dev_total, _row(model, total) if model else None)


def _row(e: OpEntry, total: int) -> OpRow:
    return OpRow(e.name, e.type, e.category, e.layer, e.phase, e.device, int(e.count), int(e.self_ps),
                 round(e.self_ps / total, 6), bool(e.eager))


def _ranked(entries: list[OpEntry], key: str, top: int | None) -> list[tuple[str, int]]:
    totals: dict[str, int] = {}
    for e in entries:
        totals[getattr(e, key)] = totals.get(getattr(e, key), 0) + e.self_ps
    items = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return items[:top] if top else items


def _share(part: int, total: int) -> float:
    return round(part / total, 6) if total else 0.0
