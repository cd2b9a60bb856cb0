"""Number formatting shared by the renderers: picoseconds to readable times, fractions to %."""

from __future__ import annotations

PART_LABELS = {"input": "input", "compute": "compute", "host_overhead": "host overhead", "idle": "idle"}


def ms(ps: int) -> str:
    """Picoseconds as milliseconds with sensible precision."""
    value = ps / 1e9
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def params(n: int) -> str:
    if n < 0:
        return ""
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)
