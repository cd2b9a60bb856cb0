"""Each XLA module's cost per instruction: FLOPs, and bytes read and written, counted from its
optimized HLO the way XLA's GPU cost analysis counts them (the model behind XProf's op profile
and roofline): dots and convolutions (padding-aware, grouped), cuBLAS and cuDNN custom calls
through their backend config, fusions (their instructions' FLOPs as often as the fusion
computes them, bytes at the fusion's boundary), reductions, and elementwise ops at a measured
cost per element (read/hlo_op_cost.py). Modules run by XLA:CPU are counted as XLA's own
(target-free) cost analysis counts them: one FLOP per element of an elementwise op, none for a
transcendental (which it counts apart), a fusion's instructions once each."""

from __future__ import annotations

import json
import math

from tftrace.model.cost import ModuleCost, OpCost
from tftrace.read.hlo_fusion_cost import fusion
from tftrace.read.hlo_op_cost import PRICED, TRANSCENDENTAL, flops_per_element
from tftrace.read.hlo_shapes import Computation, Instruction, Shape, read_computations
from tftrace.read.wire import Field, WireFile

_FMA = 2  # FLOPs per multiply-add
_GEMMS = ("__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8")
_CONVS = "__cudnn$conv"
# Instructions that pass pointers along and touch no memory.
_NO_BYTES = {"parameter", "constant", "get-tuple-element", "bitcast", "domain", "after-all", "add-dependency"}


class _Props:
    """One instruction's cost properties, as XLA's cost analysis keeps them."""

    __slots__ = ("flops", "bytes", "out", "opnd", "util", "moved")

    def __init__(self):
        self.moved: tuple[float, float] | None = None  # control flow: (read, written) of what it runs
        self.flops = 0.0
        self.bytes = 0.0
        self.out: dict[tuple, float] = {}  # output shape index -> bytes written
        self.opnd: dict[tuple, float] = {}  # (operand, shape index) -> bytes read
        self.util: dict[int, float] = {}  # operand -> the share of its elements read


def module_cost(wf: WireFile, module: Field, program: int, gpu: bool = True) -> ModuleCost:
    """The cost of each instruction of a module (an `HloModuleProto` field) that runs on its own,
    and of one run of the whole module; `gpu`: with XLA's GPU model, else its target-free one."""
    name, comps, entry = read_computations(wf, module)
    return _Analysis(comps, gpu).module(name, program, entry)


