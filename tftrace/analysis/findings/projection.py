"""How a finding's projection is made: the step after its fix, what that figure rests on (the
fix deletes the work, overlaps it, brings it to a reachable efficiency, removes op runs or calls
at their measured cost, or the trace cannot say), how it was made, and the step it cannot go
below. Every detector makes its projection here, so each says the same things the same way."""

from __future__ import annotations

from dataclasses import dataclass

from tftrace.analysis.findings.context import Context


@dataclass(frozen=True)
class Projection:
    step_ps: int  # the mean step (with its gap) after the fix
    basis: str  # report.PROJECTION_BASES
    how: str  # how the figure was made; for "none", why the trace cannot say and what measures it
    floor_ps: int = 0  # the step no such fix goes below

    def fields(self) -> dict:
        """The Finding keywords this projection fills."""
        return {"basis": self.basis, "how": self.how, "floor_ps": self.floor_ps}


def _ms(ps: float) -> str:
    return f"{ps / 1e9:.3g} ms"


def removed(ctx: Context, removed_ps: float, what: str, floor_ps: float = 0.0) -> Projection:
    """The fix deletes `removed_ps` of wall time over the window (`what` it is): the step less it,
    never below `floor_ps` (what the step keeps whatever the fix: its other work)."""
    step = max(ctx.projected(removed_ps), round(floor_ps))
    return Projection(step, "removed", f"the step less {what} ({_ms(removed_ps / ctx.n)} per step)", round(floor_ps))


def dispatch(ctx: Context, removed_ps: float, what: str, floor_ps: float = 0.0) -> Projection:
    """The fix removes op runs or calls: `removed_ps` (over the window) is their count times what
    each costs in this trace, `what` says which."""
    step = max(ctx.projected(removed_ps), round(floor_ps))
    return Projection(step, "dispatch", f"the step less {what} ({_ms(removed_ps / ctx.n)} per step)", round(floor_ps))


def kept(ctx: Context, kept_ps: float, basis: str, what: str) -> Projection:
    """The fix leaves the step only `kept_ps` per step (`what` that is): a step made of what it keeps."""
    step = round(min(kept_ps, ctx.per_step_ps))
    return Projection(step, basis, f"the step keeps only {what} ({_ms(kept_ps)} per step)", step)


def overlap(ctx: Context, side_ps: float, rest_ps: float, side: str, rest: str) -> Projection:
    """The fix runs `side` (`side_ps` per step) beside `rest` (`rest_ps` per step): the step
    becomes the longer of the two, which is also its floor."""
    longer = max(side_ps, rest_ps)
    step = round(min(longer, ctx.per_step_ps))
    which = side if side_ps >= rest_ps else rest
    how = (f"the longer of {side} ({_ms(side_ps)} per step) and {rest} ({_ms(rest_ps)}), run side by side: "
           f"{which} sets the step")
    return Projection(step, "overlap", how, step)


def scaled(ctx: Context, saved_ps: float, how: str) -> Projection:
    """The fix brings work to a stated efficiency (a precision's peak, the rate the same kind of op
    reaches elsewhere): `saved_ps` over the window, `how` states the rate and where it comes from."""
    return Projection(ctx.projected(saved_ps), "roofline", how)


def unknown(ctx: Context, why: str) -> Projection:
    """The trace cannot say what the fix saves: the step as it is, and why (with what measures it)."""
    return Projection(round(ctx.per_step_ps), "none", why)
