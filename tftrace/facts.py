"""Fact: one evidence item of a finding (a label and the number or name it states)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One evidence item of a bottleneck: a label, and the number (or name) it states."""

    label: str
    value: float | int | str | None = None
    unit: str = ""  # ms, %, or a count's noun
