"""A snapshot of variables' values, put back bit for bit after an experiment ran steps on them."""

from __future__ import annotations


def variables_of(*owners) -> list:
    """The variables of models, optimizers, metrics or plain lists of variables, each once.

    A Keras 3 model's `variables` hold its weights and its layers' seed generators' states; its
    optimizer's hold the iteration count, the learning rate and the slots; `metrics_variables`
    the metrics' (the loss tracker included)."""
    seen: dict[int, object] = {}
    for owner in owners:
        if owner is None:
            continue
        if isinstance(owner, (list, tuple)):
            found = list(owner)
        else:
            found = []
            for attr in ("variables", "metrics_variables"):
                found += list(getattr(owner, attr, None) or ())
            optimizer = getattr(owner, "optimizer", None)
            if optimizer is not None and optimizer is not owner:
                found += list(getattr(optimizer, "variables", None) or ())
        for v in found:
            if hasattr(v, "assign") and hasattr(v, "numpy"):
                seen.setdefault(id(v), v)
    return list(seen.values())


class Snapshot:
    """The values of `variables` now; `restore()` assigns them back (copies, not views)."""

    def __init__(self, variables: list):
        self.variables = list(variables)
        self.values = [v.numpy().copy() for v in self.variables]

    def restore(self) -> None:
        for v, value in zip(self.variables, self.values):
            v.assign(value)

    def unchanged(self) -> bool:
        """Every variable holds exactly its saved bytes (NaNs compare equal to NaNs)."""
        return all(v.numpy().tobytes() == value.tobytes() for v, value in zip(self.variables, self.values))
