"""How much the input pipeline loads a host during its steps: how long its threads work, and the
CPU time it takes from the cores the model's ops run on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.breakdown import Timeline
from tftrace.analysis.intervals import covered, merge_rows
from tftrace.model.events import Trace

# tf.data stages that do work of their own (reading files), not only wait for the stage before.
SOURCE_STAGES = {"TFRecord", "TextLine", "FixedLengthRecord"}
# Python in the pipeline: its time is mostly waiting for the GIL, not using a core.
PYTHON_TYPES = {"PyFunc", "EagerPyFunc", "Generator"}
# A pipeline whose work takes less of the cores' time than this, and that no step waits for
# much, weighs nothing in the verdict: its load is not measured further.
NEGLIGIBLE = 0.05


@dataclass(frozen=True)
class PipelineLoad:
    """The input pipeline's work during a run's steps, on the host."""

    busy: float  # share of step time its threads work (covered once however many work); 0 if not measured
    cpu_ps: int  # its work outside Python (ops, reading files), summed over its threads
    model_ps: int  # the model's op work, summed over every compute thread
    cores: int  # cores the ops run on
    wall_ps: int  # the steps' wall time

    @property
    def core_share(self) -> float:
        """Share of the cores' time during the steps that the pipeline's work takes."""
        return self.cpu_ps / (self.cores * self.wall_ps) if self.wall_ps else 0.0

    @property
    def cpu_share(self) -> float:
        """The pipeline's share of the CPU work that pipeline and model do together."""
        both = self.cpu_ps + self.model_ps
        return self.cpu_ps / both if both else 0.0


def pipeline_load(trace: Trace, tl: Timeline, compute: np.ndarray, with_busy: bool) -> PipelineLoad | None:
    """The pipeline's load during the steps of `tl` (`compute`: the model's op events), or None
    when its threads do no work worth weighing; `with_busy` (where steps wait for it) also
    measures how long they work."""
    work = np.zeros(len(trace.names) + 1, bool)
    python = np.zeros(len(trace.names) + 1, bool)
    for code, op in trace.ops.items():
        work[code] = op.kind == "tf" or (op.kind == "data" and op.type in SOURCE_STAGES)
        python[code] = op.type in PYTHON_TYPES
    data_line = trace.on_lines_table(lambda ln: ln.role == "data")
    if not (work.any() and data_line.any()) or not len(tl.start):
        return None
    ev = trace.events
    lo, hi = tl.start[0], tl.start[-1] + tl.dur[-1] + tl.idle[-1]
    # The events come line by line (read/build.py): the data lines' rows are a few slices.
    lines = ev["line"]
    data_rows = [np.arange(*np.searchsorted(lines, [i, i + 1])) for i in np.flatnonzero(data_line[:-1])]
    rows = np.concatenate(data_rows) if data_rows else np.zeros(0, np.int64)
    rows = rows[work[ev["name"][rows]]]
    starts = ev["start_ps"][rows]
    in_steps = rows[(starts >= lo) & (starts < hi)]
    if not len(in_steps):
        return None
    cpu = int(ev["self_ps"][in_steps[~python[ev["name"][in_steps]]]].sum())
    n_cores = cores(trace)
    if not with_busy and cpu < NEGLIGIBLE * n_cores * tl.wall_ps:
        return None
    busy = 0.0
    if with_busy:
        mask = np.zeros(len(ev), bool)
        mask[rows] = True
        busy = tl.fraction(covered(*merge_rows(ev, mask), tl.start, tl.start + tl.dur))
    model_rows = np.flatnonzero(compute)
    model_starts = ev["start_ps"][model_rows]
    model = int(ev["self_ps"][model_rows[(model_starts >= lo) & (model_starts < hi)]].sum())
    return PipelineLoad(busy, cpu, model, n_cores, tl.wall_ps)


def cores(trace: Trace) -> int:
    """Cores the ops run on: TensorFlow's intra-op (Eigen) threads, one per core by default."""
    names = {ln.name for ln in trace.lines if ln.role == "compute" and not ln.on_device}
    eigen = [n for n in names if "Eigen" in n]
    return max(len(eigen) or len(names), 1)
