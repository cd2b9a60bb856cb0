"""Which owner in the program an op belongs to: a layer and its phase, the loss, a metric, a
regularizer, the optimizer, a debugging op, copies, or the step function's own ops; from its
name scopes (TF) or its framework's scope path (XLA), and for ops outside every scope from what
the program's configuration says is there (sidecar) or, without one, what their types say."""

from __future__ import annotations

from tftrace.analysis.classify import METRIC_SCOPES, Attribution, bare, is_gradient_type, is_loss_scope, scopes_of
from tftrace.analysis.owners.key import OwnerKey
from tftrace.analysis.owners.knowledge import BOOKKEEPING_TYPES, METRIC_TYPES, REGULARIZER_TYPES, known
from tftrace.analysis.owners.frames import frame_owner
from tftrace.analysis.owners.program import Program
from tftrace.model.names import OPTIMIZER_SCOPES, Op

OUTSIDE = "outside any layer"


def op_owner(op: Op, att: Attribution, program: Program, unscoped: "Unscoped") -> OwnerKey:
    """The owner of one op (`att` is its category, layer and phase)."""
    phase = att.phase if att.phase in ("forward", "backward") else ""
    if att.category == "input":
        return OwnerKey("input", op.type)
    entry = known(op.type, bool(op.source) or op.kind == "xla")
    if entry is not None and entry.key in ("debug_ops", "python_op"):
        return OwnerKey("debug", op.type)
    if att.layer and att.category not in ("loss", "optimizer"):  # most ops: a layer's (no loss or metric has one)
        return OwnerKey("layer", att.layer, phase)
    scopes = scopes_of(op)
    lowered = [bare(s).lower() for s in scopes]
    if att.phase == "optimizer" or att.category == "optimizer":
        name = next((bare(s) for s, low in zip(scopes, lowered) if low in OPTIMIZER_SCOPES), "")
        return OwnerKey("optimizer", name or program.optimizer.lower() or "optimizer")
    if att.category == "loss" or any(is_loss_scope(s) for s in scopes):
        return OwnerKey("loss", _loss_name(scopes) or program.loss or "loss", phase)
    metric = next((i for i, low in enumerate(lowered) if low in METRIC_SCOPES), None)
    if metric is not None:
        return OwnerKey("metric", bare(scopes[metric + 1]) if metric + 1 < len(scopes) else "metrics")
    if att.layer:
        return OwnerKey("layer", att.layer, phase)
    if op.code and att.category not in ("transfer", "collective"):  # the Python stack that made an XLA op
        owner = frame_owner(op.code, phase)
        if owner is not None:
            return owner
    if att.category in ("transfer", "collective") and op.type not in BOOKKEEPING_TYPES:
        return OwnerKey("copy" if att.category == "transfer" else "collective", op.type)
    if op.kind == "eager" or op.kind == "memcpy":
        return OwnerKey("step", OUTSIDE, phase)
    return unscoped.owner(op, phase)


def _loss_name(scopes: tuple[str, ...]) -> str:
    """`compile_loss/binary_crossentropy/...` -> `binary_crossentropy`; tf.keras's own loss scope."""
    for i, s in enumerate(scopes):
        if is_loss_scope(s):
            if bare(s).lower() in ("compile_loss", "loss", "losses") and i + 1 < len(scopes):
                return bare(scopes[i + 1])
            return bare(s)
    return ""


class Unscoped:
    """Who owns the step function's ops outside every layer, loss and optimizer scope (Keras 3
    on TF puts metrics and weight penalties there): the program's configuration decides; without
    it, op types that only a metric or a penalty runs name them, marked as read from the types."""

    def __init__(self, program: Program, types: set[str], differentiated: bool = True):
        self.program = program
        # `types`: those of the ops outside every scope. A penalty is part of the loss, so its
        # gradient runs too: without backward ops outside every layer and the loss
        # (`differentiated`), Abs and Square there are the step's own work (a metric's), no penalty.
        penalty = {"Square", "Abs"} & types if differentiated else set()
        # Without the program's configuration, an owner read from op types alone is a guess: it
        # takes only the types that are its own, never a layer's work (a convolution, a GEMM).
        self.guessed = not program.known
        self.metric = program.metrics and ", ".join(program.metrics) or \
            ("a compiled metric (a guess from its op types)" if METRIC_TYPES & types and self.guessed else "")
        self.regularizer = ", ".join(program.regularized) if program.regularized else \
            ("a weight regularizer (a guess from its op types)" if penalty and self.guessed else "")

    def owner(self, op: Op, phase: str) -> OwnerKey:
        t = op.type
        if self.metric and t in METRIC_TYPES:
            return OwnerKey("metric", self.metric)
        if self.regularizer and (t in REGULARIZER_TYPES or (is_gradient_type(t) and not self.guessed)):
            return OwnerKey("regularizer", self.regularizer, phase)
        if t in BOOKKEEPING_TYPES or t.endswith("VariableOp"):
            return OwnerKey("metric", self.metric or "Keras' loss tracker and counters")
        if self.metric and phase == "forward" and not op.source and not self.guessed:
            return OwnerKey("metric", self.metric)
        return OwnerKey("step", OUTSIDE, phase)
