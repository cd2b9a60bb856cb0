"""The device work a PyTorch trace's GPU figures count, as HTA's temporal breakdown counts it: work
launched before the last `ProfilerStep` began (the last iteration is left out: torch.profiler's
schedule often cuts it short), each device's span from its first such kernel's start to its last
one's end."""

from __future__ import annotations

import re
import weakref

import numpy as np

from tftrace.model.events import Trace

_STEP = re.compile(r"ProfilerStep#\d+\Z")
_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def counted(trace: Trace) -> np.ndarray | None:
    """Per event: does a device figure count it? None where every event counts: not a PyTorch
    trace, or fewer than two ProfilerSteps (HTA then filters nothing either)."""
    if trace.format != "kineto":
        return None
    if trace not in _MADE:
        _MADE[trace] = _counted(trace)
    return _MADE[trace]


def _counted(trace: Trace) -> np.ndarray | None:
    ev = trace.events
    host = trace.on_lines(lambda ln: not ln.on_device)
    codes = [c for c, n in enumerate(trace.names) if _STEP.match(n)]
    steps = np.flatnonzero(trace.named(codes) & host) if codes else np.zeros(0, np.int64)
    if len(steps) < 2:
        return None
    last = int(ev["start_ps"][steps].max())
    st = trace.stats
    rows, corr = st["event"], st["correlation"]
    has = corr >= 0
    rows, corr = rows[has], corr[has]
    on_device = ~host[rows]
    early = corr[~on_device & (ev["start_ps"][rows] < last)]
    keep = np.ones(len(ev), bool)
    keep[trace.on_lines(lambda ln: ln.role == "device_ops")] = False  # device work counts only if launched in time
    dev_rows = rows[on_device]
    keep[dev_rows[np.isin(corr[on_device], early)]] = True
    return keep


def window_note(trace: Trace) -> tuple[str, ...]:
    """Which definition the devices' busy and idle figures use, where it is HTA's."""
    keep = counted(trace)
    if keep is None:
        return ()
    device = trace.on_lines(lambda ln: ln.role == "device_ops")
    if not device.any():
        return ()
    left = int((device & ~keep).sum())
    return (f"GPU busy and idle (devices table) as HTA's temporal breakdown measures them: over the device work "
            f"launched before the last ProfilerStep began ({left} device events of the last iteration, or launched "
            f"by no host event, left out), from the first such kernel's start to the last one's end",)
