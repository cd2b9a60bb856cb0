"""The same call's steps after a window, timed without the profiler: what its traced steps are set against."""

from __future__ import annotations

import time

from tftrace.capture.sidecar import add_to_sidecar

MIN_STEPS = 3  # fewer steps after the window than this: no figure (one slow step would be it)


class AfterWindow:
    """Armed as a window closes complete, with steps of the call still to come: from the end of
    the profiler's stop to the end hook of the epoch's (or call's) last batch, before any
    validation pass sets itself up, their time over their count goes into the window's sidecar as
    `untraced`. Per batch that costs one attribute read: two clock readings, one sidecar update.
    On JAX the stretch ends where the device has run its steps (`settle` waits for them)."""

    def __init__(self, run_dir: str, mode: str, steps: int, last: int, settle) -> None:
        self.mode, self.last = mode, last  # the stretch ends with batch `last`'s end hook
        self._run_dir, self._steps, self._settle = run_dir, steps, settle
        self._began = time.perf_counter()

    @staticmethod
    def arm(run_dir: str, mode: str, last_batch: int, total: int | None, settle) -> AfterWindow | None:
        """`last_batch`: the window's last batch; `total`: the call's (or epoch's) batches, if known."""
        steps = (total or 0) - last_batch - 1
        return AfterWindow(run_dir, mode, steps, total - 1, settle) if steps >= MIN_STEPS else None

    def end(self, synced: bool) -> None:
        """The stretch has ended; `synced`: Keras has already waited for its work. Never raises."""
        try:
            if not synced:
                self._settle()
            ms = (time.perf_counter() - self._began) * 1e3
            add_to_sidecar(self._run_dir, "untraced", {"ms_per_step": round(ms / self._steps, 4), "steps": self._steps})
        except Exception:  # a figure beside the trace: never a reason for the user's call to fail
            pass

