"""Two runs' findings matched by id (resolved, new, persisting), and the diff's verdict in a word."""

from __future__ import annotations

from tftrace.model.diff_report import DiffVerdict, FindingDelta, StepTimeDelta
from tftrace.model.report import Bottleneck, RunReport

_ORDER = {"resolved": 0, "persisting": 1, "new": 2}


def finding_deltas(base: RunReport, cand: RunReport) -> tuple[FindingDelta, ...]:
    """Every finding of either run, by id: the baseline's in its rank order, then the candidate's new ones.
    Nothing where a side has findings without ids (a report saved before they had them)."""
    if not _has_ids(base) or not _has_ids(cand):
        return ()
    b = {f.id: f for f in base.bottlenecks}
    c = {f.id: f for f in cand.bottlenecks}
    out = []
    for fid in [*b, *(i for i in c if i not in b)]:
        x, y = b.get(fid), c.get(fid)
        status = "persisting" if x and y else "resolved" if x else "new"
        shown = y or x
        out.append(FindingDelta(fid, shown.kind, shown.title, status, x.rank if x else 0, y.rank if y else 0,
                                x.share if x else 0.0, y.share if y else 0.0, _saves(x), _saves(y)))
    out.sort(key=lambda d: (_ORDER[d.status], d.candidate_rank if d.status == "new" else d.baseline_rank, d.id))
    return tuple(out)


def verdict(step: StepTimeDelta, findings: tuple[FindingDelta, ...], base: RunReport, cand: RunReport) -> DiffVerdict:
    if step.significant:
        speed = "faster" if step.delta_pct < 0 else "slower"
    elif step.baseline_steps < 5 or step.candidate_steps < 5:
        speed = "unknown"
    else:
        speed = "same"
    counts = {s: sum(1 for f in findings if f.status == s) for s in _ORDER}
    matched = "matched" if _has_ids(base) and _has_ids(cand) else "no ids"
    head = {"faster": f"faster ({step.delta_pct:+.1f}%, significant)", "slower": f"slower ({step.delta_pct:+.1f}%, significant)",
            "same": f"no significant change ({step.delta_pct:+.1f}%)",
            "unknown": f"too few steps to test ({step.delta_pct:+.1f}%)"}[speed]
    if matched == "matched":
        resolved = [f.id for f in findings if f.status == "resolved"]
        new = [f.id for f in findings if f.status == "new"]
        tail = (f"; {counts['resolved']} finding(s) resolved" + (f" ({', '.join(resolved[:3])})" if resolved else "")
                + f", {counts['new']} new" + (f" ({', '.join(new[:3])})" if new else "")
                + f", {counts['persisting']} persisting")
    else:
        tail = "; findings not matched: a side was saved before findings had ids"
    return DiffVerdict(speed, counts["resolved"], counts["new"], counts["persisting"], matched, head + tail)


def _has_ids(run: RunReport) -> bool:
    return all(f.id for f in run.bottlenecks)


def _saves(f: Bottleneck | None) -> int:
    return max(f.step_ps - f.step_if_removed_ps, 0) if f else 0