class _Analysis:
    def __init__(self, comps: dict[int, Computation], gpu: bool = True):
        self.comps = comps
        self.gpu = gpu
        self.by_id = {i.id: i for c in comps.values() for i in c.instructions}
        self._subs: dict[int, tuple[_Props, dict[int, _Props]]] = {}

    def module(self, name: str, program: int, entry: int | None) -> ModuleCost:
        if entry not in self.comps:
            entry = next(reversed(self.comps), None)
        if entry is None:
            return ModuleCost(name, program)
        ops: dict[str, OpCost] = {}
        unknown = set()
        for cid in self._runnable(entry):
            for ins in self.comps[cid].instructions:
                p = self.visit(ins)
                if ins.opcode == "custom-call" and p.flops < 0:
                    unknown.add(ins.name)
                ops[ins.name] = self._cost(ins, p)
        total = OpCost()
        for ins in self.comps[entry].instructions:
            total = total.plus(ops[ins.name])
        names = frozenset(i.name for i in self.comps[entry].instructions)
        return ModuleCost(name, program, ops, total, names, frozenset(unknown), "gpu" if self.gpu else "cpu")

    def _runnable(self, entry: int) -> list[int]:
        """The entry computation and those its control flow runs (loop bodies, branches, calls,
        async work): not the ones fused into a fusion or applied by a reduction."""
        seen, todo = [], [entry]
        while todo:
            cid = todo.pop()
            if cid in seen or cid not in self.comps:
                continue
            seen.append(cid)
            for ins in self.comps[cid].instructions:
                if ins.opcode in ("while", "conditional", "call", "async-start") or ins.opcode.endswith("-start"):
                    todo.extend(ins.calls)
        return seen

    # -- one instruction ---------------------------------------------------------------------

    def visit(self, ins: Instruction) -> _Props:
        p = self._preprocess(ins)
        handler = _HANDLERS.get(ins.opcode)
        if handler is not None:
            handler(self, ins, p)
        elif ins.opcode in PRICED:
            if self.gpu:
                p.flops = flops_per_element(ins.opcode, ins.shape.type) * ins.shape.elements_recursive
            elif ins.opcode not in TRANSCENDENTAL:
                p.flops = float(ins.shape.elements)
        return p

    def _preprocess(self, ins: Instruction) -> _Props:
        p = _Props()
        size = ins.shape.size()
        p.bytes = float(size)
        p.out[()] = float(size)
        for k, o in enumerate(ins.operands):
            s = self._shape(o).size()
            p.bytes += s
            p.opnd[(k, ())] = float(s)
            p.util[k] = 1.0
        return p

    def _shape(self, iid: int) -> Shape:
        ins = self.by_id.get(iid)
        return ins.shape if ins is not None else Shape(0, (), None, False)

    def _cost(self, ins: Instruction, p: _Props) -> OpCost:
        """Flops, bytes read (each operand's leaves) and bytes written (each output leaf), with
        XLA's -1 (unknown) as 0; a library call's written bytes are its real output's."""
        if p.moved is not None:
            return OpCost(max(p.flops, 0.0), *p.moved)
        read = 0.0
        for k, o in enumerate(ins.operands):
            for index, _leaf in self._shape(o).leaves():
                read += p.opnd.get((k, index), 0.0)
        written = sum(p.out.get(index, 0.0) for index, _leaf in ins.shape.leaves())
        if ins.opcode == "custom-call" and ins.shape.tuple and (ins.target.startswith(_CONVS) or ins.target in _GEMMS):
            written = float(ins.shape.tuple[0].size())
        return OpCost(max(p.flops, 0.0), max(read, 0.0), max(written, 0.0))

    def sub(self, cid: int) -> tuple[_Props, dict[int, _Props]]:
        """A called computation's summed properties and each of its instructions' (memoized)."""
        if cid not in self._subs:
            total, each = _Props(), {}
            for ins in self.comps[cid].instructions if cid in self.comps else ():
                p = self.visit(ins)
                each[ins.id] = p
                total.flops += p.flops
                total.bytes += p.bytes
            self._subs[cid] = (total, each)
        return self._subs[cid]

    def handle(self, ins: Instruction, p: _Props) -> None:
        """Cost `ins` into `p` by its opcode's handler (a custom fusion is costed as its gather
        or scatter)."""
        _HANDLERS[ins.opcode](self, ins, p)

    def sub_flops(self, ins: Instruction, k: int = 0) -> float:
        return self.sub(ins.calls[k])[0].flops if len(ins.calls) > k else 0.0


def _no_bytes(a: _Analysis, ins: Instruction, p: _Props) -> None:
    p.bytes = 0.0
    p.out = {(): 0.0}
    p.opnd = {k: 0.0 for k in p.opnd}


def _dot(a: _Analysis, ins: Instruction, p: _Props) -> None:
    p.flops = _dot_flops(a._shape(ins.operands[0]), ins.shape, ins.dot.get(1, []))


def _dot_flops(lhs: Shape, out: Shape, contracting: list[int]) -> float:
    width = 1
    for d in contracting:
        width *= lhs.dims[d] if 0 <= d < len(lhs.dims) else 1
    return float(_FMA * out.elements * width)


def _convolution(a: _Analysis, ins: Instruction, p: _Props) -> None:
    out = ins.shape.tuple[0] if ins.shape.tuple else ins.shape
    p.flops = conv_flops(ins, a._shape(ins.operands[0]), a._shape(ins.operands[1]), out)


