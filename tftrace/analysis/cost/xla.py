"""What XLA's ops and modules cost over a trace: each instruction's cost (read/hlo_cost.py) times
the runs its device events show, and each module's cost times its runs.

An instruction may launch several kernels a run (cuDNN's workspace set-up, a split GEMM), so
its runs are not its events: a module's run count is the count most of its entry instructions
show, and an entry instruction with k times as many events ran k kernels a run. (XProf's op
profile multiplies by every event instead: its rawFlops for a three-kernel convolution is three
times what ran.) Inside a CUDA graph (`command_buffer_N`) kernels do not say which instruction
they run: such modules are costed whole, by their runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tftrace.model.cost import ModuleCost, OpCost
from tftrace.model.events import Trace

_MODULE_RUN = ":XLA GPU module"  # the host's event for one run of a module on a GPU (`jit_step:XLA GPU module`)


@dataclass(frozen=True)
class ModuleRuns:
    """One module's runs over the trace and what they cost."""

    host: str
    module: ModuleCost
    runs: int
    graphed: bool  # some of its kernels ran inside a CUDA graph (named by no instruction)

    @property
    def cost(self) -> OpCost:
        return OpCost().plus(self.module.total, self.runs)


def xla_op_costs(trace: Trace) -> dict[int, tuple[OpCost, int, bool]]:
    """Per op name code: its cost over the trace, its runs, and whether its cost is unknown
    (a custom call XLA cannot see into); for the XLA ops whose module's HLO is in the trace."""
    costs = trace.costs
    out: dict[int, tuple[OpCost, int, bool]] = {}
    per_run = _runs_per_program(trace)
    for (host, code, program), (instruction, events) in costs.kernels.items():
        module = costs.modules.get((host, program))
        if module is None or not instruction or instruction not in module.ops:
            continue
        usual = per_run.get((host, program), 0)
        runs = events
        if instruction in module.entry and usual:
            runs = events // max(1, round(events / usual)) if events >= usual else events
        cost, total_runs, unknown = out.get(code, (OpCost(), 0, False))
        out[code] = (cost.plus(module.ops[instruction], runs), total_runs + runs,
                     unknown or instruction in module.unknown)
    return out


def module_runs(trace: Trace) -> list[ModuleRuns]:
    """Every module that ran device or thunk events in the trace, with its runs: the host's
    `<module>:XLA GPU module` events where one program of that name ran, else the count most
    of its entry instructions' events show."""
    costs = trace.costs
    per_run = _runs_per_program(trace)
    graphed = {(h, p) for (h, _c, p), (instruction, _n) in costs.kernels.items() if not instruction}
    ran = {(h, p) for (h, _c, p) in costs.kernels}
    names = Counter((h, costs.modules[key].name) for key in ran if key in costs.modules for h in (key[0],))
    host_runs = _host_module_runs(trace)
    out = []
    for key in sorted(ran):
        module = costs.modules.get(key)
        if module is None:
            continue
        runs = host_runs.get((key[0], module.name)) if names[(key[0], module.name)] == 1 else None
        if runs is None:
            runs = per_run.get(key, 0)
        if runs:
            out.append(ModuleRuns(key[0], module, runs, key in graphed))
    return out


def _runs_per_program(trace: Trace) -> dict[tuple[str, int], int]:
    """(host, program) -> the event count most of its entry instructions show (ties: the larger)."""
    counts: dict[tuple[str, int], Counter] = {}
    for (host, _code, program), (instruction, events) in trace.costs.kernels.items():
        module = trace.costs.modules.get((host, program))
        if module is not None and instruction in module.entry:
            counts.setdefault((host, program), Counter())[events] += 1
    return {k: max(c.items(), key=lambda kv: (kv[1], kv[0]))[0] for k, c in counts.items()}


def _host_module_runs(trace: Trace) -> dict[tuple[str, str], int]:
    """(host, module name) -> its `<module>:XLA GPU module` events on the host."""
    codes = [c for c, n in enumerate(trace.names) if n.endswith(_MODULE_RUN)]
    if not codes:
        return {}
    counts = Counter()
    ev = trace.events
    wanted = trace.named(codes)
    for line, name in zip(ev["line"][wanted].tolist(), ev["name"][wanted].tolist()):
        counts[(trace.lines[line].host, trace.names[name][:-len(_MODULE_RUN)])] += 1
    return dict(counts)
