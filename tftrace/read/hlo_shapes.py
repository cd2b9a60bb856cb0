"""An XLA module's computations and instructions as the cost model needs them (opcode, shape,
operands, called computations, window, dimension numbers, custom-call target), read field by
field from an `xla.HloModuleProto` in a trace; constant literals are skipped by their length."""

from __future__ import annotations

from tftrace.read import native
from tftrace.read.wire import Field, WireFile, fields

# Field numbers (hlo.proto, xla_data.proto).
_MODULE_NAME, _MODULE_COMPUTATIONS, _MODULE_ENTRY = 1, 3, 6
_COMP_INSTRUCTIONS, _COMP_ID, _COMP_ROOT = 2, 5, 6
_I_NAME, _I_OPCODE, _I_SHAPE, _I_PARAMETER, _I_KIND, _I_TUPLE_INDEX, _I_DIMS = 1, 2, 3, 9, 11, 13, 14
_I_WINDOW, _I_CONV, _I_TARGET, _I_DOT, _I_FFT, _I_ID, _I_OPERANDS, _I_CALLS = 15, 16, 28, 30, 32, 35, 36, 38
_I_CONFIG, _I_GROUPS, _I_BATCH_GROUPS = 43, 50, 58
_SHAPE_TYPE, _SHAPE_DIMS, _SHAPE_TUPLE, _SHAPE_LAYOUT = 2, 3, 4, 5
_LAYOUT_ELEMENT_BITS, _LAYOUT_MEMORY_SPACE = 7, 8
_BIG = 1 << 20  # an instruction longer than this holds a literal: walked in the file, never read whole

TUPLE, OPAQUE, TOKEN = 13, 14, 17
# Bits per element of each xla.PrimitiveType (PRED is stored in a byte).
_BITS = {1: 8, 30: 1, 31: 1, 26: 2, 27: 2, 21: 4, 22: 4, 32: 4, 2: 8, 6: 8, 19: 8, 20: 8, 23: 8, 24: 8, 25: 8,
         28: 8, 29: 8, 33: 8, 3: 16, 7: 16, 10: 16, 16: 16, 4: 32, 8: 32, 11: 32, 5: 64, 9: 64, 12: 64, 15: 64,
         18: 128}
TYPE_NAMES = {1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64", 10: "f16",
              11: "f32", 12: "f64", 15: "c64", 16: "bf16", 18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4",
              22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 28: "f8e4m3", 29: "f8e3m4",
              32: "f4e2m1fn", 33: "f8e8m0fnu"}


