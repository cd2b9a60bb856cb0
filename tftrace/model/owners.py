"""Owners: what in the user's program each part of a step's time belongs to."""

from __future__ import annotations

from dataclasses import dataclass

# What can own step time, in the user's terms. `code`: a jitted function's own ops outside any
# layer, by the Python line that made them (JAX's HLO metadata); `step`: the step function's own ops outside every
# layer, loss, metric and optimizer; `framework`: the runtime's dispatch, tracing and compiling
# that no op or function of the program accounts for; `profiler`: the capture's own work.
OWNER_KINDS = ("layer", "loss", "metric", "regularizer", "optimizer", "debug", "callback", "input", "python",
               "loop", "copy", "collective", "code", "step", "framework", "profiler")
_TITLES = {"layer": "Layer", "loss": "Loss", "metric": "Metric", "regularizer": "Regularizer",
           "optimizer": "Optimizer", "debug": "Debugging op", "callback": "Callback", "input": "Input stage",
           "python": "Python", "loop": "Loop", "copy": "Copies", "collective": "Collectives",
           "code": "Code", "step": "Step function", "framework": "Framework", "profiler": "Profiler"}


@dataclass(frozen=True)
class OwnerRow:
    """One owner's time per step (the mean iteration: a step and the gap after it)."""

    kind: str  # one of OWNER_KINDS
    name: str  # the layer, loss, metric, optimizer, callback hook, stage, function...
    phase: str = ""  # forward | backward (layers, the loss, regularizers), else ""
    per_step_ps: int = 0  # its share of the mean iteration's wall time: every row together make it whole
    share: float = 0.0  # of the mean iteration
    op_ps: int = 0  # per step: its ops' own (self) time; parallel threads add up, so it may exceed per_step_ps
    runs: float = 0.0  # per step: its op runs (or hook and function calls)
    part: str = ""  # the breakdown part most of its time is in: compute | input | host_overhead | idle
    what: str = ""  # what it runs: its top op types, or where a function or hook is defined
    compute_ps: int = 0  # per step: the part of per_step_ps its ops running hold (the rest: dispatch, waits)

    @property
    def owner(self) -> str:
        """The owner without its phase: `Layer conv2d`, `Optimizer adam`, `ops outside any layer`."""
        if self.kind == "step":
            return "the step's ops outside any layer"
        return f"{_TITLES.get(self.kind, self.kind.title())} {self.name}".strip()

    @property
    def label(self) -> str:
        """`Layer conv2d (backward)`, `Optimizer adam`, `Framework (dispatch and runtime)`."""
        phase = f" ({self.phase})" if self.phase else ""
        return f"{_TITLES.get(self.kind, self.kind.title())} {self.name}{phase}".strip()
