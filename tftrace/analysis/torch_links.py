"""Owners of a PyTorch (Kineto) trace's events. A host op inside a layer's, a module's, the loss's,
a metric's or the optimizer's range is its (analysis/torch_ranges), else its Python function's; a
backward op is the owner of the forward op that made it, in the backward phase, through
autograd's own links (a `fwdbwd` flow, else the sequence number both ops carry); device work is
the owner of the host op that launched it (their correlation id)."""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from tftrace.analysis.kineto_window import window_note
from tftrace.analysis.owners.program import program_of
from tftrace.analysis.torch_ops import is_torch_backward, torch_category
from tftrace.analysis.torch_ranges import innermost, module_name, optimizer_class, stack_owner, user_frame
from tftrace.model.events import Trace
from tftrace.model.names import TORCH_MODULE as MODULE_EVENT

# Autograd's accumulation of a weight's gradient into `.grad`: it carries no sequence number, and
# follows the backward op that made that gradient: it is that op's owner's.
_ACCUMULATE = ("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "torch::autograd::AccumulateGrad")
_KINDS = {"loss": "loss", "metric": "metric", "optimizer": "optimizer"}  # owner ranges the capture records


class Links:
    """What the trace's links found: backward ops and the forward ops they were linked to."""

    def __init__(self, backward: np.ndarray, forward: np.ndarray, by_flow: np.ndarray, seq: np.ndarray):
        self.backward = backward  # rows of backward ops (those with a sequence number)
        self.forward = forward  # per backward op, the row of its forward op (-1: none found)
        self.by_flow = by_flow  # per backward op: linked through a `fwdbwd` flow (else by sequence number)
        self.seq = seq  # per backward op, its sequence number: autograd's wrapper and the function share it

    def functions(self) -> tuple[int, int, int]:
        """Backward functions (a sequence number's ops), those linked, those linked by a flow."""
        if not len(self.seq):
            return 0, 0, 0
        uniq, inverse = np.unique(self.seq, return_inverse=True)
        linked = np.bincount(inverse, self.forward >= 0, minlength=len(uniq)) > 0
        flowed = np.bincount(inverse, self.by_flow, minlength=len(uniq)) > 0
        return len(uniq), int(linked.sum()), int(flowed.sum())


_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def torch_labels(trace: Trace, label_type) -> tuple[np.ndarray | None, list]:
    """Per event, an index into the returned labels (-1: none), each a
    `label_type(layer, phase, category, kind, name)`; made once per trace."""
    made = _MADE.get(trace)
    if made is None:
        made = _MADE[trace] = _labels(trace, label_type)
    return made


def _labels(trace: Trace, label_type) -> tuple[np.ndarray | None, list]:
    labels: list = []
    index: dict = {}

    def label(*fields) -> int:
        lb = label_type(*fields)
        if lb not in index:
            index[lb] = len(labels)
            labels.append(lb)
        return index[lb]

    ev = trace.events
    n = len(ev)
    if not n:
        return None, []
    host = trace.on_lines(lambda ln: not ln.on_device)
    strong = _range_labels(trace, label)  # per name code: a range's label (-1: not a range)
    ranges = np.flatnonzero((strong.take(ev["name"]) >= 0) & host)
    forward = _by_ranges(trace, ranges, strong, host)  # every host event's label from the ranges holding it
    # Where no range says: the loss op around it, else the user's function (its Python event, or the
    # op's own stack: an op inside a loss op carries one too, so the loss goes first).
    loss = _loss_labels(trace, label).take(ev["name"])
    loss = _by_rows(trace, np.flatnonzero((loss >= 0) & host), loss, host & (forward < 0))
    code = np.maximum(_function_labels(trace, label).take(ev["name"]), _stack_labels(trace, label))
    code = _by_rows(trace, np.flatnonzero((code >= 0) & host), code, host & (forward < 0) & (loss < 0))
    code = np.where(loss >= 0, loss, code)  # a function's label or a loss's: what no range holds
    forward = np.where(forward >= 0, forward, code)
    links = backward_links(trace)
    anchors, anchor_label = _backward_anchors(trace, links, forward, labels, label)
    if not len(ranges) and not len(anchors) and not (code >= 0).any():
        return None, []
    rows = np.concatenate([ranges, anchors])
    table = np.full(n, -1, np.int64)
    table[ranges] = strong.take(ev["name"][ranges])
    table[anchors] = anchor_label
    host_label = _by_rows(trace, rows, table, host)
    host_label = np.where(host_label >= 0, host_label, code)
    out = _launched(trace, host_label)
    dtype = np.int16 if len(labels) < 2 ** 15 else np.int32
    return out.astype(dtype), labels


def _range_labels(trace: Trace, label: Callable) -> np.ndarray:
    """Per name code, the label of the range events of that name (-1: not a range): Keras
    layers (the sidecar's `layer_ranges`, the model's first: it holds every layer's, so it
    names none), modules (`nn.Module: <name>`), the optimizer's steps, and the loss, metric and
    optimizer ranges the capture recorded (the sidecar's `owner_ranges`)."""
    out = np.full(len(trace.names) + 1, -1, np.int64)
    layers = set(list(trace.sidecar.get("layer_ranges") or [])[1:])
    program = program_of(trace.sidecar)
    configured = {"loss": program.loss or "loss", "metric": ", ".join(program.metrics) or "Keras' loss tracker and counters",
                  "optimizer": program.optimizer.lower() or "optimizer"}
    owners = {}
    for entry in trace.sidecar.get("owner_ranges") or ():
        if isinstance(entry, (list, tuple)) and len(entry) == 3 and entry[1] in _KINDS:
            owners[str(entry[0])] = (str(entry[1]), str(entry[2]) or configured[entry[1]])
    for code, name in enumerate(trace.names):
        if code in trace.ops:
            continue
        if name in layers:
            out[code] = label(name, "forward", "", "", "")
        elif name in owners:
            kind, owner = owners[name]
            out[code] = label("", "optimizer", "optimizer", kind, owner) if kind == "optimizer" else \
                label("", "forward" if kind == "loss" else "", "loss" if kind == "loss" else "", kind, owner)
        elif (module := module_name(name)):
            out[code] = label(module, "forward", "", "", "")
        elif (cls := optimizer_class(name)):
            out[code] = label("", "optimizer", "optimizer", "optimizer", cls.lower())
    return out


def _function_labels(trace: Trace, label: Callable) -> np.ndarray:
    """Per name code, a code owner's label where the name is a Python event of the user's own
    function (torch.profiler's with_stack: `train.py(42): loss_fn`)."""
    out = np.full(len(trace.names) + 1, -1, np.int64)
    for code, name in enumerate(trace.names):
        if code not in trace.ops and ".py(" in name:
            found = user_frame(name, script=False)
            if found is not None:
                fn, file, line = found
                out[code] = label("", "", "", "code", f"{fn} ({file}:{line})")
    return out


def _loss_labels(trace: Trace, label: Callable) -> np.ndarray:
    """Per name code, a loss owner's label where the name is a forward loss op (`aten::cross_entropy_loss`:
    the ops inside it, `aten::log_softmax` among them, are the loss's)."""
    out = np.full(len(trace.names) + 1, -1, np.int64)
    for code, op in trace.ops.items():
        if op.kind == "torch" and torch_category(op.type) == "loss" and not is_torch_backward(op.type):
            out[code] = label("", "forward", "loss", "loss", op.type.rsplit("::", 1)[-1])
    return out


def _stack_labels(trace: Trace, label: Callable) -> np.ndarray:
    """Per event, a code owner's label from the `Call stack` the op carries (2021's with_stack)."""
    out = np.full(len(trace.events), -1, np.int64)
    st = trace.stats
    if "stack" not in st.columns:
        return out
    has = st["stack"] >= 0
    if not has.any():
        return out
    rows, stacks = st["event"][has], st["stack"][has]
    uniq, inverse = np.unique(stacks, return_inverse=True)
    owner = [stack_owner(trace.names[c]) for c in uniq.tolist()]
    codes = np.array([label("", "", "", "code", o) if o else -1 for o in owner] + [-1], np.int64)
    out[rows] = codes[inverse.reshape(-1)]
    return out


def _by_ranges(trace: Trace, ranges: np.ndarray, label_of_name: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    table = np.full(len(trace.events), -1, np.int64)
    table[ranges] = label_of_name.take(trace.events["name"][ranges])
    return _by_rows(trace, ranges, table, wanted)


def _by_rows(trace: Trace, rows: np.ndarray, table: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per event (of those `wanted`), the label `table` gives the innermost of `rows` holding it
    on its own line (-1: none)."""
    ev = trace.events
    out = np.full(len(ev), -1, np.int64)
    if not len(rows):
        return out
    start, end = ev["start_ps"], ev["start_ps"] + ev["dur_ps"]
    targets = np.flatnonzero(wanted)
    line_of = ev["line"]
    for line in np.unique(line_of[rows]).tolist():
        mine = rows[line_of[rows] == line]
        there = targets[line_of[targets] == line]
        k = innermost(start[mine], end[mine], start[there], end[there])
        hit = k >= 0
        out[there[hit]] = table[mine[k[hit]]]
    return out


def backward_links(trace: Trace) -> Links:
    """Each backward op (an op with a sequence number and a forward thread id above 0) and the
    forward op that made it: the op at the other end of its `fwdbwd` flow, else the last op
    before it of the forward thread (thread id 0) with its sequence number."""
    made = _LINKS.get(trace)
    if made is not None:
        return made
    st = trace.stats
    empty = np.zeros(0, np.int64)
    if "seq" not in st.columns or not (st["seq"] >= 0).any():
        made = _LINKS[trace] = Links(empty, empty, np.zeros(0, bool), empty)
        return made
    seq, fwd, flow, rows = st["seq"], st["fwd_thread"], st["fwdbwd"], st["event"]
    start = trace.events["start_ps"]
    is_fwd = (seq >= 0) & (fwd == 0)
    is_bwd = (seq >= 0) & (fwd > 0)
    f_rows, f_seq = rows[is_fwd], seq[is_fwd]
    b_rows, b_seq = rows[is_bwd], seq[is_bwd]
    # By sequence number: the last forward op with it that began before the backward op.
    order = np.lexsort((start[f_rows], f_seq))
    f_rows, f_seq = f_rows[order], f_seq[order]
    key_f = np.stack([f_seq, start[f_rows]])
    at = _search_pairs(key_f, b_seq, start[b_rows])
    ok = (at >= 0) & (f_seq[np.maximum(at, 0)] == b_seq)
    linked = np.where(ok, f_rows[np.maximum(at, 0)], -1)
    # By flow, where one ends at the backward op: the forward op it starts at (with its sequence number).
    by_flow = np.zeros(len(b_rows), bool)
    starts = {}
    for r, s, fl in zip(rows[is_fwd & (flow >= 0)].tolist(), seq[is_fwd & (flow >= 0)].tolist(),
                        flow[is_fwd & (flow >= 0)].tolist()):
        starts[(fl, s)] = r  # several ops may begin at the flow's time: the one with its number
    b_flow = flow[is_bwd]
    for i in np.flatnonzero(b_flow >= 0).tolist():
        r = starts.get((int(b_flow[i]), int(b_seq[i])))
        if r is not None:
            linked[i], by_flow[i] = r, True
    made = _LINKS[trace] = Links(b_rows, linked, by_flow, b_seq)
    return made


_LINKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _search_pairs(keys: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per query (first, second), the index of the last key pair <= it (keys sorted by pair); -1: none."""
    if not keys.shape[1]:
        return np.full(len(first), -1, np.int64)
    lo = np.searchsorted(keys[0], first, side="left")
    hi = np.searchsorted(keys[0], first, side="right")
    out = np.full(len(first), -1, np.int64)
    has = hi > lo
    for i in np.flatnonzero(has).tolist():  # a handful of ops share each sequence number
        j = lo[i] + np.searchsorted(keys[1][lo[i]:hi[i]], second[i], side="right") - 1
        out[i] = j if j >= lo[i] else -1
    return out


def _backward_anchors(trace: Trace, links: Links, forward: np.ndarray, labels: list, label: Callable):
    """Rows that own the ops inside them in the backward pass, and their labels: each backward op
    (its forward op's owner, in the backward phase) and each gradient accumulation (the owner of
    the backward op before it on its thread)."""
    ev = trace.events
    rows = links.backward
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    got = np.where(links.forward >= 0, forward[np.maximum(links.forward, 0)], -1)
    out = np.empty(len(rows), np.int64)
    for i, g in enumerate(got.tolist()):
        if g < 0:
            out[i] = label("", "backward", "", "", "")
        else:
            lb = labels[g]
            out[i] = label(lb.layer, "backward", lb.category, lb.kind, lb.name)
    accumulate = trace.codes(_ACCUMULATE)
    acc = np.flatnonzero(trace.named(accumulate)) if accumulate else np.zeros(0, np.int64)
    if not len(acc):
        return rows, out
    # Per line, the backward op that began last before each accumulation.
    key_rows = np.concatenate([rows, acc])
    order = np.lexsort((ev["start_ps"][key_rows], ev["line"][key_rows]))
    key_rows = key_rows[order]
    is_acc = order >= len(rows)
    values = np.concatenate([out, np.full(len(acc), -1, np.int64)])[order]
    line = ev["line"][key_rows]
    last = -1
    prev_line = -1
    for i in range(len(key_rows)):
        if line[i] != prev_line:
            last, prev_line = -1, line[i]
        if is_acc[i]:
            values[i] = last
        else:
            last = values[i]
    acc_rows, acc_values = key_rows[is_acc], values[is_acc]
    keep = acc_values >= 0
    return np.concatenate([rows, acc_rows[keep]]), np.concatenate([out, acc_values[keep]])


def _launched(trace: Trace, host_label: np.ndarray) -> np.ndarray:
    """Every event's label: a host event's own; device work that of the host event that launched
    it (the runtime call with the same correlation id)."""
    st = trace.stats
    out = host_label
    corr, rows = st["correlation"], st["event"]
    has = corr >= 0
    if not has.any():
        return out
    rows, corr = rows[has], corr[has]
    on_device = trace.on_lines(lambda ln: ln.on_device)[rows]
    launch_rows, launch_corr = rows[~on_device], corr[~on_device]
    order = np.argsort(launch_corr, kind="stable")
    launch_rows, launch_corr = launch_rows[order], launch_corr[order]
    dev_rows, dev_corr = rows[on_device], corr[on_device]
    at = np.searchsorted(launch_corr, dev_corr)
    hit = (at < len(launch_corr)) & (launch_corr[np.minimum(at, len(launch_corr) - 1)] == dev_corr)
    out = out.copy()
    out[dev_rows[hit]] = host_label[launch_rows[at[hit]]]
    return out


def torch_notes(trace: Trace) -> tuple[str, ...]:
    """What the trace's own links gave the owners, and what to turn on in `torch.profiler` where
    the trace names no module, layer or Python function."""
    if trace.format != "kineto":
        return ()
    notes = list(window_note(trace))
    functions, linked, flows = backward_links(trace).functions()
    if functions:
        how = ", ".join(([f"{flows} through fwdbwd flows"] if flows else [])
                        + ([f"{linked - flows} by sequence number"] if linked > flows else []))
        notes.append(f"autograd's links: {linked} of {functions} backward functions owned by the forward op that "
                     f"made them ({how}); device work by the op that launched it (correlation ids)")
    named = (trace.sidecar.get("layer_ranges") or trace.has_prefix(MODULE_EVENT)
             or ("stack" in trace.stats.columns and bool((trace.stats["stack"] >= 0).any()))
             or any(".py(" in n for n in trace.names))
    if not named:
        notes.append("this PyTorch trace names no module or Python function, so its ops are owned by phase only: "
                     "record with `torch.profiler.profile(..., with_stack=True)` (each module's call and the Python "
                     "around each op; it slows Python-heavy steps) or capture with `tftrace.trace()` (each module's "
                     "call marked, named as `model.named_modules()` names it)")
    return tuple(notes)