def conv_flops(ins: Instruction, lhs: Shape, rhs: Shape, out: Shape) -> float:
    """A convolution's multiply-adds x 2, counting only the window positions that land inside
    the input (padding and dilation aware), as XLA does."""
    dn = ins.conv
    cin = _dim(lhs, dn.get(8, [0])[0])
    cout = _dim(out, dn.get(10, [0])[0])
    batch = _dim(lhs, dn.get(7, [0])[0])
    window = ins.window or [(1, 1, 0, 0, 1, 1)]
    kernel_dims, in_dims, out_dims = dn.get(6, []), dn.get(11, []), dn.get(12, [])
    positions = 1
    for s, (size, stride, low, high, w_dil, b_dil) in enumerate(window):
        k_lim = _dim(rhs, kernel_dims[s]) if s < len(kernel_dims) else 1
        o_lim = _dim(out, out_dims[s]) if s < len(out_dims) else 1
        i_lim = _dim(lhs, in_dims[s]) if s < len(in_dims) else 1
        positions *= _valid_positions(k_lim, o_lim, i_lim, stride, low, high, w_dil, b_dil)
    fma = (cin // max(ins.groups, 1)) * cout * (batch // max(ins.batch_groups, 1)) * positions
    return float(fma * _FMA)


def _dim(shape: Shape, d: int) -> int:
    return shape.dims[d] if 0 <= d < len(shape.dims) else 1


def _valid_positions(k_lim, o_lim, i_lim, stride, low, high, w_dil, b_dil) -> int:
    """(kernel point, output point) pairs of one spatial dimension that read a real input element."""
    if i_lim == o_lim and k_lim == o_lim and i_lim == b_dil and w_dil == 1 and max(1, i_lim - 1) == stride \
            and low == 0 and high == 0:
        return i_lim
    if i_lim == 1 and k_lim == o_lim and w_dil == 1 and b_dil == 1 and stride == 1 and high == o_lim - 1 \
            and low == o_lim - 1:
        return o_lim
    count = 0
    for k in range(k_lim):
        if stride == 1 and b_dil == 1:
            base = low - k * w_dil
            count += max(min(i_lim + base, o_lim) - max(base, 0), 0)
            continue
        for o in range(o_lim):
            undilated = o * stride - low + k * w_dil
            index = undilated // b_dil if b_dil > 1 else undilated
            if undilated != index * b_dil or not 0 <= index < i_lim:
                continue
            count += 1
    return count


def _custom_call(a: _Analysis, ins: Instruction, p: _Props) -> None:
    if ins.target in _GEMMS:
        out = ins.shape.tuple[0] if ins.shape.tuple else ins.shape
        p.flops = _dot_flops(a._shape(ins.operands[0]), out, _gemm_contracting(ins.config))
        return
    if ins.target.startswith(_CONVS):
        _convolution(a, ins, p)
        if ins.shape.tuple:  # (result, scratch): only the result counts as written
            size = float(ins.shape.tuple[0].size())
            p.bytes += size - p.out.get((), 0.0)
            p.out[()] = size
        return
    # A call XLA cannot see into: unknown (-1), which XProf shows as 0.
    p.flops, p.bytes = -1.0, -1.0
    p.out = {(): -1.0}
    p.opnd = {k: -1.0 for k in p.opnd}


def _gemm_contracting(config: bytes) -> list[int]:
    """The lhs contracting dimensions in a cuBLAS call's backend config (JSON)."""
    try:
        data = json.loads(config or b"{}")
        dims = data.get("gemm_backend_config", {}).get("dot_dimension_numbers", {}).get("lhs_contracting_dimensions")
        return [int(d) for d in dims or []]
    except (ValueError, TypeError, AttributeError):
        return []


def _reduce(a: _Analysis, ins: Instruction, p: _Props) -> None:
    out = ins.shape if ins.shape.is_array() else (ins.shape.tuple[0] if ins.shape.tuple else ins.shape)
    count = a._shape(ins.operands[0]).elements - out.elements
    p.flops = a.sub_flops(ins) * count


def _reduce_window(a: _Analysis, ins: Instruction, p: _Props) -> None:
    window = ins.window
    elements = 1
    for d in window:
        elements *= d[0]
    out = ins.shape if ins.shape.tuple is None else ins.shape.tuple[0]
    count = (elements - 1) * out.elements
    reducing = [d for d in window if d[0] != 1]
    padded = [d for d in window if d[2] != 0 or d[3] != 0]
    if len(reducing) == 1 and len(padded) == 1 and ins.shape.tuple is None:
        # A reduction broadcast back over one dimension (a cumulative sum's window): XLA counts it
        # as the reduction it is.
        for axis, d in enumerate(window):
            size, low, high = d[0], d[2], d[3]
            if size != 1 and low != 0 and high != 0 and low == high and size == 2 * low + 1:
                if low == ins.shape.dims[axis] - 1:
                    span = ins.shape.dims[axis]
                    count = out.elements // span + span - 1
                break
    p.flops = a.sub_flops(ins) * count


def _select_and_scatter(a: _Analysis, ins: Instruction, p: _Props) -> None:
    source = a._shape(ins.operands[1]).elements if len(ins.operands) > 1 else 0
    elements = 1
    for d in ins.window:
        elements *= d[0]
    p.flops = a.sub_flops(ins, 0) * source * (elements - 1) + a.sub_flops(ins, 1) * source


def _scatter(a: _Analysis, ins: Instruction, p: _Props) -> None:
    n = (len(ins.operands) - 1) // 2
    updates = ins.operands[n + 1:]
    total = 0.0
    for i, u in enumerate(updates):
        size = float(a._shape(u).size())
        p.opnd[(i, ())] = size
        p.opnd[(n + 1 + i, ())] = size
        total += size
    indices = float(a._shape(ins.operands[n]).size()) if n < len(ins.operands) else 0.0
    p.opnd[(n, ())] = indices
    p.bytes = total * 3 + indices
    p.out[()] = total
    p.flops = a.sub_flops(ins) * (a._shape(updates[0]).elements if updates else 0)


def _gather(a: _Analysis, ins: Instruction, p: _Props) -> None:
    size = float(ins.shape.size())
    indices = float(a._shape(ins.operands[1]).size()) if len(ins.operands) > 1 else 0.0
    p.bytes = size * 2 + indices
    p.opnd[(0, ())] = size
    p.opnd[(1, ())] = indices
    p.util[0] = ins.shape.elements / max(a._shape(ins.operands[0]).elements, 1)
    p.out[()] = size


def _slice(a: _Analysis, ins: Instruction, p: _Props) -> None:
    size = float(ins.shape.size())
    p.bytes = size * 2
    p.out[()] = size
    p.opnd[(0, ())] = size
    p.util[0] = ins.shape.elements / max(a._shape(ins.operands[0]).elements, 1)


def _dynamic_slice(a: _Analysis, ins: Instruction, p: _Props) -> None:
    size = float(ins.shape.size())
    index = float(a._shape(ins.operands[1]).size()) if len(ins.operands) > 1 else 0.0
    p.bytes = size * 2 + index
    p.out[()] = size
    p.opnd[(0, ())] = size
    p.opnd[(1, ())] = index
    p.util[0] = ins.shape.elements / max(a._shape(ins.operands[0]).elements, 1)


def _dynamic_update_slice(a: _Analysis, ins: Instruction, p: _Props) -> None:
    update = float(a._shape(ins.operands[1]).size())
    index = float(a._shape(ins.operands[2]).size()) if len(ins.operands) > 2 else 0.0
    p.bytes = update * 2 + index
    p.out[()] = update
    p.opnd[(0, ())] = 0.0
    p.opnd[(1, ())] = update
    p.opnd[(2, ())] = index
    total = max(ins.shape.elements, 1)
    p.util[0] = (ins.shape.elements - a._shape(ins.operands[1]).elements) / total


def _tuple(a: _Analysis, ins: Instruction, p: _Props) -> None:
    size = float(ins.shape.size())
    p.bytes = size
    p.out[()] = size
    p.opnd = {k: 0.0 for k in p.opnd}


def _concatenate(a: _Analysis, ins: Instruction, p: _Props) -> None:
    """As XLA's GPU model: a compare and a branch per element; where a warp straddles two
    operands (a minor dimension not a multiple of 32) both branches run, priced far higher."""
    if not a.gpu:
        return
    elements = ins.shape.elements
    p.flops = 6.0 * elements
    dim = ins.dims[0] if ins.dims else 0
    if dim == 0:
        return
    for k, o in enumerate(ins.operands):
        size = _dim(a._shape(o), dim)
        rounded = -(-size // 32) * 32
        p.util[k] = rounded / size if size else 1.0
        if size < rounded:
            p.flops = 400.0 * elements


def _map(a: _Analysis, ins: Instruction, p: _Props) -> None:
    p.flops = a.sub_flops(ins) * ins.shape.elements


def _sort(a: _Analysis, ins: Instruction, p: _Props) -> None:
    n = a._shape(ins.operands[0]).elements if ins.operands else 0
    p.flops = float(n * math.ceil(math.log2(n))) if n > 1 else 0.0


def _fft(a: _Analysis, ins: Instruction, p: _Props) -> None:
    shape = a._shape(ins.operands[0]) if ins.operands else ins.shape
    real = shape.tuple[0] if shape.tuple else shape
    factors = 1
    for n in ins.fft:
        factors *= max(int(math.log2(n)), 0) if n > 0 else 0
    p.flops = float(_FMA * 4 * factors * real.elements)


def _while(a: _Analysis, ins: Instruction, p: _Props) -> None:
    """One iteration of its body and condition (the trip count is not in the HLO)."""
    p.flops = p.bytes = 0.0
    read = written = 0.0
    for cid in ins.calls:
        total, each = a.sub(cid)
        p.flops += total.flops
        p.bytes += total.bytes
        for inner in a.comps[cid].instructions if cid in a.comps else ():
            c = a._cost(inner, each[inner.id])
            read, written = read + c.read, written + c.written
    p.moved = (read, written)


def _call(a: _Analysis, ins: Instruction, p: _Props) -> None:
    _while(a, ins, p)


def _conditional(a: _Analysis, ins: Instruction, p: _Props) -> None:
    """The costliest branch's figures."""
    best = (0.0, 0.0)
    for cid in ins.calls:
        total, _each = a.sub(cid)
        best = (max(best[0], total.flops), max(best[1], total.bytes))
    p.flops, p.bytes = best


def _all_reduce(a: _Analysis, ins: Instruction, p: _Props) -> None:
    out = sum(leaf.size() for _i, leaf in ins.shape.leaves())
    p.out[()] = float(out)
    p.bytes = float(out + sum(a._shape(o).size() for o in ins.operands))
    root = None
    if ins.calls and ins.calls[0] in a.comps:
        comp = a.comps[ins.calls[0]]
        root = next((i for i in comp.instructions if i.id == comp.root), None)
    if root is not None and not a.gpu:
        p.flops = float(ins.shape.elements_recursive)
    elif root is not None:
        p.flops = flops_per_element(root.opcode, ins.shape.type if ins.shape.tuple is None else
                                    ins.shape.tuple[0].type) * ins.shape.elements_recursive


_HANDLERS = {
    "dot": _dot, "convolution": _convolution, "custom-call": _custom_call, "reduce": _reduce,
    "reduce-window": _reduce_window, "select-and-scatter": _select_and_scatter, "scatter": _scatter,
    "gather": _gather, "slice": _slice, "dynamic-slice": _dynamic_slice, "dynamic-update-slice": _dynamic_update_slice,
    "tuple": _tuple, "concatenate": _concatenate, "map": _map, "sort": _sort, "fft": _fft, "while": _while,
    "call": _call, "conditional": _conditional, "all-reduce": _all_reduce, "all-reduce-start": _all_reduce,
    "fusion": fusion, **{op: _no_bytes for op in _NO_BYTES},
}
