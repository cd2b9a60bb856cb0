"""XLA:CPU's thunk events named by module and instruction (`jit_train_step/ynn_fusion.9`), each
with the framework's scope path its module's HLO gives (read/hlo_metadata.py).

An XLA:CPU thunk event is named after its HLO instruction only, and two modules reuse the same
names (`copy.3` in `jit_train_step` and in `jit_predict_step`): each event's own `program_id`
(or `hlo_module`) stat says which module ran it. The stats of those events only are decoded,
with numpy where the layout allows (read/stat_table.py).
"""

from __future__ import annotations

import numpy as np

from tftrace.model.names import Op
from tftrace.read.hlo import hlo_type, is_hlo_name
from tftrace.read.stat_table import int_values, last_of_each, stat_table, text_values
from tftrace.read.stats import parsed_stats, stat_int, stat_value


def module_names(builder, line, name: np.ndarray, stat_names: dict, modules: dict,
                 caller: bool = False, host: str = "") -> np.ndarray:
    """`name` (the line's event codes) with each thunk event's code replaced by its module's op:
    `hlo:<module>/<instruction>`, an Op of kind "xla" whose `source` is the instruction's scope
    path ("" when the module's HLO is not in the trace). `caller`: a line that is not one of
    XLA's threads (the Python thread that called the module runs some of its thunks itself):
    only events named like an instruction that carry their module's id are thunks there. Each
    op's events are counted per program and instruction (builder.count_kernels)."""
    is_thunk = np.zeros(int(name.max(initial=0)) + 1, bool)
    for code in np.unique(name, return_counts=True)[0].tolist():  # (np.unique's plain form imports numpy.ma)
        if caller:
            is_thunk[code] = builder.op_of(code) is None and is_hlo_name(builder.name_of(code))
        else:
            op = builder.op_of(code)
            is_thunk[code] = op is not None and op.kind == "xla" and "/" not in op.name
    rows = np.flatnonzero(is_thunk[name])
    if not len(rows):
        return name
    program, module = [-1] * len(rows), [""] * len(rows)
    with_stats = np.flatnonzero(line.has_stats[rows])
    if len(with_stats):
        p, m = _event_modules(line, rows[with_stats], stat_names)
        for j, pp, mm in zip(with_stats.tolist(), p, m):
            program[j], module[j] = pp, mm
    if caller:  # only the events that name their module are thunks here
        keep = [j for j, (p, m) in enumerate(zip(program, module)) if p >= 0 or m]
        rows = rows[keep]
        program, module = [program[j] for j in keep], [module[j] for j in keep]
    if not any(p >= 0 or m for p, m in zip(program, module)):
        return name  # a trace that names no module: the thunks keep their own names
    names = [m.name for m in modules.values()]
    unique = {m.name: m for m in modules.values() if names.count(m.name) == 1}  # for events with no program id
    out = name.copy()
    made: dict[tuple, tuple] = {}
    counts: dict[tuple, int] = {}
    for i, p, m in zip(rows.tolist(), program, module):
        key = (int(name[i]), p, m)
        found = made.get(key)
        if found is None:
            instruction = builder.name_of(int(name[i])) if caller else builder.op_of(int(name[i])).name
            mod = modules.get(p, unique.get(m))
            code = _intern(builder, instruction, mod, m)
            found = made[key] = (code, (code, mod.program_id if mod is not None else p, instruction))
        out[i] = found[0]
        counts[found[1]] = counts.get(found[1], 0) + 1
    builder.count_kernels(host, counts)
    return out


def _intern(builder, instruction: str, module, module_name: str) -> int:
    if module is not None:
        module_name = module.name
    if not module_name:  # where thunks name their module, an event that names none is runtime work
        return builder.intern(instruction, plain=True)
    source = module.sources.get(instruction, "") if module is not None else ""
    code = module.code.get(instruction, "") if module is not None else ""
    name = f"{module_name}/{instruction}"
    return builder.intern(f"hlo:{name}", Op(name, hlo_type(instruction), "xla", source, "", code))


def _event_modules(line, rows: np.ndarray, stat_names: dict) -> tuple[list[int], list[str]]:
    """Per row: its program id (-1 if absent) and module name ("" if absent)."""
    ids = {name: mid for mid, name in stat_names.items() if name in ("program_id", "hlo_module")}
    program = np.full(len(rows), -1, np.int64)
    module = [""] * len(rows)
    table = stat_table(line.data, line.tags[rows])
    if table is None:
        return _parsed(line, rows, stat_names)
    if "program_id" in ids:
        mine = np.flatnonzero(table.key == ids["program_id"])
        ok, values = int_values(table.kind[mine], table.bits[mine])
        mine, values = mine[ok], values[ok]
        last = last_of_each(table.event[mine])
        program[table.event[mine][last]] = values[last]
    if "hlo_module" in ids:
        mine = np.flatnonzero(table.key == ids["hlo_module"])
        mine = mine[last_of_each(table.event[mine])]
        try:
            texts = text_values(table, mine, line.data, stat_names, "")
        except UnicodeDecodeError:
            texts = [""] * len(mine)
        for e, text in zip(table.event[mine].tolist(), texts):
            module[e] = text
    return program.tolist(), module


def _parsed(line, rows: np.ndarray, stat_names: dict) -> tuple[list[int], list[str]]:
    """The same, each event parsed by the protobuf library (layouts numpy does not follow)."""
    program, module = [], []
    for i in rows.tolist():
        st = {stat_names.get(s.metadata_id): s for s in parsed_stats(line.event(i))}
        p = stat_int(stat_value(st["program_id"], stat_names)) if "program_id" in st else None
        program.append(-1 if p is None else p)
        module.append(str(stat_value(st["hlo_module"], stat_names)) if "hlo_module" in st else "")
    return program, module
