"""Every microsecond of each step given to an owner: the owners table.

Each iteration of the loop (a step and the gap after it) is cut into the breakdown's parts,
and each part is shared among the owners that hold it:
  compute       the ops' owners (layers and phases, the loss, metrics, regularizers, the
                optimizer...), by their ops' own time in that step;
  input         the input pipeline's stages, by their own time (on device runs: the copies
                that bring the batch in);
  host overhead inside a step, no op running: callbacks' hooks, the user's Python functions
                (their own time and the library calls they make), the profiler's estimated
                cost; what is left is the runtime dispatching ops, given to the ops' owners by
                how many ops they run (graph and eager TF steps), else to the framework;
  idle          between steps: callbacks' hooks, the user's Python, the profiler, and the loop
                that drives the steps (Keras', or the user's).
Rows add up to the mean iteration: shares sum to 1. Pure: a Context in, frozen rows out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tftrace.analysis.classify import classify, scopes_of, trace_scopes
from tftrace.analysis.eager_layers import LABELLED_KINDS, eager_layers
from tftrace.analysis.owners.claims import host_claims
from tftrace.analysis.owners.knowledge import known
from tftrace.analysis.owners.key import OwnerKey
from tftrace.analysis.owners.of_ops import Unscoped, op_owner
from tftrace.analysis.owners.program import Program, program_of
from tftrace.analysis.sums import exact_sums
from tftrace.model.names import is_input_event
from tftrace.model.owners import OwnerRow

_PARTS = ("compute", "input", "host_overhead", "idle")
FRAMEWORK = OwnerKey("framework", "dispatch and runtime")
_DISPATCHED = ("tf", "eager", "device", "xla")
# tf.data stages that hold no work of their own: their time is the wait for the stages below.
_BUFFERS = {"Prefetch", "Root", "Model", "MaxIntraOpParallelism", "PrivateThreadPool", "Options", "ForeverRepeat",
            "Repeat", "AssertCardinality", "FiniteTake", "Take"}  # op kinds the host's runtime dispatches one by one (not XLA's thunks)


@dataclass(frozen=True, eq=False)
class Owners:
    """The owners table (rows, largest share first) and, per iteration, each owner's wall time:
    what uneven steps are compared by."""

    rows: tuple[OwnerRow, ...] = ()
    keys: tuple[OwnerKey, ...] = ()
    wall: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # iterations x keys, ps
    op_ps: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    runs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float64))  # op runs or calls
    program: Program = Program()
    # The op events counted (rows of the trace's events, main side, inside the steps) and each one's
    # owner column: what asks which ops ran beside which (findings/contention.py) reads them.
    op_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_cols: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # each one's iteration

    def row(self, kind: str, name: str | None = None) -> OwnerRow | None:
        return next((r for r in self.rows if r.kind == kind and (name is None or r.name == name)), None)


def owner_table(ctx) -> Owners:
    tl = ctx.tl
    n = len(tl.dur)
    program = program_of(ctx.trace.sidecar)
    if not n or tl.wall_ps <= 0:
        return Owners(program=program)
    key = _Keys()
    op_ps, runs, dispatched, types, op_rows, op_cols, op_steps = _op_matrix(ctx, program, key)
    parts = _iteration_parts(tl)
    claims = host_claims(ctx, key, parts)
    width = len(key)
    wall = np.zeros((n, width), np.float64)
    by_part = np.zeros((len(_PARTS), width), np.float64)
    for p, name in enumerate(_PARTS):
        budget = parts[name]
        share = _share_part(name, budget, op_ps, runs, dispatched, claims.get(name), ctx, key)
        width = len(key)
        if share.shape[1] < width:
            share = np.pad(share, ((0, 0), (0, width - share.shape[1])))
        if wall.shape[1] < width:
            wall = np.pad(wall, ((0, 0), (0, width - wall.shape[1])))
            by_part = np.pad(by_part, ((0, 0), (0, width - by_part.shape[1])))
        wall += share
        by_part[p] += share.sum(axis=0)
    width = len(key)
    op_ps = np.pad(op_ps, ((0, 0), (0, width - op_ps.shape[1])))
    runs = np.pad(runs, ((0, 0), (0, width - runs.shape[1]))).astype(np.float64)
    for name, table in claims.items():
        for k, (_per, calls) in table.items():
            runs[:, k] += calls
    return Owners(_rows(key.keys, wall, op_ps, runs, by_part, types, claims, tl.wall_ps), tuple(key.keys),
                  np.round(wall).astype(np.int64), op_ps, runs, program, op_rows, op_cols, op_steps)


def _differentiated(trace, scopes) -> bool:
    """Does a TensorFlow step differentiate work outside every layer and the loss (a penalty's
    gradient: `gradient_tape/Mul` beside no layer)? True where the ops are not TensorFlow's."""
    graph = [op for op in trace.ops.values() if op.kind in ("tf", "device")]
    return not graph or any(a.phase == "backward" and not a.layer and a.category not in ("loss", "optimizer")
                            for a in (classify(op, scopes) for op in graph))


