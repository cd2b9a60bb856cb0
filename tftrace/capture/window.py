"""Which steps of a Keras call a TraceCallback window profiles."""

from __future__ import annotations


class Window:
    """Steps [first, last] of one mode (in chosen epochs, for fit) to profile. A default window of
    short steps goes on past its `default_len` steps until it has lasted `min_s` seconds (at most
    `max_steps` steps, and half a call of known length)."""

    def __init__(self, spec, default_len: int, warmup: int, min_s: float = 0.0, max_steps: int = 0):
        self.default = spec is True or spec == "auto"
        self.min_s, self.max_steps = (min_s, max(max_steps, default_len)) if self.default else (0.0, 0)
        self._total: int | None = None  # steps the call runs, when known
        self.reached = False
        if spec is None or spec is False:
            self.first = self.last = None
        elif self.default:
            self.first, self.last = warmup, warmup + default_len - 1
        elif isinstance(spec, int):
            self.first, self.last = warmup, warmup + spec - 1
        else:
            self.first, self.last = int(spec[0]), int(spec[1])

    def go_on(self, elapsed_s: float, batch: int, steps_per_call: int = 1) -> bool:
        """At the window's last step, `batch` (a call's last, when it runs several), `elapsed_s`
        into the window: whether it takes the next call too."""
        end = batch + steps_per_call  # the next call's last step
        if elapsed_s >= self.min_s or end - self.first + 1 > self.max_steps:
            return False
        # At most half the call (the rest runs at full speed, and `confirm` compares the window with
        # those steps), and never its last batch (often partial: a retrace). Of a call whose length
        # is unknown (a generator, fit's validation pass) neither is known: it keeps its steps.
        if not self._total or end - self.first + 1 > self._total // 2 or end >= self._total - 1:
            return False
        self.last = end
        return True

    @property
    def enabled(self) -> bool:
        return self.first is not None

    def planned(self, steps_per_execution: int) -> int:
        """How many marked calls the window holds (one per call when a call runs several steps)."""
        spe = steps_per_execution
        return len([b for b in range(0, self.last + 1, spe) if b + spe - 1 >= self.first])

    def fit_to(self, total: int | None) -> None:
        """A short run still gets a window: pull it back inside the steps that will run."""
        self._total = total
        if not self.enabled or not total or self.first < total:
            return
        span = self.last - self.first
        self.first = max(1, total - span - 1) if total > 2 else 0
        self.last = min(total - 1, self.first + span)
