"""The traced steps against the same call's steps after the window, which TraceCallback timed
with no profiler running (the sidecar's `untraced`): how much the capture slowed what it recorded."""

from __future__ import annotations

from dataclasses import dataclass

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.profiler_cost import ProfilerCost, less_profiler
from tftrace.analysis.profiler_rest import RESTS, SCALED

SLOWED = 1.1  # the steps judged this much slower than the untraced ones: say the rest is the profiler's too


@dataclass(frozen=True)
class UntracedPace:
    ps: int  # the untraced step, its gap included (a turn of the loop)
    steps: int  # how many steps that is the mean of
    traced_ps: int  # the traced steps' mean with the gap after each
    judged_ps: int  # the same less the profiler's time: the steps the breakdown judges
    measured: bool  # the profiler's time was set against these steps: a measured rest, or scaled down


def untraced_pace(sidecar: dict, tl: Timeline, cost: ProfilerCost | None) -> UntracedPace | None:
    """None where the capture timed no untraced steps (a stock trace, a window to the call's end)."""
    got = sidecar.get("untraced") if isinstance(sidecar, dict) else None
    if not isinstance(got, dict) or len(tl.dur) < 2:
        return None
    ms, steps = got.get("ms_per_step"), got.get("steps")
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms <= 0 or not isinstance(steps, int) or steps <= 0:
        return None
    measured = cost is not None and any(s.owner in RESTS or SCALED in s.how for s in cost.sources)
    return UntracedPace(round(ms * 1e9), steps, _per_turn(tl), _per_turn(less_profiler(tl, cost)), measured)


def _per_turn(tl: Timeline) -> int:
    # The steps with the gaps between them, over their count, as the untraced clock times a turn of
    # the loop (paced on JAX, the last step holds two steps' device work and the first a dispatch).
    return int((tl.dur.sum() + tl.idle[1:].sum()) / len(tl.dur))


def untraced_note(pace: UntracedPace | None) -> tuple[str, ...]:
    if pace is None:
        return ()
    traced, judged = pace.traced_ps / pace.ps, pace.judged_ps / pace.ps
    note = (f"untraced, the same call's {pace.steps} steps after the window took {pace.ps / 1e9:.3f} ms each "
            f"(TraceCallback timed them, no profiler running); the traced ones {pace.traced_ps / 1e9:.3f} ms with "
            f"their gaps ({traced:.2f}x)")
    if pace.judged_ps != pace.traced_ps:
        how = "estimated, and measured against these steps' median" if pace.measured else "estimated"
        note += f", {pace.judged_ps / 1e9:.3f} ms less the profiler's time ({how}: {judged:.2f}x)"
    if judged >= SLOWED:
        note += ("; the steps judged still hold the rest: the profiler's recording that no estimate "
                 "here prices, or this machine's pace changing between the two")
    return (note,)
