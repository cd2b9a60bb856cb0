"""The owner behind a Python stack that made an XLA op (JAX's HLO metadata records it): Keras'
metrics, regularizers, losses and optimizers by the package folder their code lives in and the
class it belongs to, else the user's own innermost function and line."""

from __future__ import annotations

import re

from tftrace.analysis.owners.key import OwnerKey

CHAIN = " < "
_FRAME = re.compile(r"(?P<fn>.+)@(?P<file>.+):(?P<line>\d+)\Z")
# Keras' source folders that hold what the user configured (keras/src/<folder>/...).
_KERAS = {"metrics": "metric", "regularizers": "regularizer", "losses": "loss", "optimizers": "optimizer",
          "constraints": "constraint", "callbacks": "callback"}


_BASES = {"Metric", "Loss", "Regularizer", "Optimizer", "BaseOptimizer", "Constraint", "Callback", "LossFunctionWrapper",
          "Reduce", "Mean", "MeanMetricWrapper"}


def _in_keras(file: str) -> bool:
    parts = file.split("/")
    return len(parts) > 2 and parts[0] == "keras" and parts[1] == "src" and parts[2] in _KERAS


def frames(code: str) -> list[tuple[str, str, int]]:
    """(function, file, line) per frame, innermost first."""
    out = []
    for part in code.split(CHAIN) if code else ():
        m = _FRAME.match(part)
        if m:
            out.append((m["fn"], m["file"], int(m["line"])))
    return out


def frame_owner(code: str, phase: str) -> OwnerKey | None:
    """What the stack says owns the op: a Keras metric, regularizer, loss, optimizer or
    constraint (by class), else the user's innermost function; None when nothing does."""
    stack = frames(code)
    configured = [(fn, file.split("/")) for fn, file, _line in stack if _in_keras(file)]
    if configured:
        kind = _KERAS[configured[0][1][2]]
        # The first method of a class of its own (`AUC.update_state`), past Keras' helpers
        # (`metrics_utils.update_confusion_matrix_variables`) and base classes.
        cls = next((fn.split(".")[0] for fn, parts in configured
                    if "." in fn and fn.split(".")[0] not in _BASES and _KERAS[parts[2]] == kind), "")
        cls = cls or configured[0][1][-1].removesuffix(".py")
        if kind == "constraint":
            return OwnerKey("optimizer", f"constraint {cls}")
        return OwnerKey(kind, cls, phase if kind in ("regularizer", "loss") else "")
    user = next(((fn, file, line) for fn, file, line in stack if "/" not in file), None)
    if user is None:
        return None
    fn, file, line = user
    return OwnerKey("code", f"{fn.rsplit('.', 1)[-1]} ({file}:{line})", phase)
