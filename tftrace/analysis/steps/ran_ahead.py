"""The host running ahead of the device. JAX dispatches jitted calls asynchronously: a loop that
never waits for a result queues steps faster than the device runs them, and pays for them all
where it finally waits (Keras' flush of its callbacks at an epoch's end, a read of a result).
Steps timed at the host then measure the dispatch, and the device sets the pace."""

from __future__ import annotations

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.intervals import covered

AHEAD = 0.5  # a median step under this share of the device's time per step: the host ran ahead
MIN_STEPS = 4


def device_pace(tl: Timeline) -> float | None:
    """The device's (or XLA:CPU's) busy time per step over the steps, where the host ran ahead of
    it; None where the steps keep pace with their device work."""
    n = len(tl.dur)
    if n < MIN_STEPS:
        return None
    lo, hi = np.array([tl.start[0]]), np.array([(tl.start + tl.dur).max()])
    pace = float(covered(*tl.busy, lo, hi)[0]) / n
    return pace if float(np.median(tl.iterations)) < AHEAD * pace else None


def ran_ahead_note(tl: Timeline) -> tuple[str, ...]:
    pace = device_pace(tl)
    if pace is None:
        return ()
    median = float(np.median(tl.iterations))
    return (f"the host ran ahead of the device: steps time its dispatch (median {median / 1e9:.2f} ms); the device "
            f"took {pace / 1e9:.2f} ms a step, paid where the loop waited",)
