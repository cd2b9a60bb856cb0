"""The CI speed gate: fail when the candidate's steps are slower by more than a limit *and*
the difference is more than step-to-step noise (the diff's Mann-Whitney test)."""

from __future__ import annotations

import math

from tftrace.model.diff_report import Gate
from tftrace.model.errors import TftraceError


def parse_limit(text: str) -> float:
    """`10`, `10%` or `2.5` as a percentage; a clear error for anything else."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1] if raw.endswith("%") else raw)
    except ValueError:
        raise TftraceError(f"--fail-if-slower {text!r} is not a percentage (e.g. 5 or 5%)") from None
    if not math.isfinite(value) or value < 0:
        raise TftraceError(f"--fail-if-slower {text!r}: give a percentage of at least 0 (e.g. 5)")
    return value


def speed_gate(step, limit_pct: float) -> Gate:
    """Judge a StepTimeDelta against the limit: only a significant slowdown above it fails."""
    change = (f"median step time {step.baseline_ps / 1e9:.2f} ms -> {step.candidate_ps / 1e9:.2f} ms "
              f"({step.delta_pct:+.1f}%)")
    limit = f"the {limit_pct:g}% limit"
    if not step.significant:
        return Gate(limit_pct, False, f"passed: {change}, not a significant change ({step.test})")
    if step.delta_pct <= limit_pct:
        within = "faster" if step.delta_pct < 0 else f"slower but within {limit}"
        return Gate(limit_pct, False, f"passed: {change}, significant but {within} ({step.test})")
    return Gate(limit_pct, True, f"failed: {change}, slower by more than {limit} and significant ({step.test})")
