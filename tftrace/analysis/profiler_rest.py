"""The profiler's cost, measured: the traced turns of the loop less every priced source, set against
the same call's turns after the window, which TraceCallback timed untraced (the sidecar's
`untraced`). What the prices miss is the backend's "other recording", a source of its own; where
they exceed it on a run whose device paces the steps (host work beside a busy device is partly
hidden), every source is scaled down to it. TensorFlow and PyTorch are set against the untraced
turns' median; JAX against their mean (its hooks time the host's dispatch, which runs ahead)."""

from __future__ import annotations

import dataclasses

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.model.events import Trace
from tftrace.model.names import JIT_CALL

TF_REST = "TensorFlow's other recording"
TORCH_REST = "PyTorch's other recording"
JAX_REST = "JAX's other recording"
RESTS = (TF_REST, TORCH_REST, JAX_REST)
SCALED = "scaled to the measured"  # in a scaled source's `how`
# Untraced turns a measured remainder needs: a few turns' median is one slow turn's.
MIN_UNTRACED_TURNS = 20
# The most the recording is taken to cost a step, priced sources and measured rest together: this
# much an event the step recorded. The dearest work measured costs 1.0-1.7 us an event (a Keras fit
# step, a call that reads an iterator); a machine whose pace drifts between the window and the
# stretch after it reads as more.
PS_PER_EVENT_MAX = 2_000_000
_EAGER_EXECUTE = "EagerLocalExecute: "


def backend(trace: Trace) -> str:
    """Whose recording the trace is: tensorflow, torch, jax, or "" (the rest is then not measured)."""
    if trace.format == "kineto":
        return "torch"
    if trace.has_prefix(JIT_CALL) or trace.has_prefix("$trainer.py:") or \
            any(op.kind == "xla" for op in trace.ops.values()):
        return "jax"
    return "tensorflow" if trace.has_prefix(_EAGER_EXECUTE) else ""


def measured(trace: Trace, tl: Timeline, sources: list, room: np.ndarray, less, make) -> list:
    """`sources` set against the untraced turns: with the rest added, or scaled down where the device
    paces the run; unchanged without a sound untraced figure. `room`: what estimates may still take
    of each step; `less(tl, sources)`: the timeline less them; `make(owner, how, step_ps, share)`: a
    Source."""
    kind = backend(trace)
    untraced = _untraced(trace.sidecar, kind)
    if untraced is None or len(tl.dur) < 2:
        return sources
    judged = less(tl, sources)
    if kind == "jax":  # the window's time over its steps (paced: the last holds two steps' device work)
        traced = float(judged.dur.sum() + judged.idle[1:].sum()) / len(tl.dur)
    else:
        traced = float(np.median(judged.iterations[:-1]))  # the last turn has no gap after it
    want = traced - untraced
    n = len(tl.dur)
    paced = kind == "jax" or tl.device_busy is not None
    if want < 0 and paced and sources:
        return _scaled(sources, -want, tl.wall_ps / n)
    if want <= 0:
        return sources
    priced = sum((s.step_ps for s in sources if s.how.endswith("estimated")), np.zeros(n, np.int64))
    most = np.minimum(room, _starts_in_steps(trace.events["start_ps"], tl) * PS_PER_EVENT_MAX - priced)
    took = np.maximum(np.minimum(np.full(n, want), most), 0).astype(np.int64)
    if took.sum() < 0.01 * tl.wall_ps:
        return sources
    stat = "mean" if kind == "jax" else "median"
    owner = {"tensorflow": TF_REST, "torch": TORCH_REST, "jax": JAX_REST}[kind]
    how = (f"measured: the {stat} turn less the above, against the {stat} of the same call's "
           f"{_count(trace.sidecar, kind):,} turns after the window, untraced")
    return sources + [make(owner, how, took, float(took.sum()) / tl.wall_ps)]


def _scaled(sources: list, over: float, turn_ps: float) -> list:
    """The sources less `over` a turn, each by the same fraction: what the traced turns show the
    profiler cost, where the device's pace hid part of its host work."""
    total = sum(s.ps_per_step for s in sources)
    if total <= 0:
        return sources
    keep = max(1.0 - over / total, 0.0)
    return [dataclasses.replace(s, step_ps=np.round(s.step_ps * keep).astype(np.int64),
                                gap_ps=np.round(s.gap_ps * keep).astype(np.int64), share=s.share * keep,
                                how=f"{s.how}; {SCALED} {keep:.0%} of it: the traced turns less the untraced ones "
                                    "(host work beside the busy device is partly hidden)") for s in sources]


def _untraced(sidecar, kind: str) -> float | None:
    """The untraced turn, ps: the median of the turns after the window, or on JAX their mean; None
    without a sound figure."""
    got = sidecar.get("untraced") if isinstance(sidecar, dict) else None
    if not kind or not isinstance(got, dict):
        return None
    key, count = ("ms_per_step", "steps") if kind == "jax" else ("median_turn_ms", "turns")
    ms, turns = got.get(key), got.get(count)
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms <= 0:
        return None
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < MIN_UNTRACED_TURNS:
        return None
    return ms * 1e9


def _count(sidecar: dict, kind: str) -> int:
    return int(sidecar["untraced"]["steps" if kind == "jax" else "turns"])


def _starts_in_steps(start_ps: np.ndarray, tl: Timeline) -> np.ndarray:
    """How many of these start times fall in each step."""
    starts = np.sort(start_ps)
    return np.searchsorted(starts, tl.start + tl.dur) - np.searchsorted(starts, tl.start)
