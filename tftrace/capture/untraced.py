"""The same call's steps after a window, timed without the profiler: what its traced steps are set against."""

from __future__ import annotations

import statistics
import time

from tftrace.capture.sidecar import add_to_sidecar

MIN_STEPS = 3  # fewer steps after the window than this: no figure (one slow step would be it)
MAX_TURNS = 10_000  # end hooks a stretch keeps the time of (80 kB): its median needs no more


class AfterWindow:
    """Armed as a window closes complete, with steps of the call still to come: from the end of
    the profiler's stop to the end hook of the epoch's (or call's) last batch, before any
    validation pass sets itself up, their time over their count goes into the window's sidecar as
    `untraced`, with the median turn of the loop (one end hook to the next: a step with the gap
    after it, as the report's steps are set against it). Per batch after the window that costs a
    clock reading. On JAX the stretch ends where the device has run its steps (`settle` waits for
    them); its hooks time the host's dispatch there, so only the mean is the device's pace."""

    def __init__(self, run_dir: str, mode: str, steps: int, last: int, settle) -> None:
        self.mode, self.last = mode, last  # the stretch ends with batch `last`'s end hook
        self._run_dir, self._steps, self._settle = run_dir, steps, settle
        self._began = time.perf_counter()
        self._ends: list[int] = []  # perf_counter_ns at each end hook before the last one

    def turn(self) -> None:
        """A step's end hook (a batch's, or a call's of steps_per_execution batches), before the last one's."""
        if len(self._ends) < MAX_TURNS:
            self._ends.append(time.perf_counter_ns())

    @staticmethod
    def arm(run_dir: str, mode: str, last_batch: int, total: int | None, settle, spe: int = 1) -> AfterWindow | None:
        """`last_batch`: the window's last batch; `total`: the call's (or epoch's) batches, if known;
        `spe`: batches a call of the step function runs (steps_per_execution), so a step is a call,
        as the window's step markers mark them."""
        steps = -(-((total or 0) - last_batch - 1) // max(spe, 1))
        return AfterWindow(run_dir, mode, steps, total - 1, settle) if steps >= MIN_STEPS else None

    def end(self, synced: bool) -> None:
        """The stretch has ended; `synced`: Keras has already waited for its work. Never raises."""
        try:
            if not synced:
                self._settle()
            ms = (time.perf_counter() - self._began) * 1e3
            figure = {"ms_per_step": round(ms / self._steps, 4), "steps": self._steps}
            turns = [b - a for a, b in zip(self._ends, self._ends[1:])]
            if turns:
                figure.update(median_turn_ms=round(statistics.median(turns) / 1e6, 4), turns=len(turns))
            add_to_sidecar(self._run_dir, "untraced", figure)
        except Exception:  # a figure beside the trace: never a reason for the user's call to fail
            pass

