"""What bounds a set of ops, in its roofline row: the work (FLOPs, bytes) it did in its time,
its arithmetic intensity and achieved rates, the share of the roofline its time reaches."""

from __future__ import annotations

from tftrace.analysis.cost.device_peaks import Peak
from tftrace.model.roofline import RooflineRow

LAUNCH_RUN_PS = 10_000_000  # runs averaging under 10 us...
LAUNCH_SHARE = 0.10  # ...at under 10% of their roofline: the launches hold the time, not the work
RULE = ("compute or memory: whichever takes longer, its FLOPs at the peak FLOP/s of its precision or its bytes at "
        "the peak bandwidth (TraceLens' rule; with these two roofs XProf's 'most used resource' names the same); "
        "launch: under 10% of its roofline with runs averaging under 10 us, where starting each short kernel, not "
        "its work, holds the time")


def roofline_row(scope: str, name: str, phase: str, time_ps: int, runs: int, flops: float, nbytes: float,
                 precision: str, peak: Peak | None) -> RooflineRow:
    seconds = time_ps / 1e12
    intensity = flops / nbytes if nbytes > 0 else None
    achieved = flops / seconds if seconds > 0 else None
    moved = nbytes / seconds if seconds > 0 else None
    roof = (peak.at(precision) or peak.flops_per_s) if peak is not None else None
    bandwidth = peak.bytes_per_s if peak is not None else None
    share, bound = None, ""
    compute = flops / roof if roof else None
    memory = nbytes / bandwidth if bandwidth else None
    if seconds > 0 and (compute is not None or memory is not None):
        at_roof = max(compute or 0.0, memory or 0.0)
        share = round(at_roof / seconds, 6)
        if compute is not None and memory is not None:
            bound = "compute" if compute >= memory else "memory"
            if share < LAUNCH_SHARE and runs and time_ps / runs < LAUNCH_RUN_PS:
                bound = "launch"
    return RooflineRow(scope, name, phase, int(time_ps), int(runs), float(flops), float(nbytes),
                       _round(intensity), _round(achieved), _round(moved), precision, roof, share, bound)


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")
