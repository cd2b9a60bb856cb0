"""What a trace says its ops cost (FLOPs, bytes) and what its devices can do, as read: the
analyses (analysis/cost/) turn it into totals, peaks and a roofline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class OpCost(NamedTuple):
    """One run of an op: floating-point operations and bytes moved to and from memory."""

    flops: float = 0.0
    read: float = 0.0  # bytes read
    written: float = 0.0  # bytes written

    @property
    def bytes(self) -> float:
        return self.read + self.written

    def plus(self, other: "OpCost", times: float = 1.0) -> "OpCost":
        return OpCost(self.flops + other.flops * times, self.read + other.read * times,
                      self.written + other.written * times)


@dataclass(frozen=True)
class ModuleCost:
    """One compiled XLA module (a program): the cost of one run of each instruction that runs on
    its own (not fused into another), and of one run of the whole module."""

    name: str
    program: int
    ops: dict = field(default_factory=dict)  # instruction name -> OpCost of one run
    total: OpCost = OpCost()  # the entry computation once (a while loop's body once, as XLA counts it)
    entry: frozenset = frozenset()  # the entry computation's instructions (they run once per module run)
    unknown: frozenset = frozenset()  # custom calls XLA cannot cost (their figures are 0, not known)
    model: str = "gpu"  # the cost model that counted it: XLA's GPU one, or its target-free one ("cpu")


class OpTotal(NamedTuple):
    """What a trace's own figures say ops of one name cost over the whole trace."""

    flops: float
    bytes: float
    runs: int  # the runs those figures cover (of the op's events)
    source: str  # what counted them: "tpu" (the op's stats), "shapes" (input shapes and a formula)


@dataclass(frozen=True)
class Costs:
    """Per host (the key's first part): XLA modules by program id, the HLO instruction each
    device op runs, costs the trace states per op, and its devices' capabilities."""

    modules: dict = field(default_factory=dict)  # (host, program id) -> ModuleCost
    # (host, op name code, program id) -> [instruction, device events]: which instruction of
    # which module an XLA op's events run, and how many events there are.
    kernels: dict = field(default_factory=dict)
    per_run: dict = field(default_factory=dict)  # (host, op name code) -> (OpCost, source): each event one run
    totals: dict = field(default_factory=dict)  # (host, op name code) -> OpTotal
    devices: dict = field(default_factory=dict)  # (host, plane) -> {stat: value} of what it can do

    def of_host(self, host: str) -> "Costs":
        return Costs(*({k: v for k, v in table.items() if k[0] == host}
                       for table in (self.modules, self.kernels, self.per_run, self.totals, self.devices)))

    def __bool__(self) -> bool:
        return bool(self.modules or self.per_run or self.totals or self.devices)