class Shape:
    """An array (element type and dimensions) or a tuple of shapes; `layout`: whether it has
    one (XLA counts no bytes for a shape without)."""

    __slots__ = ("type", "dims", "tuple", "layout", "_size")

    def __init__(self, type_: int, dims: tuple, tuple_: tuple | None, layout: bool):
        self.type, self.dims, self.tuple, self.layout = type_, dims, tuple_, layout
        self._size = -1

    @property
    def elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def elements_recursive(self) -> int:
        return sum(s.elements_recursive for s in self.tuple) if self.tuple is not None else self.elements

    def is_array(self) -> bool:
        return self.tuple is None and self.type not in (TUPLE, OPAQUE, TOKEN)

    def size(self) -> int:
        """Bytes, as XLA's default shape size counts them: a tuple is its table of 8-byte pointers."""
        if self._size < 0:
            self._size = self._bytes()
        return self._size

    def _bytes(self) -> int:
        if not self.has_layout():
            return 0
        if self.tuple is not None:
            return 8 * len(self.tuple)
        if self.type == TOKEN:
            return 0
        if self.type == OPAQUE:
            return 8
        return -(-self.elements * _BITS.get(self.type, 32) // 8)

    def has_layout(self) -> bool:
        return all(s.has_layout() for s in self.tuple) if self.tuple is not None else self.layout

    def leaves(self, index: tuple = ()):
        """(index, array shape) of every array inside, depth first."""
        if self.tuple is None:
            yield index, self
        else:
            for i, s in enumerate(self.tuple):
                yield from s.leaves(index + (i,))

    def subshapes(self, index: tuple = ()):
        """(index, shape) of itself and everything inside, depth first (XLA's ForEachSubshape)."""
        yield index, self
        if self.tuple is not None:
            for i, s in enumerate(self.tuple):
                yield from s.subshapes(index + (i,))

    def at(self, index: tuple) -> "Shape":
        s = self
        for i in index:
            s = s.tuple[i]
        return s


class Instruction:
    """What the cost model reads of one HLO instruction."""

    __slots__ = ("name", "opcode", "shape", "id", "operands", "calls", "parameter", "kind", "tuple_index", "dims",
                 "window", "conv", "dot", "groups", "batch_groups", "target", "config", "fft")

    def __init__(self):
        self.name = self.opcode = self.kind = self.target = ""
        self.shape = Shape(0, (), None, False)
        self.id = self.parameter = self.tuple_index = -1
        self.operands, self.calls, self.dims, self.fft = [], [], [], []
        self.window: list[tuple] = []  # per dimension (size, stride, pad_low, pad_high, window_dilation, base_dilation)
        self.conv: dict = {}
        self.dot: dict = {}
        self.groups = self.batch_groups = 1
        self.config = b""


class Computation:
    __slots__ = ("id", "instructions", "root")

    def __init__(self, cid: int, instructions: list, root: int):
        self.id, self.instructions, self.root = cid, instructions, root


def read_computations(wf: WireFile, module: Field) -> tuple[str, dict[int, Computation], int | None]:
    """A module's name, its computations by id and its entry computation's id."""
    name, entry, comps = "", None, {}
    for f in fields(wf, module.start, module.end):
        if f.number == _MODULE_NAME:
            name = wf.read(f.start, f.end - f.start).decode("utf-8", "replace")
        elif f.number == _MODULE_ENTRY:
            entry = wf.varint(f.start)[0]
        elif f.number == _MODULE_COMPUTATIONS:
            comp = _computation(wf, f)
            comps[comp.id] = comp
    return name, comps, entry


def _computation(wf: WireFile, c: Field) -> Computation:
    if c.end - c.start <= _BIG:  # read whole, its instructions sliced from it
        buf = wf.read(c.start, c.end - c.start)
        cid = root = -1
        instructions = []
        for number, _wire, start, end in _fields(buf):
            if number == _COMP_INSTRUCTIONS:
                instructions.append(_instruction(buf[start:end]))
            elif number == _COMP_ID:
                cid = _varint(buf, start)[0]
            elif number == _COMP_ROOT:
                root = _varint(buf, start)[0]
        return _finished(cid, instructions, root)
    cid, root, instructions = -1, -1, []
    for f in fields(wf, c.start, c.end):
        if f.number == _COMP_INSTRUCTIONS:
            if f.end - f.start <= _BIG:
                instructions.append(_instruction(wf.read(f.start, f.end - f.start)))
            else:  # a constant holding a large literal: its other fields, the literal skipped unread
                small = b"".join(wf.read(g.tag_start, g.end - g.tag_start) for g in fields(wf, f.start, f.end)
                                 if g.number != 8)
                instructions.append(_instruction(small))
        elif f.number == _COMP_ID:
            cid = wf.varint(f.start)[0]
        elif f.number == _COMP_ROOT:
            root = wf.varint(f.start)[0]
    return _finished(cid, instructions, root)


def _finished(cid: int, instructions: list, root: int) -> Computation:
    if root < 0 and instructions:
        root = instructions[-1].id
    return Computation(cid, instructions, root)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _fields(buf: bytes) -> list:
    """(number, wire type, start, end) of each field of a message held in `buf`."""
    if native.events is not None:
        found = native.events.fields(buf, 0)
        if found is not None:
            return [(number, buf[tag_start] & 7, start, end) for number, tag_start, start, end in found]
    return list(_walk(buf))


def _walk(buf: bytes):
    pos, end = 0, len(buf)
    while pos < end:
        tag, pos = _varint(buf, pos)
        wire = tag & 7
        if wire == 0:
            _v, after = _varint(buf, pos)
            yield tag >> 3, 0, pos, after
            pos = after
        elif wire == 2:
            length, pos = _varint(buf, pos)
            yield tag >> 3, 2, pos, pos + length
            pos += length
        else:
            width = 8 if wire == 1 else 4
            yield tag >> 3, wire, pos, pos + width
            pos += width


def _ints(buf: bytes, wire: int, start: int, end: int) -> list[int]:
    """A repeated int64 field's values: one varint, or packed varints."""
    if wire == 0:
        return [_signed(_varint(buf, start)[0])]
    out, pos = [], start
    while pos < end:
        v, pos = _varint(buf, pos)
        out.append(_signed(v))
    return out


def _text(buf: bytes, start: int, end: int) -> str:
    return buf[start:end].decode("utf-8", "replace")


_WANTED = frozenset({_I_NAME, _I_OPCODE, _I_SHAPE, _I_ID, _I_OPERANDS, _I_CALLS, _I_PARAMETER, _I_KIND,
                     _I_TUPLE_INDEX, _I_DIMS, _I_WINDOW, _I_CONV, _I_DOT, _I_GROUPS, _I_BATCH_GROUPS, _I_TARGET,
                     _I_CONFIG, _I_FFT})


def _instruction(buf: bytes) -> Instruction:
    ins = Instruction()
    for number, wire, start, end in _fields(buf):
        if number not in _WANTED:  # metadata, frontend attributes...: not needed
            continue
        if number == _I_NAME:
            ins.name = _text(buf, start, end)
        elif number == _I_OPCODE:
            ins.opcode = _text(buf, start, end)
        elif number == _I_SHAPE:
            ins.shape = _shape(buf[start:end])
        elif number == _I_ID:
            ins.id = _varint(buf, start)[0]
        elif number == _I_OPERANDS:
            ins.operands += _ints(buf, wire, start, end)
        elif number == _I_CALLS:
            ins.calls += _ints(buf, wire, start, end)
        elif number == _I_PARAMETER:
            ins.parameter = _varint(buf, start)[0]
        elif number == _I_KIND:
            ins.kind = _text(buf, start, end)
        elif number == _I_TUPLE_INDEX:
            ins.tuple_index = _varint(buf, start)[0]
        elif number == _I_DIMS:
            ins.dims += _ints(buf, wire, start, end)
        elif number == _I_WINDOW:
            sub = buf[start:end]
            ins.window = [_window_dim(sub[s:e]) for n, _w, s, e in _fields(sub) if n == 1]
        elif number == _I_CONV:
            ins.conv = _numbers(buf[start:end])
        elif number == _I_DOT:
            ins.dot = _numbers(buf[start:end])
        elif number == _I_GROUPS:
            ins.groups = _varint(buf, start)[0] or 1
        elif number == _I_BATCH_GROUPS:
            ins.batch_groups = _varint(buf, start)[0] or 1
        elif number == _I_TARGET:
            ins.target = _text(buf, start, end)
        elif number == _I_CONFIG and ins.opcode == "custom-call":
            ins.config = buf[start:end]
        elif number == _I_FFT:
            ins.fft += _ints(buf, wire, start, end)
    return ins


def _numbers(buf: bytes) -> dict[int, list[int]]:
    """A message of int64 fields (dimension numbers) as {field: [values]}."""
    out: dict[int, list[int]] = {}
    for number, wire, start, end in _fields(buf):
        out.setdefault(number, []).extend(_ints(buf, wire, start, end))
    return out


def _window_dim(buf: bytes) -> tuple:
    v = {n: _signed(_varint(buf, s)[0]) for n, w, s, _e in _fields(buf) if w == 0}
    return (v.get(1, 0), v.get(2, 1) or 1, v.get(3, 0), v.get(4, 0), v.get(5, 1) or 1, v.get(6, 1) or 1)


_SHAPES: dict[bytes, Shape] = {}  # shapes repeat across instructions and modules: each parsed once


def _shape(buf: bytes) -> Shape:
    found = _SHAPES.get(buf)
    if found is None:
        if len(_SHAPES) > 1 << 16:
            _SHAPES.clear()
        found = _SHAPES[buf] = _parse_shape(buf)
    return found


def _parse_shape(buf: bytes) -> Shape:
    type_, dims, tuple_, layout = 0, [], None, False
    for number, wire, start, end in _fields(buf):
        if number == _SHAPE_TYPE:
            type_ = _varint(buf, start)[0]
        elif number == _SHAPE_DIMS:
            dims += _ints(buf, wire, start, end)
        elif number == _SHAPE_TUPLE:
            tuple_ = (tuple_ or ()) + (_shape(buf[start:end]),)
        elif number == _SHAPE_LAYOUT:
            layout = True
    if type_ == TUPLE and tuple_ is None:
        tuple_ = ()
    return Shape(type_, tuple(dims), tuple_, layout)
