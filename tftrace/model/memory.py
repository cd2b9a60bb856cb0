"""The memory part of a run's report: per allocator, the peak, what holds it, and the room left."""

from __future__ import annotations

from dataclasses import dataclass

from tftrace.model.finding import Fact


@dataclass(frozen=True)
class HeldRow:
    """Allocations alive at an allocator's peak, one group of the same op, shape and dtype."""

    op: str  # the op that allocated them ("" where the trace names none)
    layer: str
    shape: str
    dtype: str
    kind: str  # weights | optimizer | gradient | activation | other | before window | reserved | rest
    bytes: int
    share: float  # of the peak
    count: int  # allocations in the group


@dataclass(frozen=True)
class StepPeak:
    """The most bytes an allocator held during one step."""

    number: int
    peak_bytes: int


@dataclass(frozen=True)
class MemoryPoint:
    """Bytes in use at a moment: a point of the memory-in-use timeline."""

    at_ps: int
    bytes: int


@dataclass(frozen=True)
class AllocatorRow:
    """One allocator (`GPU_0_bfc`, `mklcpu`...) over the capture window."""

    name: str
    host: str
    peak_bytes: int  # most bytes in use (reserved + allocated) at any memory event of the window
    capacity_bytes: int  # in use + available at the peak, as the allocator states it; 0: not stated
    peak_share: float  # peak_bytes / capacity_bytes; 0 without a capacity
    peak_at_ps: int  # when the peak happened
    peak_step: int  # the step it happened in; -1: outside the steps
    peak_op: str  # the op whose allocation reached the peak
    # The allocator's own peak counter, since it was made, as its last event records it (XProf's
    # peakBytesUsageLifetime); a counter of the heap alone (TPU) may lie below peak_bytes.
    lifetime_peak_bytes: int
    fragmentation: float  # at the peak, as the allocator reports it
    events: int  # allocations and deallocations in the window
    at_peak: tuple[HeldRow, ...] = ()  # what holds the peak, largest first; adds up to peak_bytes
    steps: tuple[StepPeak, ...] = ()
    timeline: tuple[MemoryPoint, ...] = ()  # bytes in use over the window, thinned (each point a local max)


@dataclass(frozen=True)
class MemoryFinding:
    """A memory problem or opportunity of one allocator, with evidence and a fix."""

    kind: str  # near_capacity | fragmentation | headroom
    allocator: str
    title: str
    evidence: str
    recommendation: str
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class Memory:
    allocators: tuple[AllocatorRow, ...] = ()  # largest peak first
    findings: tuple[MemoryFinding, ...] = ()


def size(n: int) -> str:
    """Bytes in decimal units, as XProf and nvidia-smi print them."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
