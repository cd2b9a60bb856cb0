"""Name device events after the ops they run: TF ops from a kernel's stats, XLA ops by category."""

from __future__ import annotations

import re

import numpy as np

from tftrace.model.cost import OpCost, OpTotal
from tftrace.model.names import Op, parse_tf_op, strip_annotation
from tftrace.read.hlo import hlo_op, precision, short_kernel
from tftrace.read.stat_table import int_values, last_of_each, stat_table, text_values
from tftrace.read.stats import parsed_stats, stat_int, stat_value
from tftrace.read.tf_shape_cost import matmul_cost, shapes

_HLO_SUFFIX = re.compile(r"\.\d+\Z")
_COPIES = ("kernel:Memcpy", "kernel:Memset")


def device_label(md, stat_names) -> tuple[str, Op | None]:
    """A device event metadata (TPU XLA op, GPU kernel) as a name and the op it times."""
    meta_stats = {stat_names.get(s.metadata_id): stat_value(s, stat_names) for s in md.stats}
    tf_op = parse_tf_op(str(meta_stats.get("tf_op") or ""))
    if tf_op:
        return f"{tf_op[0]}:{tf_op[1]}", Op(tf_op[0], tf_op[1], "device")
    if "hlo_category" in meta_stats:
        hlo = md.display_name or md.name
        return f"hlo:{hlo}", Op(hlo, str(meta_stats["hlo_category"]), "device")
    return f"kernel:{md.name}", Op(md.name, _kernel_type(md.name), "device", "", precision(md.name))


def stated_cost(md, stat_names) -> OpCost | None:
    """What a device op's metadata says one run of it costs (TPU planes carry `flops` and
    `bytes_accessed` per HLO op); None where it says nothing."""
    found = {}
    for s in md.stats:
        key = stat_names.get(s.metadata_id)
        if key in ("flops", "bytes_accessed"):
            value = stat_value(s, stat_names)
            if isinstance(value, (int, float)):
                found[key] = float(value)
    if not found:
        return None
    return OpCost(found.get("flops", 0.0), found.get("bytes_accessed", 0.0), 0.0)


_UNDERSCORED = re.compile(r"_(\d+)\Z")
_LIBRARY_CALLS = ("cublas", "cudnn", "custom-call", "__cublas", "triton_gemm", "gemm")


def _instruction(hlo: str, kernel: str, module) -> str:
    """The HLO instruction a kernel runs: its own, or inside a CUDA graph (`command_buffer_N`)
    the one its kernel is named after (`fusion_55` runs `fusion.55`)."""
    if not hlo.startswith("command_buffer"):
        return hlo
    short = short_kernel(kernel)
    dotted = _UNDERSCORED.sub(r".\1", short)
    return dotted if dotted in module.sources else short


def _library_code(kernel: str, module) -> str:
    """A library kernel (cuBLAS, cuDNN) inside a CUDA graph names no instruction: the Python most
    of the module's library calls come from."""
    if not short_kernel(kernel).lower().startswith(("sm", "cutlass", "ampere", "volta", "turing", "hopper", "void")) \
            and "gemm" not in kernel.lower() and "conv" not in kernel.lower():
        return ""
    codes: dict[str, int] = {}
    for name, code in module.code.items():
        if code and name.startswith(_LIBRARY_CALLS):
            codes[code] = codes.get(code, 0) + 1
    return max(codes.items(), key=lambda kv: (kv[1], kv[0]))[0] if codes else ""


def _kernel_type(kernel: str) -> str:
    if kernel.lower().startswith("memcpy"):
        return kernel
    return _HLO_SUFFIX.sub("", short_kernel(kernel))


# Device event stats that link it to its launch and its step (stat name -> Trace stats column).
_LINKS = {"correlation_id": "correlation", "group_id": "group_id"}
_NUMBERS = (*_LINKS, "program_id")  # the int stats read: the links, and the program an XLA kernel runs
_TEXTS = ("tf_op", "annotation", "hlo_op", "hlo_module", "name")  # the stats that name a kernel's op


