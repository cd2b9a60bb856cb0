"""What a detector returns: a finding with its cause, structured evidence, fix and projection."""

from __future__ import annotations

from dataclasses import dataclass

from tftrace.report import Fact

MIN_SHARE = 0.03  # below 3% of step time nothing is worth a user's attention (XProf's "all others" bar)


@dataclass(frozen=True)
class Finding:
    """One cause of lost time. `share` is of wall time (steps and the gaps between them);
    `part` is the breakdown part it explains (input, compute, host_overhead, idle, or "" for
    views across parts such as a layer); `step_if_removed_ps` is the mean step (with its gap)
    once the cause's own fix is applied, as the detector that knows that fix models it."""

    kind: str
    title: str
    share: float
    facts: tuple[Fact, ...]
    fix: str
    step_if_removed_ps: int
    part: str = ""


def ms(ps: float) -> str:
    return f"{ps / 1e9:.2f} ms"


def fact(label: str, value=None, unit: str = "") -> Fact:
    """An evidence item; a float value is rounded to 4 decimals."""
    if isinstance(value, float):
        value = round(value, 4)
    return Fact(label, value, unit)


def ms_fact(label: str, ps: float) -> Fact:
    return Fact(label, round(ps / 1e9, 3), "ms")


def pct_fact(label: str, fraction: float) -> Fact:
    return Fact(label, round(fraction * 100, 1), "%")


def evidence_text(facts: tuple[Fact, ...]) -> str:
    """The evidence as one line: items with a value read `label: value unit`; empty items are
    never written."""
    return "; ".join(render_fact(f) for f in facts if f.label)


def render_fact(f: Fact) -> str:
    if f.value is None or f.value == "":
        return f.label
    value = f"{f.value:.2f}" if isinstance(f.value, float) and f.unit == "ms" else \
        (f"{f.value:g}" if isinstance(f.value, float) else str(f.value))
    unit = "%" if f.unit == "%" else (f" {f.unit}" if f.unit else "")
    return f"{f.label}: {value}{unit}"
