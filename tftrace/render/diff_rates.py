"""A diff's FLOP rates as table cells, for the text, Markdown and HTML diffs alike."""

from __future__ import annotations

from tftrace.render.fmt import pct, si

RATE_COLUMNS = ("what", "phase", "baseline FLOP/s", "candidate FLOP/s", "ratio", "baseline share", "candidate share")


def rate_cells(r) -> tuple[str, ...]:
    """A FLOP-rate row's cells; the step's shares are MFU, the others' of their roofline."""
    name = "step (MFU)" if r.scope == "step" else f"{r.scope} {r.name}"
    rate = lambda v: "-" if v is None else si(v, "FLOP/s")  # noqa: E731
    share = lambda v: "-" if v is None else pct(v)  # noqa: E731
    return (name, r.phase, rate(r.baseline_flops_per_s), rate(r.candidate_flops_per_s),
            "-" if r.ratio is None else f"{r.ratio:.2f}x", share(r.baseline_share), share(r.candidate_share))
