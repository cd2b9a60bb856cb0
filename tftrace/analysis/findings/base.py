"""What a detector returns: a finding with its cause, structured evidence, fix and projection."""

from __future__ import annotations

from tftrace.model.finding import Fact, Finding  # noqa: F401 - the detectors' names for them

MIN_SHARE = 0.03  # below 3% of step time nothing is worth a user's attention (XProf's "all others" bar)


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


FLOOR_QUANTILE = 0.25  # of op runs, by time: what the cheapest of them cost is what any run costs


def run_floor(entries) -> float:
    """What an op run costs whatever it computes: the time below which the cheapest quarter of
    `entries`' runs (op table entries: self_ps over count runs) fall; 0 with no runs."""
    runs = sorted((e.self_ps / e.count, e.count) for e in entries if e.count)
    total, seen = sum(c for _t, c in runs), 0
    for each, count in runs:
        seen += count
        if seen >= FLOOR_QUANTILE * total:
            return float(each)
    return 0.0
