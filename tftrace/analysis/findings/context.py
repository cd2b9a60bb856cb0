"""What every detector may look at: the timed host's trace, its steps and their parts, once."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.hosts import HostView
from tftrace.analysis.ops import OpEntry, OpStats
from tftrace.analysis.overhead import Overhead
from tftrace.analysis.pipeline_load import PipelineLoad
from tftrace.analysis.steps.found import Steps
from tftrace.analysis.profiler_cost import ProfilerCost
from tftrace.analysis.tracer_cost import TracerCost
from tftrace.model.events import Trace
from tftrace.model.memory import AllocatorRow
from tftrace.model.names import JIT_CALL
from tftrace.model.report import Breakdown, InputPipeline, PythonProfile
from tftrace.model.roofline import Roofline


# What TensorFlow records where a tf.function runs (eagerly called, or Keras' step function).
_TF_CALLS = ("EagerLocalExecute: __inference_", "__inference_", "FunctionRun")


@dataclass(frozen=True, eq=False, kw_only=True)  # built by keyword: fields are many, and added
class Context:
    """The run as the detectors see it. `loop` is who drives the steps: `keras` (fit or
    evaluate, Keras' own loop and callbacks), `predict` (predict or model calls, often in the
    user's loop), or `custom` (the user's own training loop)."""

    trace: Trace  # the timed host's events (the slowest host of several)
    steps: Steps
    tl: Timeline
    breakdown: Breakdown
    overhead: Overhead
    ops: OpStats
    table: list[OpEntry]
    pipeline: InputPipeline
    mode: str
    eager: bool
    loop: str
    python: PythonProfile | None = None
    hosts: tuple[HostView, ...] = ()  # every host's steps and parts, in a run of several (analysis.hosts)
    load: PipelineLoad | None = None  # the input pipeline's work during the steps, on the host
    paced: str = ""  # why the input pipeline sets the step time, "" if it does not (analysis.verdict.paced)
    bound: str = "unknown"  # the verdict's
    memory: tuple[AllocatorRow, ...] = ()  # every allocator of the run, largest peak first
    profiler: ProfilerCost | None = None  # the profiler's own time in each step, by source; None if small
    measured: dict = field(default_factory=dict)  # finding id -> the step with its fix over without, as confirm timed it
    roofline: Roofline | None = None  # every op's, owner's and layer's work against the device's roofs (analysis/cost)

    @property
    def n(self) -> int:
        return max(len(self.tl.dur), 1)

    @property
    def wall_ps(self) -> int:
        return self.tl.wall_ps

    @property
    def per_step_ps(self) -> float:
        """The mean step with the gap after it: what one iteration of the loop costs."""
        return self.tl.wall_ps / self.n

    def projected(self, removed_ps: float) -> int:
        """The mean step once `removed_ps` of wall time (over the window) is gone."""
        return round(max(self.tl.wall_ps - removed_ps, 0) / self.n)

    def inside(self, starts: np.ndarray) -> np.ndarray:
        """Per time: the index of the step it falls in, -1 outside every step."""
        s, e = np.asarray(self.steps.starts, np.int64), np.asarray(self.steps.ends, np.int64)
        i = np.searchsorted(s, starts, side="right") - 1
        ok = (i >= 0) & (starts < e[np.maximum(i, 0)]) if len(s) else np.zeros(len(starts), bool)
        return np.where(ok, i, -1)

    def rows_named(self, predicate) -> np.ndarray:
        """Rows of the events whose name satisfies `predicate(name)` (judged once per name)."""
        codes = [c for c, name in enumerate(self.trace.names) if predicate(name)]
        return np.flatnonzero(self.trace.named(codes)) if codes else np.zeros(0, np.int64)

    def once(self, make):
        """`make(self)`, made once for this Context: what several detectors share (the main
        thread's calls, calls.function_calls; the callback hooks, callbacks.hooks)."""
        made = self.__dict__.setdefault("_made", {})  # frozen: kept beside the fields, as cached_property does
        if make not in made:
            made[make] = make(self)
        return made[make]

    @cached_property
    def xla(self) -> bool:
        """XLA runs the step's ops (JAX, or a TensorFlow step compiled with `jit_compile=True`):
        their types are HLO's."""
        return self.trace.has_prefix(JIT_CALL) or any(op.kind == "xla" for op in self.trace.ops.values())

    @cached_property
    def jax(self) -> bool:
        """A JAX (or Keras-on-JAX) run: jitted calls on the host, or XLA ops run by the host with no
        TensorFlow function around them (a TF step compiled with XLA is TensorFlow's: `tf_xla`)."""
        return self.trace.has_prefix(JIT_CALL) or (self.xla and not self.tf_xla)

    @cached_property
    def tf_xla(self) -> bool:
        """A TensorFlow step compiled with XLA (`jit_compile=True`): XLA's ops run inside a
        tf.function's call."""
        return (not self.trace.has_prefix(JIT_CALL) and any(op.kind == "xla" for op in self.trace.ops.values())
                and any(self.trace.has_prefix(p) for p in _TF_CALLS))

    @property
    def on_cpu(self) -> bool:
        """No accelerator ran the step: the host's CPU did (XLA's runtime rarely pays for itself there)."""
        return self.tl.device_busy is None and not self.trace.devices

    @property
    def captured(self) -> bool:
        """tftrace captured the run (TraceCallback or tftrace.trace()): its sidecar exists, with
        the program's configuration and, where it sampled, its Python."""
        return bool(self.trace.sidecar)

    @cached_property
    def torch(self) -> bool:
        """A PyTorch run (a Kineto trace): fixes in torch's idiom, not Keras'."""
        return self.trace.format == "kineto"

    @property
    def tracer(self) -> TracerCost | None:
        """What JAX's Python tracer adds to each step; None without its events, or when small."""
        return self.profiler.tracer if self.profiler is not None else None

    @property
    def tracer_ps(self) -> int:
        """The tracer's estimated cost per step (with its gap), 0 without one worth a note."""
        return round(self.tracer.ps_per_step) if self.tracer is not None else 0

    @cached_property
    def owners(self):
        """Every microsecond of the steps given to an owner in the program (analysis/owners)."""
        from tftrace.analysis.owners.table import owner_table
        return owner_table(self)

    @cached_property
    def keras_jax(self) -> bool:
        """Keras 3 on JAX drove the steps (its trainer's Python is in the trace)."""
        return self.trace.has_prefix("$trainer.py:")

    @cached_property
    def main_thread(self) -> np.ndarray:
        return self.trace.on_lines(lambda ln: ln.role == "python")
