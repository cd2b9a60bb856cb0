"""A straggler: in a run of several hosts, the one the others wait for (analysis/hosts.py
measures it), with the part of its step that makes it slow."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.hosts import straggler

_LABELS = {"input": "waiting for input", "compute": "computing", "collectives": "waiting in collectives",
           "host_overhead": "host overhead (Python, dispatch, launches)", "idle": "time between steps"}


def detect(ctx: Context) -> list[Finding]:
    s = straggler(list(ctx.hosts))
    if s is None:
        return []
    share = (s.work_ps - s.others_ps) / s.step_ps
    reason = "input_torch" if ctx.torch and s.reason == "input" else s.reason
    p = projection.removed(ctx, share * ctx.wall_ps, f"host {s.host}'s extra time over the others'")
    return [Finding("straggler", _title(s), share, (), fix_for("straggler", reason),
                    p.step_ps, evidence=_evidence(s), subject=s.host, **p.fields())]


def _title(s) -> str:
    ratio = s.work_ps / s.others_ps
    more = f"{ratio:.1f}x the others' time" if ratio >= 1.5 else f"{ratio - 1:.0%} more time"
    if s.synced:
        return f"Straggler: host {s.host} holds the others back, {more} per step before they sync ({_LABELS[s.reason]})"
    return f"Straggler: host {s.host} is {ratio - 1:.0%} slower per step ({_LABELS[s.reason]})"


def _evidence(s) -> str:
    """One line comparing it with the others: a comparison its facts alone would not read as."""
    aligned = f" over the {s.common_steps} steps all hosts measured" if s.common_steps else ""
    what = "works" if s.synced else "takes"
    out = (f"{s.host} {what} {s.work_ps / 1e9:.2f} ms per step{' outside collectives' if s.synced else ''} against "
           f"{s.others_ps / 1e9:.2f} ms on the other hosts (median of {s.others}){aligned}")
    out += "".join(f"; it spends {d / 1e9:.2f} ms more per step {_LABELS[p]} ({s.mine[p] / 1e9:.2f} vs "
                   f"{s.theirs[p] / 1e9:.2f} ms)" for d, p in s.excess[:2] if d > 0)
    if s.synced:
        out += f"; the others wait {s.waiting_ps / 1e9:.2f} ms more per step in collectives, for it"
    return out
