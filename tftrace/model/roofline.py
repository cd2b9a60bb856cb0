"""The roofline of a run: per op, owner and layer, the work done (FLOPs, bytes), how fast, how
near the device's roofs, and what bounds it."""

from __future__ import annotations

from dataclasses import dataclass

# What bounds a row: its arithmetic (compute) or its memory traffic (memory), whichever its time
# at the device's peaks is longer for; or neither: many short runs far below both roofs, whose
# time goes to launching them (launch); "" where the peaks are unknown.
BOUNDS = ("compute", "memory", "launch", "")
SCOPES = ("op", "owner", "layer", "module")  # module: a module run inside CUDA graphs, costed whole


@dataclass(frozen=True)
class RooflineRow:
    scope: str  # op | owner | layer | module
    name: str
    phase: str = ""  # owners and layers: forward | backward | ""
    time_ps: int = 0  # its ops' own time over the trace, on the devices the roofline is of
    runs: int = 0  # its op runs over the trace
    flops: float = 0.0
    bytes_accessed: float = 0.0
    intensity: float | None = None  # FLOPs per byte
    flops_per_s: float | None = None  # achieved: flops over time_ps
    bytes_per_s: float | None = None
    precision: str = ""  # the arithmetic its kernels name (fp32, tf32, bf16...), "" where unknown
    peak_flops_per_s: float | None = None  # the compute roof it is held to: its precision's peak, else the device's
    roofline: float | None = None  # its time at the roofs over its time (achieved / attainable at its intensity)
    bound: str = ""  # one of BOUNDS


@dataclass(frozen=True)
class Roofline:
    """The device's roofs, what counted the work, the steps' achieved rate, and the rows."""

    device: str = ""  # the device kind it is of ("GPU", "TPU", "CPU"), "" where no work was costed
    counted_by: str = ""  # what counted the FLOPs and bytes (XLA's HLO, the TPU's op stats, input shapes...)
    peak_flops_per_s: float | None = None  # per device: the maximum over precisions (XProf's peak)
    peak_bytes_per_s: float | None = None
    precision: str = ""  # the run's: what most of its matmul and convolution time computes in
    precision_peak_flops_per_s: float | None = None  # per device, at that precision
    devices: int = 0  # devices whose peaks add up to the run's (MFU divides by their sum)
    ridge: float | None = None  # FLOPs per byte where the compute and memory roofs meet
    source: str = ""  # where the peaks come from
    flops_per_s: float | None = None  # achieved over the steps: FLOPs per step over the mean step
    precision_mfu: float | None = None  # the MFU against the peak at the run's precision
    rule: str = ""  # how `bound` is decided, in a sentence
    note: str = ""  # what the figures leave out, where they do
    rows: tuple[RooflineRow, ...] = ()
