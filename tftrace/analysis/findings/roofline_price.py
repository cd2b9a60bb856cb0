"""What the model's own arithmetic should cost: an owner's ops at the efficiency the trace shows is
reachable on this device, from the roofline (analysis/cost). Necessary arithmetic is never
projected away: an owner far below its roofline projects the time it would take at the best
efficiency the same kind of work reaches elsewhere in the run (or, where nothing else does better,
a stated fraction of the peak); an owner near it saves little, and its finding says its levers are
the arithmetic itself (precision, batch, model size)."""

from __future__ import annotations

from tftrace.analysis.findings import projection
from tftrace.analysis.findings.context import Context
from tftrace.model.owners import OwnerRow

# Where the run shows no owner doing better: the share of the roof a well-shaped GEMM or
# convolution reaches (compute-bound) and a streaming kernel reaches (memory-bound), as vendors'
# libraries commonly do on current GPUs and as oneDNN and Eigen do on CPUs.
STATED = {"compute": 0.7, "memory": 0.8}
REACH_MAX = 0.9  # no projection assumes more of the roof than this
NEAR = 0.8  # an owner at this share of the reachable efficiency runs near its roofline
PEER_TIME = 0.05  # a peer counts when its ops take at least this share of the owner's time


def priced(ctx: Context, kind: str, name: str, per_step_ps: float, what: str,
           share: float = 0.0) -> projection.Projection | None:
    """The owner's projection on the roofline (its ops' time `per_step_ps` at the reachable
    efficiency), or None where the trace has no roofline row for it (no FLOPs, or no peak);
    `share`: of the model's op time, the owner's."""
    rows = ctx.roofline.rows if ctx.roofline is not None else ()
    found = _rows_of(rows, kind, name, share)
    if not found:
        return None
    time = sum(r.time_ps for r in found)
    fraction = sum(r.roofline * r.time_ps for r in found) / time
    if ctx.on_cpu:
        # A CPU's peak is a large GEMM's, and its kernels' rates vary with each op's shapes and
        # library: another layer's rate in the run is no rate this one can be brought to. On six
        # real programs, pricing layers on peers' rates promised gains their fixes never made.
        return projection.unknown(ctx, f"{what}: at {fraction:.0%} of the CPU's roofline; what its ops should cost on a "
                                       "CPU is not in the trace (kernels' rates vary with each op's shapes): the fix "
                                       "changes the model, so time it (TraceCallback(confirm=True), or the changed "
                                       "model against this one)")
    bound = max(found, key=lambda r: r.time_ps).bound
    if bound not in STATED:  # launch-bound: many short runs far below both roofs, no rate to bring them to
        return projection.unknown(ctx, f"{what}: at {fraction:.0%} of the roofline in many short op runs, its time goes "
                                       "to launching them, not to arithmetic or memory: fewer, larger (fused) ops is the "
                                       "lever, which the trace cannot price")
    scope = found[0].scope
    peers = [r for r in rows if r.scope == scope and r.bound == bound and r not in found and r.roofline is not None
             and r.time_ps >= PEER_TIME * time]
    best = max(peers, key=lambda r: (r.roofline, r.name), default=None)
    stated = STATED[bound]
    if best is not None and best.roofline > max(fraction, stated):
        reach, where = min(best.roofline, REACH_MAX), f"{_name(best)} reaches {best.roofline:.0%} of it in this run"
    else:
        reach, where = stated, f"{stated:.0%} of it, what {'a GEMM or convolution' if bound == 'compute' else 'a streaming kernel'} reaches on this kind of device"
    if fraction >= NEAR * reach:
        saved = max(per_step_ps * (1 - fraction / reach), 0.0)
        how = (f"{what}: at {fraction:.0%} of the roofline ({bound}-bound; {where}): the arithmetic is what it "
               "costs, so only changing the arithmetic (precision, batch, model size) makes it faster")
    else:
        saved = per_step_ps * (1 - fraction / reach)
        how = (f"{what}: at {fraction:.0%} of the roofline ({bound}-bound); {where}: at that rate the ops take "
               f"{per_step_ps * fraction / reach / 1e9:.3g} ms per step, not {per_step_ps / 1e9:.3g}")
    return projection.scaled(ctx, saved * ctx.n, how)


def _rows_of(rows, kind: str, name: str, share: float) -> list:
    """An owner's roofline rows: a layer's own (both phases), else its owner rows by phase; for
    an owner holding most of the device's op time inside CUDA graphs (whose kernels name no
    instruction), the one module row that holds it."""
    if kind == "layer":
        layer = [r for r in rows if r.scope == "layer" and r.name == name and r.roofline is not None and r.bound]
        if layer:
            return layer
    owner = OwnerRow(kind, name).owner
    found = [r for r in rows if r.scope == "owner" and r.name == owner and r.roofline is not None and r.bound]
    modules = [r for r in rows if r.scope == "module" and r.roofline is not None and r.bound]
    if not found and len(modules) == 1 and share >= MOST:
        return modules
    return found


MOST = 0.5  # of the model's op time: an owner this large is most of the module it runs in


def _name(row) -> str:
    return f"{'layer ' if row.scope == 'layer' else ''}{row.name}" + (f" ({row.phase})" if row.phase else "")