def _outside_scopes(op) -> bool:
    """An op of the step function's own, outside every layer, loss, metric and optimizer scope."""
    return op.kind in ("tf", "device", "xla") and not scopes_of(op)


class _Keys:
    """Owners numbered as first met: `keys(owner)` is its column."""

    def __init__(self):
        self.keys: list[OwnerKey] = []
        self._index: dict[OwnerKey, int] = {}

    def __call__(self, owner: OwnerKey) -> int:
        if owner not in self._index:
            self._index[owner] = len(self.keys)
            self.keys.append(owner)
        return self._index[owner]

    def __len__(self) -> int:
        return len(self.keys)


def _iteration_parts(tl) -> dict[str, np.ndarray]:
    """Per iteration (a step and the gap after it), each part's ps."""
    gap = np.r_[tl.idle[1:], 0].astype(np.float64)
    return {"compute": tl.compute.astype(np.float64), "input": tl.input.astype(np.float64),
            "host_overhead": tl.overhead.astype(np.float64), "idle": gap}


def _op_matrix(ctx, program: Program, key):
    """Per iteration and owner: the main side's op self time and op runs, and runs of ops the
    host dispatches one by one; the op types behind each owner; the op events counted, their
    owners' columns and their iterations."""
    trace, tl = ctx.trace, ctx.tl
    n = len(tl.dur)
    device = tl.device_busy is not None
    side = trace.on_lines_table(lambda ln: ln.on_device if device else (not ln.on_device and ln.role != "data"))
    scopes = trace_scopes(trace)
    unscoped = Unscoped(program, {op.type for op in trace.ops.values() if _outside_scopes(op)},
                        _differentiated(trace, scopes))
    owner = np.full(len(trace.names) + 1, -1, np.int64)
    is_dispatched = np.zeros(len(trace.names) + 1, bool)
    is_callback = np.zeros(len(trace.names) + 1, bool)  # ops that hand off to Python (host callbacks, py_function)
    atts = {}
    for code, op in trace.ops.items():
        att = classify(op, scopes)
        if att.category == "input" or op.kind == "data":
            continue
        atts[code] = att
        owner[code] = key(op_owner(op, att, program, unscoped))
        is_dispatched[code] = op.kind in _DISPATCHED
        entry = known(op.type, bool(op.source) or op.kind == "xla")
        is_callback[code] = entry is not None and entry.key in ("debug_ops", "python_op")
    ev = trace.events
    rows = np.flatnonzero((owner.take(ev["name"]) >= 0) & trace.per_line(side))
    own = owner[ev["name"][rows]]
    label, labels = eager_layers(trace, ctx.steps.starts) if any(op.kind in LABELLED_KINDS for op in trace.ops.values()) \
        else (None, [])
    if label is not None:
        own = _relabelled(own, label[rows].astype(np.int64), ev["name"][rows], labels, atts, program, unscoped, key,
                          trace)
    it = np.searchsorted(tl.start, ev["start_ps"][rows], side="right") - 1
    ok = (it >= 0) & (ev["start_ps"][rows] < tl.start[-1] + tl.dur[-1])
    if not ok.all():  # (most traces: every op inside the steps' span)
        it, own, rows = it[ok], own[ok], rows[ok]
    width = len(key)
    cell = it * width + own
    names = ev["name"][rows]
    self_ps = ev["self_ps"][rows].astype(np.float64)
    op_ps, runs, per_name = _sums(names, own, it, self_ps, owner, n, width, label is None)
    disp = _waits(ctx, rows, it, cell, is_dispatched[names], is_callback[names], n * width).reshape(n, width)
    types: dict[int, Counter] = {}  # the op types behind each owner, by their time
    if label is None:
        for code in np.flatnonzero(per_name).tolist():
            if owner[code] >= 0:
                types.setdefault(int(owner[code]), Counter())[trace.ops[code].type] += int(per_name[code])
    else:  # relabelled events: by (owner, name) pairs, in a table of every pair where it is small
        cells = own.astype(np.int64) * len(owner) + names
        if width * len(owner) <= _NAME_CELLS:
            ps = np.bincount(cells, self_ps, minlength=width * len(owner))
            pair = np.flatnonzero(ps)
            ps = ps[pair]
        else:
            pair, inverse = np.unique(cells, return_inverse=True)
            ps = np.bincount(inverse.reshape(-1), self_ps, minlength=len(pair))
        for p, v in zip(pair.tolist(), ps.tolist()):
            if v > 0:
                types.setdefault(p // len(owner), Counter())[trace.ops[p % len(owner)].type] += int(v)
    return op_ps, runs, disp, types, rows, own, it


def _relabelled(own, lab, names, labels, atts, program: Program, unscoped: Unscoped, key, trace) -> np.ndarray:
    """Owners of labelled events (eager ops by call order; PyTorch's by range and autograd's
    links), judged once per (op, label) pair: the label's layer, or its owner (collectives stay
    theirs, and copies under a function's); else the op's own owner, judged in the label's
    phase (a backward op of the loss is the loss's, backward)."""
    has = np.flatnonzero(lab >= 0)
    if not len(has):
        return own
    own = own.copy()
    pair = names[has].astype(np.int64) * len(labels) + lab[has]
    uniq, inverse = np.unique(pair, return_inverse=True)
    table = []
    for p in uniq.tolist():
        code, lb = p // len(labels), labels[p % len(labels)]
        att = atts[code]
        phase = lb.phase or att.phase  # a function's label says none: its op's own
        phase = phase if phase in ("forward", "backward") else ""
        if lb.layer and att.category != "collective":  # a gradient's all-reduce, launched in its backward: DDP's
            owner = OwnerKey("layer", lb.layer, phase)
        elif lb.kind and not (lb.kind == "code" and att.category in ("transfer", "collective")):
            owner = OwnerKey(lb.kind, lb.name, phase if lb.kind in ("loss", "code") else "")
        elif lb.phase == "optimizer":
            owner = OwnerKey("optimizer", program.optimizer.lower() or "optimizer")
        else:
            att = att._replace(phase=lb.phase or att.phase, category=lb.category or att.category)
            owner = op_owner(trace.ops[code], att, program, unscoped)
        table.append(key(owner))
    own[has] = np.asarray(table, np.int64)[inverse.reshape(-1)]
    return own


_NAME_CELLS = 1 << 22  # iterations x names up to which sums go per name first (few names, many events)


def _sums(names, own, it, self_ps, owner, n: int, width: int, by_name: bool):
    """Per iteration and owner: op self time and runs; and self time per name. Summed per
    (iteration, name) first where that table is small, then per owner (a name has one owner
    unless eager ops were relabelled per event by their call order)."""
    size = len(owner)
    if by_name and n * size <= _NAME_CELLS:
        key = it * size + names
        ps = np.bincount(key, self_ps, minlength=n * size).reshape(n, size)
        count = np.bincount(key, minlength=n * size).reshape(n, size)
        codes = np.flatnonzero(owner >= 0)
        onehot = np.zeros((len(codes), width), np.float64)
        onehot[np.arange(len(codes)), owner[codes]] = 1.0
        return ps[:, codes] @ onehot, np.rint(count[:, codes] @ onehot).astype(np.int64), ps.sum(axis=0)
    cell = it * width + own
    op_ps = np.bincount(cell, self_ps, minlength=n * width).reshape(n, width)
    runs = np.bincount(cell, minlength=n * width).reshape(n, width).astype(np.int64)
    return op_ps, runs, np.bincount(names, self_ps, minlength=size)


def _waits(ctx, rows, it, cell, dispatched, callback, size) -> np.ndarray:
    """Per (iteration, owner) cell: the host time before each op the host dispatches during which
    no op (and no input wait) ran since the last one ended: the time that op's scheduling took (a
    graph loop's body, unseen, shows as the wait before the op after it). Read off the step's
    merged busy intervals (breakdown.timeline's): each gap between two of them goes to the op
    that opens the next, or, after a host callback, to the callback whose Python fills it. The
    wait before a step's first op is the step function's own start (calling it, its arguments):
    the framework's, not that op's."""
    tl = ctx.tl
    b_start, b_end = tl.busy
    if len(b_start) < 2 or not len(rows):
        return np.zeros(size, np.float64)
    ev = ctx.trace.events
    start = ev["start_ps"][rows]
    gap = (b_start[1:] - b_end[:-1]).astype(np.float64)  # before busy interval k + 1
    opens = _at(b_start[1:], start)  # per gap, a row opening the interval after it (-1: none)
    gap_it = np.searchsorted(tl.start, b_start[1:], side="right") - 1
    same_step = gap_it == np.searchsorted(tl.start, b_end[:-1], side="right") - 1
    first = np.maximum(opens, 0)
    owner = np.where((opens >= 0) & dispatched[first], cell[first], -1)
    handing = np.flatnonzero(callback)  # only a host callback hands the gap after it to itself
    if len(handing):
        closes = np.full(len(gap), -1, np.int64)
        hit = _at(b_end[:-1], start[handing] + ev["dur_ps"][rows[handing]])
        closes[hit >= 0] = handing[hit[hit >= 0]]
        after = closes >= 0
        handed = np.zeros(len(gap), bool)
        handed[after] = callback[closes[after]] & (it[closes[after]] == gap_it[after])
        owner = np.where(handed, cell[np.maximum(closes, 0)], owner)
    ok = (owner >= 0) & (gap_it >= 0) & same_step & (gap > 0)
    return np.bincount(owner[ok], gap[ok], minlength=size)


def _at(points: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Per point, a row whose time equals it (-1 where none): a search in the sorted points
    for each row, not a sort of the rows."""
    out = np.full(len(points), -1, np.int64)
    i = np.searchsorted(points, times)
    hit = (i < len(points)) & (points[np.minimum(i, len(points) - 1)] == times)
    out[i[hit]] = np.flatnonzero(hit)
    return out


def _share_part(part: str, budget: np.ndarray, op_ps, runs, dispatched, claimed, ctx, key) -> np.ndarray:
    """Per iteration and owner: the part's ps given to each."""
    n = len(budget)
    width = max(op_ps.shape[1], 1)
    out = np.zeros((n, width), np.float64)
    if part == "compute":
        total = op_ps.sum(axis=1)
        has = total > 0
        out[has, :op_ps.shape[1]] = budget[has, None] * op_ps[has] / total[has, None]
        rest = np.where(has, 0.0, budget)
        return _put(out, rest, key(FRAMEWORK))
    if part == "input":
        return _input(budget, ctx, key, out)
    left = budget.copy()
    if claimed:
        want = np.zeros(n)
        for k, (per, _calls) in claimed.items():
            want += per
        scale = np.where(want > left, left / np.maximum(want, 1), 1.0)
        for k, (per, _calls) in claimed.items():
            out = _put(out, per * scale, k)
        left = left - np.minimum(want, left)
    if part == "idle":
        return _put(out, left, key(OwnerKey("loop", "Keras' training loop" if ctx.loop == "keras" else
                                            "Keras' predict loop" if ctx.loop == "predict" else "your loop")))
    # Host time inside a step with no op running: the waits before the ops the host dispatches one
    # by one are their scheduling's, so each owner takes it by its ops' waits; XLA's thunks are not
    # dispatched.
    total = dispatched.sum(axis=1)
    has = total > 0
    if dispatched.shape[1] > out.shape[1]:
        out = np.pad(out, ((0, 0), (0, dispatched.shape[1] - out.shape[1])))
    out[has, :dispatched.shape[1]] += left[has, None] * dispatched[has] / total[has, None]
    return _put(out, np.where(has, 0.0, left), key(FRAMEWORK))


def _input(budget, ctx, key, out) -> np.ndarray:
    """The input wait, by the pipeline's stages (their own time over the run); on device runs,
    the copies that bring each batch in."""
    if ctx.tl.device_busy is not None:
        return _put(out, budget, key(OwnerKey("copy", "host-to-device (the batch)")))
    stages = [s for s in ctx.pipeline.stages if s.self_ps > 0 and s.name not in _BUFFERS]
    total = sum(s.self_ps for s in stages)
    if not total:
        return _put(out, budget, key(OwnerKey("input", "waiting for the next batch")))
    for s in stages:
        out = _put(out, budget * (s.self_ps / total), key(OwnerKey("input", s.name)))
    return out


def _put(out: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    if k >= out.shape[1]:
        out = np.pad(out, ((0, 0), (0, k + 1 - out.shape[1])))
    out[:, k] += values
    return out


def _rows(keys, wall, op_ps, runs, by_part, types, claims, wall_ps) -> tuple[OwnerRow, ...]:
    n = wall.shape[0]
    what = {k: ", ".join(t for t, _ in c.most_common(3)) for k, c in types.items()}
    for table in claims.values():
        for k, (_per, _calls) in table.items():
            what.setdefault(k, "")
    total = wall.sum(axis=0)
    rows = []
    for k, owner in enumerate(keys):
        if total[k] <= 0 and not op_ps[:, k].any():
            continue
        part = _PARTS[int(np.argmax(by_part[:, k]))]
        rows.append(OwnerRow(owner.kind, owner.name, owner.phase, round(total[k] / n), round(total[k] / wall_ps, 6),
                             round(op_ps[:, k].sum() / n), round(runs[:, k].sum() / n, 2), part, what.get(k, ""),
                             round(by_part[0, k] / n)))
    return tuple(sorted(rows, key=lambda r: (-r.per_step_ps, r.kind, r.name, r.phase)))
