"""TraceCallback(confirm=True): each call's untraced steps, timed outside its window, and the
experiment run after a call whose window was captured."""

from __future__ import annotations

from tftrace.capture import experiment
from tftrace.capture.pacing import Pacer
from tftrace.capture.timing import StepClock
from tftrace.capture.warn import warn


class CallExperiments:
    """One per callback. `on`: confirm=True; off, it keeps no clocks and runs nothing. `experiments`
    holds an Experiment per confirmed call."""

    def __init__(self, on: bool, pacer: Pacer):
        self.on = on
        self.experiments: list = []
        self._pacer = pacer  # on JAX, what waits for the dispatched work as a call ends
        self._clocks: dict[str, StepClock] = {}  # mode -> when its batches began
        # mode -> (run folder, steps, wall seconds) of this call's last complete window
        self._captured: dict[str, tuple[str, int, float]] = {}

    def begin(self, mode: str) -> None:
        self._clocks[mode] = StepClock(ahead=self._pacer.on)

    def new_epoch(self, mode: str) -> None:
        if mode in self._clocks:
            self._clocks[mode].new_epoch()

    def tick(self, mode: str, batch: int, traced: bool) -> None:
        clock = self._clocks.get(mode)
        if self.on and clock is not None:
            clock.tick(batch, traced)

    def end(self, mode: str) -> None:
        """The untraced steps up to an epoch's or call's end, once its work is done (on JAX waited
        for here, once: the host may be steps ahead)."""
        clock = self._clocks.get(mode)
        if not self.on or clock is None:
            return
        try:
            self._pacer.settle()
        except Exception:  # nothing to wait for, or not now: the gaps alone are kept
            clock.new_epoch()
            return
        clock.end()

    def captured(self, mode: str, run_dir: str, steps: int, seconds: float) -> None:
        """A window of `mode` closed complete: the experiment after the call runs about as long."""
        self._captured[mode] = (run_dir, steps, seconds)

    def clear(self) -> None:
        self._captured.clear()

    def after(self, mode: str, call: str, model) -> None:
        """The experiment after `call` (fit, evaluate, predict), beside the run it captured; a
        failure is a warning, never an exception in the user's training."""
        captured = self._captured.pop(mode, None)
        if not self.on or captured is None or model is None:
            return
        run_dir, steps, seconds = captured
        try:
            raw = experiment.keras_call(model, call, experiment.batches_for(steps), budget_s=seconds,
                                        findings=_top_findings(run_dir) if call == "fit" else ())
        except Exception as e:  # never into the user's training: a warning and a note in the report
            raw = experiment.new("step", call, 0)
            raw["error"] = f"{type(e).__name__}: {e}"
            warn(f"the confirm experiment after {call} failed ({raw['error']}); the trace is kept")
        clock = self._clocks.get(mode)
        if clock is not None:  # the call's own steps outside the window: the step the profiler did not slow
            raw.update(untraced_ms=clock.median_ms(), untraced_steps=clock.count)
        try:
            experiment.save(run_dir, raw)
        except OSError as e:
            warn(f"could not save the confirm experiment beside {run_dir} ({e})")
        from tftrace.analysis.confirmation import interpret
        self.experiments.append(interpret(raw))


WHATIF_TOP = 6  # the captured run's top findings whose fixes confirm may time


def _top_findings(run_dir: str) -> tuple:
    """(id, kind, subject, recommendation) of the captured run's top findings, from tftrace's own
    analysis of it (pure Python, no framework); none where it cannot be analysed."""
    try:
        from tftrace.api import analyze
        run = analyze(run_dir, top=None).runs[0]
    except Exception:  # an unreadable run: the other experiments still run
        return ()
    return tuple((b.id, b.kind, b.id.split("/", 1)[-1], b.recommendation) for b in run.bottlenecks[:WHATIF_TOP])
