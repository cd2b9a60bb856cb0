"""The profiler's own time inside each step, by source: JAX's Python tracer's calls (estimated,
analysis/tracer_cost.py), the op events XLA:CPU records for each thunk it runs and PyTorch's
profiler for each op (estimated per event), TensorFlow's for each eager op and tf.function call
(estimated per call), tftrace's own hooks while the window ran (timed by the capture, in its
sidecar), its stack sampler's ticks (timed by the sampler, in its samples file), and, set against
the steps TraceCallback timed untraced after the window, the rest of each backend's recording or
what a paced device hid of the above (analysis/profiler_rest.py). The steps the breakdown and
verdict judge are the traced ones less this."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.profiler_rest import TF_REST, measured  # noqa: F401 - TF_REST: the sources' names, here too
from tftrace.analysis.tracer_cost import MAX_OF_HOST, TracerCost, tracer_cost
from tftrace.model.events import Trace

# What recording one op event costs the op it times. XLA:CPU's thunk events: jitted chains of 100
# and 400 small matmuls on this project's 2-core x86 machines (JAX 0.10, CPU client) ran 0.26 us a
# thunk event slower with the profiler on (0.18-0.26 us in other runs); their calls' own events
# add nothing measurable. PyTorch's op events: Python loops of 1, 20 and 80 small aten ops (torch
# 2.14, CPU, one thread) ran 0.25, 0.19 and 0.25 us an event slower under torch.profiler, a small
# MLP's forward pass 0.20 us.
PS_PER_OP_EVENT = 250_000
# In a step that trains (autograd's backward ran in it) PyTorch's events cost more: the same MLP's
# whole Adam step 0.38 us an event, Keras-on-torch fits of 1 and 4 hidden layers 0.43 and 0.36.
PS_PER_TRAINING_EVENT = 380_000
_BACKWARD = "autograd::engine::evaluate_function"  # the name autograd gives each backward node it runs
# TensorFlow's events have no one price (0.1-1.5 us an event from one kind of work to another:
# benchmarks/bench_tf_profiler.py), but two kinds of call do, whole: an eager op (ten tf.add in a
# loop, 2.7-3.0 us an op in four runs; a run_eagerly fit's 192 ops a step, 3.4) and a tf.function
# call (a one-matmul function, 9.3-11.8 us a call in eight runs). Each runs one EagerLocalExecute.
# What else a graph step costs (its input's get_next, its ops on other threads, Keras' loop: 40-100
# us a fit step in all, of which these price ~16) no price per event explains; it is measured instead
# where the capture timed the same call's steps untraced after the window (analysis/profiler_rest),
# on every backend.
PS_PER_TF_EAGER_OP = 2_800_000
PS_PER_TF_FUNCTION_CALL = 10_000_000
_EAGER_EXECUTE = "EagerLocalExecute: "  # then the op's type, or the function's `__inference_<name>_<n>`
MIN_SHARE = 0.01  # a source under this share of step time is left in the steps, unnamed

TRACER = "JAX's Python tracer"
OP_EVENTS = "XLA:CPU's op events"
TORCH_EVENTS = "PyTorch's op events"
TF_CALLS = "TensorFlow's call events"
HOOKS = "tftrace's hooks"
SAMPLER = "tftrace's stack sampler"


@dataclass(frozen=True, eq=False)
class Source:
    owner: str  # the profiler's part that costs it (TRACER, OP_EVENTS, TORCH_EVENTS, TF_CALLS, HOOKS, SAMPLER)
    how: str  # how it was found: "13,077 calls a step at ~0.4 us each, estimated", "timed"
    step_ps: np.ndarray  # per step, of its host overhead
    gap_ps: np.ndarray  # per step, of the gap before it (the tracer's calls, the sampler's ticks)
    share: float  # of the steps with their gaps

    @property
    def ps_per_step(self) -> float:
        return float(self.step_ps.sum() + self.gap_ps.sum()) / max(len(self.step_ps), 1)


@dataclass(frozen=True, eq=False)
class ProfilerCost:
    sources: tuple[Source, ...]
    tracer: TracerCost | None  # the Python tracer's estimate, which the findings' projections use too
    share: float  # of the steps with their gaps

    @property
    def step_ps(self) -> np.ndarray:
        return sum(s.step_ps for s in self.sources)

    @property
    def gap_ps(self) -> np.ndarray:
        return sum(s.gap_ps for s in self.sources)

    @property
    def ps_per_step(self) -> float:
        return sum(s.ps_per_step for s in self.sources)


def profiler_cost(trace: Trace, tl: Timeline) -> ProfilerCost | None:
    """Each source's cost in each step, together never more than the step's host overhead (work
    that ran beside the step's ops did not lengthen it), the estimated ones no more than
    MAX_OF_HOST of it; None when none is worth naming."""
    n = len(tl.dur)
    if not n or tl.wall_ps <= 0:
        return None
    tracer = tracer_cost(trace, tl)
    sources = []
    room, idle = tl.overhead.astype(np.int64), tl.idle.astype(np.int64)
    estimated = (MAX_OF_HOST * tl.overhead).astype(np.int64)  # what estimates may take, together
    if tracer is not None:
        sources.append(Source(TRACER, f"{tracer.calls_per_step:,.0f} calls a step at ~{tracer.ps_per_call / 1e6:.1f} us "
                              "each, estimated", tracer.step_ps, tracer.gap_ps, tracer.share))
        room, estimated, idle = room - tracer.step_ps, estimated - tracer.step_ps, idle - tracer.gap_ps
    parts = (_op_events(trace, tl), _tf_calls(trace, tl), _hooks(trace, n), _sampler(trace, tl))
    for owner, how, want, gap in parts:
        if want is None:
            continue
        cap = estimated if owner in (OP_EVENTS, TORCH_EVENTS, TF_CALLS) else room
        took = np.maximum(np.minimum(want, cap), 0).astype(np.int64)
        gap = np.maximum(np.minimum(gap, idle), 0).astype(np.int64) if gap is not None else np.zeros(n, np.int64)
        if took.sum() + gap.sum() < MIN_SHARE * tl.wall_ps:
            continue
        room, estimated, idle = room - took, estimated - took, idle - gap
        sources.append(Source(owner, how, took, gap, float(took.sum() + gap.sum()) / tl.wall_ps))
    sources = measured(trace, tl, sources, estimated, lambda t, got: less_profiler(t, ProfilerCost(tuple(got), None, 0.0)),
                       lambda owner, how, took, share: Source(owner, how, took, np.zeros(n, np.int64), share))
    if not sources:
        return None
    cost = sum(s.ps_per_step for s in sources) * n
    return ProfilerCost(tuple(sources), tracer, cost / tl.wall_ps)


def _op_events(trace: Trace, tl: Timeline) -> tuple[str, str, np.ndarray | None, None]:
    """XLA:CPU's thunk events, or PyTorch's CPU op events, in each step at PS_PER_OP_EVENT each
    (PyTorch's at PS_PER_TRAINING_EVENT in a step that runs autograd's backward):
    a run with no device only (a GPU's or TPU's op events are recorded by the device's tracer, off
    the host's step; a host that records ops while its device runs others lengthens no step)."""
    if trace.devices:
        return OP_EVENTS, "", None, None
    for kind, owner in (("xla", OP_EVENTS), ("torch", TORCH_EVENTS)):
        codes = [c for c, op in trace.ops.items() if op.kind == kind]
        if codes:
            break
    else:
        return OP_EVENTS, "", None, None
    counts = _in_steps(trace, codes, tl)
    price = np.full(len(counts), PS_PER_OP_EVENT, np.int64)
    if owner == TORCH_EVENTS:
        backward = [c for c in codes if trace.names[c].startswith(_BACKWARD)]
        price[_in_steps(trace, backward, tl) > 0] = PS_PER_TRAINING_EVENT
    each = f"~{price.min() / 1e6:.2f}" + (f"-{price.max() / 1e6:.2f}" if price.max() > price.min() else "")
    how = f"{counts.mean():,.0f} events a step at {each} us each, estimated"
    return owner, how, counts * price, None


def _tf_calls(trace: Trace, tl: Timeline) -> tuple[str, str, np.ndarray | None, None]:
    """TensorFlow's eager ops and tf.function calls in each step, each at its own price: a run
    with no device only, as for the op events."""
    if trace.devices:
        return TF_CALLS, "", None, None
    calls = [c for c, name in enumerate(trace.names) if name.startswith(_EAGER_EXECUTE)]
    if not calls:
        return TF_CALLS, "", None, None
    functions = [c for c in calls if trace.names[c].startswith(_EAGER_EXECUTE + "__inference_")]
    fn = _in_steps(trace, functions, tl)
    ops = _in_steps(trace, calls, tl) - fn
    how = (f"{fn.mean():,.1f} tf.function calls and {ops.mean():,.1f} eager ops a step at "
           f"~{PS_PER_TF_FUNCTION_CALL / 1e6:.0f} and ~{PS_PER_TF_EAGER_OP / 1e6:.1f} us each, estimated")
    return TF_CALLS, how, fn * PS_PER_TF_FUNCTION_CALL + ops * PS_PER_TF_EAGER_OP, None


def _in_steps(trace: Trace, codes, tl: Timeline) -> np.ndarray:
    """How many events named one of `codes` begin in each step."""
    return _starts_in_steps(trace.events["start_ps"][np.flatnonzero(trace.named(codes))], tl)


def _starts_in_steps(start_ps: np.ndarray, tl: Timeline) -> np.ndarray:
    """How many of these start times fall in each step."""
    starts = np.sort(start_ps)
    return np.searchsorted(starts, tl.start + tl.dur) - np.searchsorted(starts, tl.start)


def _hooks(trace: Trace, n: int) -> tuple[str, str, np.ndarray | None, None]:
    """tftrace's own hooks inside the window's steps, as the capture timed them (its step markers,
    the marks around other callbacks' hooks): the same share of every step."""
    cost = trace.sidecar.get("capture_cost") if isinstance(trace.sidecar, dict) else None
    if not isinstance(cost, dict):
        return HOOKS, "", None, None
    total, steps = cost.get("hooks_ms"), cost.get("hooks_steps")
    if not isinstance(total, (int, float)) or not isinstance(steps, int) or steps <= 0 or total <= 0:
        return HOOKS, "", None, None
    per = total * 1e9 / steps
    return HOOKS, "timed by the capture", np.full(n, round(per), np.int64), None


def _sampler(trace: Trace, tl: Timeline) -> tuple[str, str, np.ndarray | None, np.ndarray | None]:
    """The stack sampler's ticks in each step and in the gap before it, at its own timed cost a
    tick (its thread holds the GIL while it reads every thread's stack)."""
    data = trace.python_samples
    if not isinstance(data, dict) or not trace.profile_start_ns:
        return SAMPLER, "", None, None
    busy, ticks = data.get("sampler_busy_ns"), np.asarray(data.get("ticks", ()), np.int64)
    if isinstance(busy, bool) or not isinstance(busy, (int, float)) or busy <= 0 or not len(ticks):
        return SAMPLER, "", None, None
    per = busy * 1000 / len(ticks)  # ps a tick
    at = np.sort((ticks - next(iter(trace.profile_start_ns.values()))) * 1000)
    begins, ends = np.searchsorted(at, tl.start), np.searchsorted(at, tl.start + tl.dur)
    before = np.searchsorted(at, tl.start - tl.idle)
    how = f"{len(ticks):,} ticks in the window at ~{per / 1e6:.0f} us each, timed by the sampler"
    return SAMPLER, how, ((ends - begins) * per).astype(np.int64), ((begins - before) * per).astype(np.int64)


def less_profiler(tl: Timeline, cost: ProfilerCost | None) -> Timeline:
    """The steps as the program runs them: each step and gap less the profiler's own time, taken
    from its host overhead and idle time (the merged intervals are the trace's, unchanged)."""
    if cost is None:
        return tl
    step, gap = cost.step_ps, cost.gap_ps
    return dataclasses.replace(tl, dur=tl.dur - step, overhead=tl.overhead - step, idle=tl.idle - gap)


def profiler_notes(cost: ProfilerCost, bound: str, traced_bound: str) -> tuple[str, ...]:
    """A note for each source with what it costs a step; where leaving them out changed the
    verdict, one with the traced steps' own (notes are short)."""
    notes = [f"{s.owner}: ~{s.ps_per_step / 1e9:.3f} ms ({s.share:.0%}) of each step ({s.how}), the profiler's, "
             "left out of the steps judged" for s in cost.sources]
    if traced_bound != bound:
        off = " (TraceCallback(python_tracer=False))" if cost.tracer is not None else ""
        notes.append(f"with it the traced steps read {traced_bound.replace('_', ' ')}-bound: capture with less of it{off} "
                     "to measure without it")
    return tuple(notes)
