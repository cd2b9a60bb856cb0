"""Which steps of a Keras call a TraceCallback window profiles."""

from __future__ import annotations


class Window:
    """Steps [first, last] of one mode (in chosen epochs, for fit) to profile."""

    def __init__(self, spec, default_len: int, warmup: int):
        self.default = spec is True or spec == "auto"
        self.reached = False
        if spec is None or spec is False:
            self.first = self.last = None
        elif self.default:
            self.first, self.last = warmup, warmup + default_len - 1
        elif isinstance(spec, int):
            self.first, self.last = warmup, warmup + spec - 1
        else:
            self.first, self.last = int(spec[0]), int(spec[1])

    @property
    def enabled(self) -> bool:
        return self.first is not None

    def planned(self, steps_per_execution: int) -> int:
        """How many marked calls the window holds (one per call when a call runs several steps)."""
        spe = steps_per_execution
        return len([b for b in range(0, self.last + 1, spe) if b + spe - 1 >= self.first])

    def fit_to(self, total: int | None) -> None:
        """A short run still gets a window: pull it back inside the steps that will run."""
        if not self.enabled or not total or self.first < total:
            return
        span = self.last - self.first
        self.first = max(1, total - span - 1) if total > 2 else 0
        self.last = min(total - 1, self.first + span)
