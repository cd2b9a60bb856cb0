"""One run analysed piece by piece, each piece on first use and then kept: steps, the per-step
timeline, ops, layers, categories, Python, memory, the findings and the report, for exploring in
a notebook (as Holistic Trace Analysis offers its `get_*` calls). `tftrace.analyze()` stays the
one-call path; the report here is the same one it builds."""

from __future__ import annotations

from functools import cached_property

from tftrace.analysis.memory.allocators import allocators
from tftrace.analysis.breakdown import Timeline, event_classes, timeline
from tftrace.analysis.eager_layers import eager_layers
from tftrace.analysis.ops import OpEntry, OpStats, op_stats, op_table
from tftrace.analysis.python import python_profile
from tftrace.analysis.run import analyze_trace, steps_with_device_work
from tftrace.analysis.steps.found import Steps
from tftrace.analysis.profiler_cost import ProfilerCost, less_profiler, profiler_cost
from tftrace.model.errors import TftraceError
from tftrace.model.events import Trace
from tftrace.model.owners import OwnerRow
from tftrace.model.report import Bottleneck, Breakdown, PythonProfile, RunReport

_PARTS = ("input", "compute", "overhead", "idle")


class RunAnalysis:
    """The analyses of one host's events (the run's only host, or `host`), computed when first
    asked for. `report` is the whole run's report, every host included."""

    def __init__(self, trace: Trace, name: str = "", host: str | None = None):
        if host is not None and host not in trace.hosts:
            raise TftraceError(f"no host {host!r} in this run; its hosts: {', '.join(trace.hosts) or 'none'}")
        self.run_trace = trace
        self.name = name or trace.path
        self.host = host or (trace.hosts[0] if trace.hosts else "")

    @cached_property
    def trace(self) -> Trace:
        """This host's events (the event table: `trace.events.to_pandas()`)."""
        return self.run_trace if len(self.run_trace.hosts) <= 1 else self.run_trace.of_host(self.host)

    @cached_property
    def _steps_and_work(self):
        return steps_with_device_work(self.trace)

    @cached_property
    def steps(self) -> Steps:
        """Step windows (ps) and how they were found."""
        return self._steps_and_work[0]

    @cached_property
    def timeline(self) -> Timeline:
        """Per step: its start, duration and parts (ps), and the gap after it."""
        return timeline(self.trace, self.steps, event_classes(self.trace), self._steps_and_work[1])

    @cached_property
    def profiler(self) -> ProfilerCost | None:
        """The profiler's own time in each step and gap, by source; None when small."""
        return profiler_cost(self.trace, self.timeline)

    @cached_property
    def breakdown(self) -> Breakdown:
        """The parts' shares of the steps, less the profiler's own time (as the report's)."""
        tl = less_profiler(self.timeline, self.profiler)
        return Breakdown(*(round(tl.fraction(getattr(tl, p)), 6) for p in _PARTS))

    @cached_property
    def op_table(self) -> list[OpEntry]:
        """Every op (by name and side) with its category, layer, phase, count and self time."""
        return op_table(self.trace, *eager_layers(self.trace, self.steps.starts))

    @cached_property
    def ops(self) -> OpStats:
        """Ops, layers and categories ranked by self time, all of them."""
        return op_stats(self.trace, self.op_table)

    @property
    def layers(self):
        return self.ops.layers

    @property
    def categories(self):
        return self.ops.categories

    @cached_property
    def python(self) -> PythonProfile:
        """Python time per function, from stack samples or the Python tracer's events."""
        tl = self.timeline
        return python_profile(self.trace, tl.start, tl.start + tl.dur)

    @cached_property
    def memory(self):
        """Each allocator's peak, what holds it, and its per-step peaks."""
        steps = self.steps
        real = steps.kind not in ("window", "none")
        spans = (steps.starts, steps.ends, steps.numbers) if real else ((), (), ())
        return allocators(self.trace, *spans, {e.name: e.layer for e in self.op_table if e.layer})

    @cached_property
    def report(self) -> RunReport:
        """The run's report, as `tftrace.analyze` makes it (every host, all ops listed)."""
        return analyze_trace(self.run_trace, self.name, top=None)

    @property
    def findings(self) -> tuple[Bottleneck, ...]:
        return self.report.bottlenecks

    @property
    def owners(self) -> tuple[OwnerRow, ...]:
        """Who in the program holds each part of a step (the owners table), largest first."""
        return self.report.owners

    def owner_frame(self):
        """The owners table as a pandas DataFrame (ms per step), one row per owner."""
        import pandas as pd
        return pd.DataFrame([{"owner": r.owner, "kind": r.kind, "phase": r.phase, "ms_per_step": r.per_step_ps / 1e9,
                              "share": r.share, "part": r.part, "runs_per_step": r.runs, "what": r.what}
                             for r in self.owners])

    def step_frame(self):
        """The per-step timeline as a pandas DataFrame (ms), one row per step."""
        import pandas as pd
        tl = self.timeline
        columns = {"step": list(self.steps.numbers), "start_ms": tl.start / 1e9, "duration_ms": tl.dur / 1e9}
        columns.update({f"{p}_ms": getattr(tl, p) / 1e9 for p in _PARTS})
        return pd.DataFrame(columns)
