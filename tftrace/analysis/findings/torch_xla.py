"""PyTorch/XLA's own causes, from its runtime's events on the host (analysis/lazy_tensors): the step's
graph compiled again (`XLAGraphExecutor::Compile` after the first), the graph cut inside the step
where a value is read (`SyncTensorsGraph` outside `xm.mark_step()`, the host then waiting in
`TransferFromServer`), and the host retracing the step while the device waits between runs."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.lazy_tensors import runtime

MIN_GRAPHS = 0.5  # cut graphs per step from which reading values inside the step is a pattern
MIN_TRACING = 0.10  # the device's wait for the host worth naming the host's retracing


def detect(ctx: Context) -> list[Finding]:
    if not ctx.torch_xla or not len(ctx.tl.dur) or ctx.steps.kind == "window":
        return []
    rt = runtime(ctx.trace)
    ev = ctx.trace.events
    lo, hi = int(ctx.tl.start[0]), int(ctx.tl.start[-1] + ctx.tl.dur[-1])
    inside = lambda rows: rows[(ev["start_ps"][rows] >= lo) & (ev["start_ps"][rows] < hi)]  # noqa: E731
    found = []
    compiles = inside(rt.compiles)
    taken = 0.0
    if len(compiles) >= 2 or (len(compiles) == 1 and len(rt.compiles) > 1):
        again = compiles[1:] if rt.compiles[0] == compiles[0] else compiles  # the first compile: the warm-up
        lost = float(ev["dur_ps"][again].sum())
        share = min(lost / ctx.wall_ps, 1.0)
        taken += share
        facts = (fact("graph compiles in the window", len(compiles)), ms_fact("per compile after the first",
                                                                              lost / max(len(again), 1)),
                 pct_fact("share of wall time", share))
        found.append(Finding("recompilation", f"Recompilation: PyTorch/XLA compiled the step's graph {len(again)} "
                             f"more time{'s' if len(again) > 1 else ''} in {ctx.n} steps", share, facts,
                             fix_for("recompilation", "torch_xla"), ctx.projected(lost), "idle"))
    syncs = inside(rt.syncs)
    per_step = len(syncs) / ctx.n
    if per_step >= MIN_GRAPHS:
        waits = inside(rt.from_device)
        lost = float(ev["dur_ps"][waits].sum()) + float(ev["dur_ps"][syncs].sum())
        share = min(lost / ctx.wall_ps, 1.0)
        taken += share
        markers = len(inside(rt.markers))
        facts = (fact("graphs cut inside a step (SyncTensorsGraph outside xm.mark_step)", round(per_step, 2), "a step"),
                 fact("xm.mark_step() calls a step", round(markers / ctx.n, 2)),
                 ms_fact("host waiting for values read back (TransferFromServer) a step",
                         float(ev["dur_ps"][waits].sum()) / ctx.n), pct_fact("share of wall time", share))
        found.append(Finding("graph_break", "Graph breaks: a value read inside the step (`.item()`, `.cpu()`, print) "
                             "cuts PyTorch/XLA's graph and the host waits for the device", share, facts,
                             fix_for("graph_break", "torch_xla"), ctx.projected(lost), "idle"))
    rest = ctx.breakdown.idle - taken
    if rest >= MIN_TRACING:
        per_gap = rest * ctx.wall_ps / ctx.n
        facts = (ms_fact("device idle between runs of the step's graph, per step", per_gap),
                 pct_fact("share of wall time", rest), fact("the host traces the step's ops into a graph there"))
        found.append(Finding("lazy_tracing", "The device waits while the host retraces the step's graph (PyTorch/XLA's "
                             "lazy tensors, op by op, every step)", rest, facts, fix_for("lazy_tracing", "torch_xla"),
                             ctx.projected(rest * ctx.wall_ps), "idle"))
    to_device = inside(rt.to_device)
    sent = float(ev["dur_ps"][to_device].sum())
    if len(to_device) and sent / ctx.wall_ps >= 0.03:
        facts = (ms_fact("host-to-device transfers a step (TransferToServer)", sent / ctx.n),
                 pct_fact("share of wall time", sent / ctx.wall_ps))
        found.append(Finding("input", "The host copies each batch to the device inside the step", sent / ctx.wall_ps,
                             facts, fix_for("h2d", "torch_xla"), ctx.projected(sent), "input"))
    return found
