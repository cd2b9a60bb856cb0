"""A fusion's cost in XLA's models: its FLOPs are its instructions' FLOPs times how often the
fusion computes each (XLA's GPU model recomputes an elementwise op for every user that is not
one; its target-free model computes each once), its bytes what crosses its boundary."""

from __future__ import annotations

import math

from tftrace.read.hlo_op_cost import ELEMENTWISE
from tftrace.read.hlo_shapes import Computation, Instruction

_SPREAD = {"tuple", "get-tuple-element"}  # pass their users' utilization through, like elementwise ops


def fusion(a, ins: Instruction, p) -> None:
    """A fusion's FLOPs (its instructions' times how often it computes each) and bytes (what
    crosses its boundary: its outputs, the share of each operand it reads, large constants);
    `a` is the module's analysis (read/hlo_cost.py), `p` the fusion's properties to fill."""
    if not ins.calls or ins.calls[0] not in a.comps:
        return
    comp = a.comps[ins.calls[0]]
    if ins.kind == "kCustom":  # a gather or scatter fusion is costed as that op
        for inner in comp.instructions:
            if inner.opcode in ("gather", "scatter"):
                a.handle(inner, p)
                return
    total, each = a.sub(comp.id)
    root = a.by_id.get(comp.root)
    p.bytes = 0.0
    p.out = {}
    for index, shape in ins.shape.subshapes():
        if not shape.is_array():
            continue
        dus = root if not index else (a.by_id.get(root.operands[index[0]]) if root is not None and
                                      root.opcode == "tuple" and len(index) == 1 else None)
        if dus is not None and dus.opcode == "dynamic-update-slice" and (not index or len(index) == 1):
            size = float(a._shape(dus.operands[1]).size())
        else:
            size = float(shape.size())
        p.bytes += size
        p.out[index] = size
    util = _utilizations(a, comp, each) if a.gpu else dict.fromkeys(each, 1.0)
    p.flops = sum(util[i.id] * each[i.id].flops for i in comp.instructions)
    for inner in comp.instructions:
        if inner.opcode == "constant" and inner.shape.elements_recursive > 1:
            p.bytes += inner.shape.size() * min(util[inner.id], 1.0)
    params = {i.parameter: i for i in comp.instructions if i.opcode == "parameter"}
    users = _users(comp)
    for k in range(len(ins.operands)):
        param = params.get(k)
        if param is None:
            continue
        size = 0.0
        if not a.gpu:
            size = float(_read_by_users(param, users))
        elif param.shape.tuple is None:
            size = param.shape.size() * min(util[param.id], 1.0)
        else:
            for index, _leaf in param.shape.leaves():
                node = param
                for step in index:
                    node = next((u for u in users.get(node.id, ()) if u.opcode == "get-tuple-element"
                                 and u.tuple_index == step), node)
                part = node.shape.size() * min(util.get(node.id, 0.0), 1.0)
                p.opnd[(k, index)] = part
                size += part
        p.bytes += size
        p.opnd[(k, ())] = size
        p.util[k] = util[param.id]


def _read_by_users(ins: Instruction, users: dict) -> int:
    """A fused parameter's bytes read, as XLA's target-free model counts them: a slice reads
    its output, a broadcast or reshape the whole operand again; other users share one read."""
    size, shared = 0, False
    for user in users.get(ins.id, ()):
        if user.opcode == "slice":
            size += user.shape.size()
        elif user.opcode == "dynamic-slice":
            if user.operands and user.operands[0] == ins.id:
                size += user.shape.size()
            elif not shared:
                shared, size = True, size + ins.shape.size()
        elif user.opcode == "dynamic-update-slice":
            if not (user.operands and user.operands[0] == ins.id) and not shared:
                shared, size = True, size + ins.shape.size()
        elif user.opcode in ("broadcast", "reshape"):
            size += ins.shape.size()
        elif not shared:
            shared, size = True, size + ins.shape.size()
    return size


def _users(comp: Computation) -> dict[int, list[Instruction]]:
    out: dict[int, list[Instruction]] = {}
    for i in comp.instructions:
        for o in i.operands:
            out.setdefault(o, []).append(i)
    return out


def _utilizations(a, comp: Computation, each: dict) -> dict[int, float]:
    """How many times a fusion computes each of its instructions per output element (XLA's GPU
    model: an elementwise op is recomputed for every non-elementwise user that reads it; other
    users read what their own operands' utilization says), from the root to the parameters."""
    util = {i.id: 0.0 for i in comp.instructions}
    roots: dict[int, set] = {i.id: set() for i in comp.instructions}
    root_util = dict.fromkeys(util, 0.0)
    root_util[comp.root] = 1.0
    roots.setdefault(comp.root, set()).add(comp.root)
    for ins in _users_first(comp):
        u = sum(root_util.get(r, 0.0) for r in roots[ins.id])
        util[ins.id] = u
        spreads = ins.opcode in ELEMENTWISE or ins.opcode in _SPREAD
        for k, o in enumerate(ins.operands):
            if o not in roots:
                continue
            if spreads:
                roots[o] |= roots[ins.id]
            else:
                roots[o].add(o)
                share = u * each[ins.id].util.get(k, 1.0)
                n = a.by_id[o].shape.elements_recursive
                root_util[o] += math.ceil(share * n) / n if n else 0.0
    return util


def _users_first(comp: Computation) -> list[Instruction]:
    """The computation's instructions, each after every instruction that uses it."""
    pending = {i.id: 0 for i in comp.instructions}
    for i in comp.instructions:
        for o in set(i.operands):
            if o in pending:
                pending[o] += 1
    by_id = {i.id: i for i in comp.instructions}
    ready = [i for i in comp.instructions if pending[i.id] == 0]
    out = []
    while ready:
        ins = ready.pop()
        out.append(ins)
        for o in set(ins.operands):
            if o in pending:
                pending[o] -= 1
                if pending[o] == 0:
                    ready.append(by_id[o])
    return out
