"""The capture's own time, as its sidecar and samples file recorded it: owned by "profiler",
stated in one note and never judged as the program's."""

from __future__ import annotations


def capture_note(sidecar: dict, python_samples: dict | None, steps: int, sampler_named: bool = False) -> tuple[str, ...]:
    """One note with what the capture itself spent outside the steps (starting and stopping the
    profiler, waiting for work already dispatched) and the stack sampler's own time, unless
    `sampler_named` (its ticks inside the steps have a note of their own, analysis/profiler_cost);
    () when the run holds no such record (stock captures)."""
    cost = sidecar.get("capture_cost") if isinstance(sidecar, dict) else None
    parts = []
    if isinstance(cost, dict):
        if _ms(cost.get("start_ms")):
            drain = _ms(cost.get("start_drain_ms"))
            parts.append(f"starting the profiler {_ms(cost['start_ms'])}"
                         + (f" (of it {drain} waiting for work already dispatched)" if drain else ""))
        if _ms(cost.get("stop_ms")):
            drain = _ms(cost.get("drain_ms"))
            parts.append(f"stopping it {_ms(cost['stop_ms'])}"
                         + (f" (of it {drain} waiting for work already dispatched)" if drain else ""))
    busy = python_samples.get("sampler_busy_ns") if isinstance(python_samples, dict) else None
    if isinstance(busy, (int, float)) and busy > 0 and not sampler_named:
        per_step = f", {busy / 1e6 / steps:.3f} ms a step" if steps else ""
        parts.append(f"the stack sampler {busy / 1e6:.1f} ms{per_step} (its ticks inside the steps under 1% of "
                     "them: left in)")
    if isinstance(cost, dict) and cost.get("paced"):
        parts.append("each step ended once the step before it had run, and the last once it had run too (JAX "
                     "dispatches ahead of its device: the steps are the device's pace, with one step of run-ahead "
                     "as untraced, the first holding only its dispatch and the last two steps' work)")
    if not parts:
        return ()
    return ("the capture's own time, owned by the profiler and left out of the steps judged: " + "; ".join(parts),)


def _ms(value) -> str:
    if not isinstance(value, (int, float)) or value < 0.05:
        return ""
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"