def device_names(builder, line, name, stat_names, modules: dict | None = None,
                 host: str = "") -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """GPU kernels name the framework op that launched them in their own stats; they also carry
    the correlation id of their launch and, in older traces, the step's group id. `modules`
    (program id -> read/hlo_metadata.Module) give an XLA kernel the Python that made its op;
    each XLA op's kernels are counted per program and instruction (builder.count_kernels)."""
    names = [m.name for m in (modules or {}).values()]
    by_name = {m.name: m for m in (modules or {}).values() if names.count(m.name) == 1}
    out = name.copy()
    links = {col: np.full(len(name), -1, np.int64) for col in _LINKS.values()}
    copies = {c for c in np.flatnonzero(np.bincount(name)).tolist() if builder.name_of(c).startswith(_COPIES)}
    rows = np.flatnonzero(line.has_stats)
    labelled: dict[tuple, tuple[str, Op] | None] = {}  # kernels repeat: each distinct one is named once
    counts: dict[tuple, int] = {}
    priced: dict[tuple, tuple | None] = {}  # (code, annotation) -> a TF matmul's cost from its shapes
    for i, st in zip(rows.tolist(), _kernel_stats(line, rows, stat_names)):
        # A copy stays a copy (as XProf classifies it), whichever op's annotation it carries.
        if int(name[i]) not in copies:
            key = (int(name[i]), *(st.get(k) for k in _TEXTS))
            if key not in labelled:
                labelled[key] = _kernel_op(st, builder.name_of(int(name[i])).removeprefix("kernel:"), by_name)
            if labelled[key] is not None:
                out[i] = builder.intern(*labelled[key])
                builder.refine(int(out[i]), labelled[key][1])
                if "annotation" in st and "#shape=" in st["annotation"] and _is_work(builder.name_of(int(name[i]))):
                    _price(builder, host, int(out[i]), labelled[key][1].type, st["annotation"], priced)
                if "hlo_op" in st:
                    hlo = "" if st["hlo_op"].startswith("command_buffer") else st["hlo_op"]
                    program = stat_int(st.get("program_id"))
                    ck = (int(out[i]), -1 if program is None else program, hlo)
                    counts[ck] = counts.get(ck, 0) + 1
        for key, col in _LINKS.items():
            value = stat_int(st.get(key))
            if value is not None and value >= 0:
                links[col][i] = value
    if counts:
        builder.count_kernels(host, counts)
    return out, links


_HELPERS = ("splitkreduce", "memset", "memcpy", "redzone", "convert", "transpose")


def _is_work(kernel: str) -> bool:
    """A kernel that is the op's work, not a helper it also launches (split-K's reduction...): a
    TF matmul is costed once per such kernel."""
    return not any(h in kernel.lower() for h in _HELPERS)


def _price(builder, host: str, code: int, op_type: str, annotation: str, priced: dict) -> None:
    """Add one run of a TF matmul, costed from the shapes in its kernel's annotation."""
    key = (code, annotation)
    if key not in priced:
        found = shapes(annotation)
        priced[key] = matmul_cost(op_type, found) if found else None
    cost = priced[key]
    if cost is None:
        return
    totals = builder.costs.totals
    before = totals.get((host, code))
    flops, moved, runs = (before.flops, before.bytes, before.runs) if before else (0.0, 0.0, 0)
    totals[(host, code)] = OpTotal(flops + cost[0], moved + cost[1], runs + 1, "shapes")


def _kernel_stats(line, rows: np.ndarray, stat_names) -> list[dict]:
    """Per event of `rows`, the values of the stats read here (each stat's last, as protobuf
    keeps it): texts as `str()` of the value, links as the value."""
    table = stat_table(line.data, line.tags[rows])
    if table is not None:
        try:
            return _decoded(table, line.data, len(rows), stat_names)
        except UnicodeDecodeError:  # the library refuses such a stat, and reads the rest: so do we
            pass
    out = []
    for i in rows.tolist():
        st = {stat_names.get(s.metadata_id): s for s in parsed_stats(line.event(i))}
        out.append({**{k: str(stat_value(st[k], stat_names)) for k in _TEXTS if k in st},
                    **{k: stat_value(st[k], stat_names) for k in _NUMBERS if k in st}})
    return out


def _decoded(table, data: bytes, n: int, stat_names) -> list[dict]:
    out: list[dict] = [{} for _ in range(n)]
    for mid, key in stat_names.items():
        if key not in _TEXTS and key not in _NUMBERS:
            continue
        mine = np.flatnonzero(table.key == mid)
        mine = mine[last_of_each(table.event[mine])]
        if key in _TEXTS:
            values = text_values(table, mine, data, stat_names, "None")
        else:
            ok, ints = int_values(table.kind[mine], table.bits[mine])
            values = [v if good else None for v, good in zip(ints.tolist(), ok.tolist())]
        for e, v in zip(table.event[mine].tolist(), values):
            out[e][key] = v
    return out


def _kernel_op(st: dict, kernel: str, modules: dict) -> tuple[str, Op] | None:
    """The op a kernel runs, as (event name, Op): the TF op its stats name, else the XLA op."""
    for key in ("tf_op", "annotation"):
        if key in st:
            text = st[key]
            parsed = parse_tf_op(strip_annotation(text) if key == "annotation" else text)
            if parsed:
                return f"{parsed[0]}:{parsed[1]}", Op(parsed[0], parsed[1], "device", "", precision(kernel))
    if "hlo_op" in st:
        module = modules.get(st.get("hlo_module", ""))
        label, op = hlo_op(st["hlo_op"], st.get("hlo_module", ""), st.get("name", ""), kernel)
        if module is not None:
            instruction = _instruction(st["hlo_op"], kernel, module)
            op = op._replace(source=op.source or module.sources.get(instruction, ""),
                             code=module.code.get(instruction, "") or _library_code(kernel, module))
        return label, op
    return None
