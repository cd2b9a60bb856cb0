"""The report: frozen parts per run, and its JSON form (to_dict / from_dict round-trip)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass

from tftrace.model.display import HtmlDisplay
from tftrace.model.errors import ReportError
from tftrace.model.finding import Fact
from tftrace.model.memory import Memory
from tftrace.model.owners import OwnerRow
from tftrace.model.roofline import Roofline
from tftrace.model.step_view import StepView
from tftrace.model.tables import TABLES

# The JSON contract's version (docs/json.md): it rises whenever keys are added, and a report keeps
# every key of the versions before it, so any version up to this one reads back (from_dict), the
# keys it lacks taking their defaults. 2: findings' id, projection basis and how, part, floor and
# measured step; ops' FLOPs and bytes, layers' FLOPs per step, devices' peaks, a run's FLOPs per step
# and MFU; a diff's findings and verdict.
SCHEMA_VERSION = 2
DEFAULT_TOP = 15  # ops, layers, categories and Python rows a report lists unless asked for more
SIDES = ("all", "host", "device")  # which ops the op table lists
BOUNDS = ("input", "compute", "host_overhead", "idle", "unknown")
PARTS = ("input", "compute", "host_overhead", "idle")
# What a bottleneck's projection rests on: the fix deletes the work (removed), runs it beside the
# rest (overlap: the step becomes the longer side), brings it to a reachable efficiency (roofline),
# removes op runs or calls at their measured cost (dispatch), was timed (measured), or the trace
# cannot say (none).
PROJECTION_BASES = ("removed", "overlap", "roofline", "dispatch", "measured", "none")


@dataclass(frozen=True)
class StepRow:
    number: int
    start_ps: int
    dur_ps: int
    input_ps: int
    compute_ps: int
    host_overhead_ps: int
    idle_ps: int
    device_busy_ps: int = 0  # runs with a device: kernels and copies the step launched
    copy_ps: int = 0  # the step's device copies (host-to-device, device-to-host...)
    input_wait_ps: int = 0  # the host waits for input data while the device idles
    profiler_ps: int = 0  # of dur_ps: the profiler's own time (analysis/profiler_cost), not the program's


@dataclass(frozen=True)
class StepsSummary:
    count: int
    source: str  # how steps were found: marker name, function, call, window, or "none"
    mean_ps: int
    median_ps: int
    note: str = ""
    steps: tuple[StepRow, ...] = ()
    # The profiler's own time per step (analysis/profiler_cost: JAX's Python tracer, XLA:CPU's and
    # PyTorch's op events, tftrace's hooks and sampler), and the steps less it, which the breakdown
    # and verdict judge; 0 where none is worth naming.
    profiler_ps: int = 0
    median_less_profiler_ps: int = 0
    mean_less_profiler_ps: int = 0
    # The same call's steps after the window, timed by TraceCallback with no profiler running (a
    # turn of the loop, the gap included), and how many; 0 where none were timed.
    untraced_ps: int = 0
    untraced_steps: int = 0


@dataclass(frozen=True)
class Breakdown:
    """Fractions of step time (sum ~1); all 0 when no time was measured."""

    input: float = 0.0
    compute: float = 0.0
    host_overhead: float = 0.0
    idle: float = 0.0


@dataclass(frozen=True)
class Verdict:
    bound: str  # one of BOUNDS
    text: str
    measured: bool = False  # an experiment on the user's own model and data backs it (`confirm`)


@dataclass(frozen=True)
class Experiment:
    """What an experiment (`TraceCallback(confirm=True)`, `tftrace.confirm`, `confirm_predict`)
    timed on the user's own model and data, and whether that confirms the trace's verdict."""

    kind: str = "step"  # step: input and step timed apart; predict: predict against direct calls
    mode: str = ""  # fit | evaluate | predict | custom
    batches: int = 0  # batches or calls each figure is over
    input_alone_ms: float | None = None  # per batch, a fresh iterator with no model
    step_alone_ms: float | None = None  # per step, the step function on one batch held in memory
    step_measured_ms: float | None = None  # per step with input, as the call ran it
    measured_by: str = ""  # untraced | trace | loop: where step_measured_ms comes from
    step_traced_ms: float | None = None  # per step in the trace (profiler on), when measured_by is untraced
    predict_ms: float | None = None  # per call, model.predict(x)
    predict_on_batch_ms: float | None = None
    direct_call_ms: float | None = None  # model(x, training=False)
    function_call_ms: float | None = None  # the same inside a tf.function
    fastest: str = ""  # the fastest alternative to predict that gives its outputs
    speedup: float | None = None  # predict_ms over the fastest alternative's
    leads: str = ""  # what the figures find largest: input | step | outside | predict_overhead | model
    confirmed: bool | None = None  # the verdict agrees with the figures; None: they cannot tell
    statement: str = ""
    skipped: tuple[str, ...] = ()  # what could not be timed, and why
    error: str = ""  # the experiment failed: why (the run's other parts stand)

    def to_dict(self) -> dict:
        return _to_json(self)


@dataclass(frozen=True)
class Bottleneck:
    rank: int
    kind: str
    title: str
    share: float  # of step time
    evidence: str
    recommendation: str
    step_if_removed_ps: int = 0  # projected mean step time (with the gap after it) without this time
    step_ps: int = 0  # the mean step time (with the gap after it) it is projected from
    facts: tuple[Fact, ...] = ()  # the evidence item by item (`evidence` is them in one line)
    after_first: bool = False  # its fix saves nothing while bottleneck 1 holds the step (ranked after those that do)
    step_once_first_fixed_ps: int = 0  # then: the step once bottleneck 1 and this one are both fixed
    # What a finding is about (kind, owner, subject) as a stable key: the same across captures of
    # the same program, so a diff, a what-if and an agent can follow one finding.
    id: str = ""
    # What the projection rests on (PROJECTION_BASES): removed, overlap, roofline, dispatch,
    # measured or none; and how the figure was made (or, for none, why the trace cannot say and
    # what to run to find out).
    projection_basis: str = ""
    projection_how: str = ""
    part: str = ""  # the breakdown part it explains (input, compute, host_overhead, idle), "" for views across parts
    # The step no fix of this finding can go below (overlap: the longer of the two sides; roofline:
    # the work at the reachable efficiency); 0 where the projection has no such floor.
    floor_ps: int = 0
    measured_step_ps: int | None = None  # the step with this fix applied, timed untraced by confirm; None if not
    # Findings whose savings lie within the run's step-to-step noise (`noise_ps`) of each other are
    # a tie: each names the rank of its tie's first (0: not tied).
    tie_rank: int = 0
    noise_ps: int = 0


@dataclass(frozen=True)
class OpRow:
    name: str
    type: str
    category: str
    layer: str
    phase: str
    device: str  # "host", or the device kind ("GPU", "TPU") whose planes ran it
    count: int
    self_ps: int
    share: float  # of all op self time, host and device together (OpStats.total_ps)
    eager: bool = False
    # Totals over the trace, as XProf counts them (analysis/cost); None where the trace cannot say.
    flops: float | None = None
    bytes_accessed: float | None = None


@dataclass(frozen=True)
class LayerRow:
    layer: str
    self_ps: int
    share: float
    params: int = -1  # trainable + non-trainable parameters, when the sidecar knows them
    flops_per_step: float | None = None  # forward and backward together; None where unknown


@dataclass(frozen=True)
class CategoryRow:
    category: str
    self_ps: int
    share: float


@dataclass(frozen=True)
class StageRow:
    name: str
    self_ps: int
    share: float


@dataclass(frozen=True)
class InputPipeline:
    stages: tuple[StageRow, ...] = ()
    slowest: str = ""


@dataclass(frozen=True)
class HostRow:
    """One host of a run with several: its own steps and breakdown."""

    host: str
    steps: int
    mean_ps: int
    median_ps: int
    breakdown: Breakdown
    bound: str
    collective_ps: int = 0  # per step: collective op self time (all-reduce...), waiting for peers


@dataclass(frozen=True)
class DeviceRow:
    """One device (GPU, TPU chip) of a host: how busy it was between its first and last op."""

    host: str
    device: str
    busy_ps: int  # time at least one of its streams runs an op or copy
    span_ps: int  # from its first op to its last
    busy: float  # busy_ps / span_ps
    gaps: int  # idle gaps of at least IDLE_GAP_PS
    idle_ps: int  # the total of those gaps
    longest_gap_ps: int
    compute_ps: int = 0  # time at least one kernel computes (copies, memsets and collectives left out)
    peak_flops_per_s: float | None = None  # XProf's peak: the maximum over precisions; None where unknown
    peak_bytes_per_s: float | None = None  # memory bandwidth; None where unknown
    precision: str = ""  # the arithmetic most of the run's matmul and convolution time on it uses (fp32, tf32, bf16...)
    precision_peak_flops_per_s: float | None = None  # its peak at that precision; None where unknown
    peak_source: str = ""  # where the peaks come from (the device plane's stats, a data sheet...)


@dataclass(frozen=True)
class PythonRow:
    """A Python function in one place: a thread kind, and on the main thread inside a step,
    between steps or outside them."""

    function: str
    file: str
    line: int  # where the function starts
    thread: str  # main | input pipeline | other
    where: str  # inside steps | between steps | outside steps | input pipeline | other
    owner: str  # user (your code), a package (keras, tensorflow, numpy...), or python (stdlib)
    self_ps: int  # innermost frame
    total_ps: int  # anywhere on the stack
    share: float  # self time of all sampled Python time (PythonProfile.total_ps)
    own_ps: int = 0  # your code: innermost of your functions (library calls it makes count to it)


@dataclass(frozen=True)
class FlameNode:
    """A box of the icicle chart of one thread kind: a function at a depth of the stack."""

    thread: str
    depth: int
    start: float  # of the thread kind's time
    width: float
    function: str
    file: str
    line: int
    owner: str
    ps: int


@dataclass(frozen=True)
class PythonProfile:
    source: str = ""  # where the Python time comes from: stack samples or Python tracer events
    total_ps: int = 0  # all sampled Python time, every thread together
    rows: tuple[PythonRow, ...] = ()
    flame: tuple[FlameNode, ...] = ()


@dataclass(frozen=True)
class RunReport:
    path: str
    name: str
    hosts: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    mode: str = "unknown"  # train | evaluate | predict | mixed | unknown
    mode_source: str = ""  # how the mode was found: markers, sidecar, function names, ops
    # "pytorch" for PyTorch profiler (Kineto) traces; "" where the trace family does not say (TF
    # and JAX both write XSpace).
    framework: str = ""
    eager: bool = False
    steps: StepsSummary = StepsSummary(0, "none", 0, 0)
    breakdown: Breakdown = Breakdown()
    verdict: Verdict = Verdict("unknown", "")
    bottlenecks: tuple[Bottleneck, ...] = ()
    ops: tuple[OpRow, ...] = ()
    layers: tuple[LayerRow, ...] = ()
    categories: tuple[CategoryRow, ...] = ()
    input_pipeline: InputPipeline = InputPipeline()
    notes: tuple[str, ...] = ()
    host_op_ps: int = 0  # all host op self time: with device_op_ps, the total op shares are of
    device_op_ps: int = 0  # all device op self time: the total layer and category shares are of, if any
    per_host: tuple[HostRow, ...] = ()  # runs with several hosts: each host side by side
    per_device: tuple[DeviceRow, ...] = ()  # hosts with devices: each device's busy time and idle gaps
    python: PythonProfile = PythonProfile()  # Python functions, where samples or tracer events exist
    error: str = ""  # set when the run could not be read; the other parts are then empty
    step_view: StepView = StepView()  # the median step's timeline, for the HTML report
    cut_short: str = ""  # a capture window that ended early (Ctrl-C, an error): by what, after how many steps
    experiment: Experiment | None = None  # figures timed apart after the capture, where one ran
    memory: Memory = Memory()  # per allocator: the peak, what holds it, the room left; memory findings
    owners: tuple[OwnerRow, ...] = ()  # who in the program owns each part of a step, largest first
    flops_per_step: float | None = None  # the model's FLOPs in one step; None where unknown
    mfu: float | None = None  # model FLOPs / step time / the devices' peak; None where unknown
    roofline: Roofline = Roofline()  # per op, owner and layer: work, rates, share of the roofline, bound (analysis/cost)


@dataclass(frozen=True)
class Report(HtmlDisplay):
    runs: tuple[RunReport, ...]
    tftrace_version: str = ""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        return _to_json(self)

    def rows(self, table: str) -> tuple[list[str], list[list]]:
        """Header and rows of one table (see TABLES) across runs, with a `run` column; times
        in ms beside the exact ps."""
        header: list[str] = []
        rows: list[list] = []
        for run in self.runs:
            for item in _table_items(run, table):
                record = {"run": run.name}
                for f in dataclasses.fields(item):
                    value = getattr(item, f.name)
                    if dataclasses.is_dataclass(value):  # a host's breakdown: its parts as columns
                        record.update(dataclasses.asdict(value))
                        continue
                    if f.name.endswith("_ps"):
                        record[f.name[:-3] + "_ms"] = None if value is None else round(value / 1e9, 6)
                    record[f.name] = value
                header = header or list(record)
                rows.append([record[h] for h in header])
        return header, rows

    def dataframe(self, table: str = "ops"):
        """One table (ops, layers, categories, stages, steps) of every run as a DataFrame."""
        import pandas as pd
        header, rows = self.rows(table)
        return pd.DataFrame(rows, columns=header or ["run"])

    @classmethod
    def from_dict(cls, data: dict) -> "Report":
        if not isinstance(data, dict) or "runs" not in data:
            raise ReportError("not a tftrace report: no 'runs' key")
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= SCHEMA_VERSION:
            newer = isinstance(version, int) and version > SCHEMA_VERSION
            raise ReportError(f"report schema_version {version!r} is not one this tftrace reads (1 to "
                              f"{SCHEMA_VERSION})" + ("; it was written by a newer tftrace: upgrade" if newer else ""))
        try:
            return _from_json(cls, data)
        except (TypeError, ValueError, KeyError) as e:
            raise ReportError(f"malformed tftrace report ({e})") from None


def failed_run(path: str, name: str, error: str) -> RunReport:
    """The report entry of a run that could not be read."""
    return RunReport(path=path, name=name, error=error)


def _table_items(run: RunReport, table: str) -> tuple:
    if table not in TABLES:
        raise ReportError(f"unknown table {table!r}; choose one of {', '.join(TABLES)}")
    if table == "stages":
        return run.input_pipeline.stages
    if table == "steps":
        return run.steps.steps
    if table in ("hosts", "devices"):
        return getattr(run, f"per_{table[:-1]}")
    if table == "python":
        return run.python.rows
    if table == "roofline":
        return run.roofline.rows
    return getattr(run, table)


def _to_json(value):
    if dataclasses.is_dataclass(value):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            out[f.name] = _to_json(v)
            if f.name.endswith("_ps"):  # readers want ms; the exact ps stays for round-trips
                out[f.name[:-3] + "_ms"] = None if v is None else round(v / 1e9, 6)
        return out
    if isinstance(value, (tuple, list)):
        return [_to_json(v) for v in value]
    return value


def _from_json(cls, data):
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name])
    return cls(**kwargs)


def _convert(hint, value):
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):  # X | None: None, or an X
        if value is None:
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
        origin = typing.get_origin(hint)
    if origin is tuple:
        (item, *_rest) = typing.get_args(hint)
        return tuple(_convert(item, v) for v in value)
    if dataclasses.is_dataclass(hint):
        return _from_json(hint, value)
    if hint is float and isinstance(value, int):
        return float(value)
    return value
