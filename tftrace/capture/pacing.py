"""Steps paced by the device inside a window: on JAX, one step of run-ahead and no more."""

from __future__ import annotations

from tftrace.capture.backend import JAX


class Pacer:
    """JAX dispatches jitted steps asynchronously, and Keras 3 (with its callbacks' end hooks on a
    worker thread) never waits for a result: the host runs steps ahead of the device, and a step
    marked at the host times its dispatch, not its work. Inside a window, each step's end waits for
    the step before it (its logs ready means its module ran): the host still dispatches a step
    while the device runs the last one, as untraced, and each marked step lasts what the device
    takes. Outside windows nothing waits; on TensorFlow (its steps return when done) neither."""

    def __init__(self, backend: str):
        self._on = backend == JAX
        self._held = None

    @property
    def on(self) -> bool:
        return self._on

    def step_ended(self, logs) -> None:
        if not self._on:
            return
        held, self._held = self._held, logs
        if held is not None:
            _wait(held)

    def last_step(self, logs) -> None:
        """The window's last step: wait for its own work too, so that the steps marked hold as many
        device steps as there are markers (the first, with nothing before it, holds only a dispatch)."""
        if self._on and logs is not None:
            _wait(logs)

    def clear(self) -> None:
        self._held = None

    def settle(self) -> None:
        """Wait for all the work dispatched so far: once, as a call or epoch ends, where `confirm`'s
        clock times the steps outside the window up to there (Keras itself reads the logs then)."""
        if self._on:
            import jax
            from tftrace.capture.backend import drain
            drain(jax)


def _wait(logs) -> None:
    # Each array waited on here, not through jax.block_until_ready: the stack sampler then finds
    # the wait in this module (the profiler's own work, never a cause), not in JAX's Python.
    for value in (logs.values() if isinstance(logs, dict) else (logs,)):
        try:
            value.block_until_ready()
        except Exception:  # not an array, a deleted buffer: nothing to wait for
            pass
