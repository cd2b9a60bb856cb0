"""What each XLA module's HLO says of its instructions: the framework's scope path (JAX's
`jit(train_step)/jvp(dense)/dot_general`) behind every op XLA:CPU runs, read from the
`/host:metadata` plane field by field.

The plane holds one event metadata per compiled module (`jit_train_step(24)`), whose stat
`Hlo Proto` is an `xla.HloProto`. Only names, opcodes and `metadata.op_name` are read, and only
from the modules' entry computations (the instructions XLA:CPU runs as thunks) and, for an
instruction whose own metadata is empty, the computations it calls. Everything else (shapes,
constant literals of hundreds of MB where a jitted function closes over a large array) is
skipped by its length, never read.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from tftrace.model.cost import ModuleCost
from tftrace.model.names import in_optimizer
from tftrace.read import native
from tftrace.read.hlo_cost import module_cost
from tftrace.read.wire import Field, WireError, WireFile, fields

# Field numbers: xplane.proto (XPlane, XEventMetadata, XStat, XStatMetadata) and hlo.proto
# (HloProto, HloModuleProto, HloComputationProto, HloInstructionProto, xla.OpMetadata).
_PLANE_EVENT_METADATA, _PLANE_STAT_METADATA = 4, 5
_MAP_KEY, _MAP_VALUE = 1, 2
_EVENT_MD_NAME, _EVENT_MD_STATS = 2, 5
_STAT_MD_ID, _STAT_MD_NAME = 1, 2
_STAT_ID, _STAT_UINT64, _STAT_INT64, _STAT_BYTES = 1, 3, 4, 6
_HLO_MODULE = 1
_MODULE_NAME, _MODULE_COMPUTATIONS, _MODULE_ENTRY_ID, _MODULE_FRAMES = 1, 3, 6, 17
# xla.StackFrameIndexProto: file_names, function_names, file_locations, stack_frames.
_FRAME_FILES, _FRAME_FUNCTIONS, _FRAME_LOCATIONS, _FRAME_FRAMES = 1, 2, 3, 4
_LOCATION_FILE, _LOCATION_FUNCTION, _LOCATION_LINE = 1, 2, 3
_FRAME_LOCATION, _FRAME_PARENT = 1, 2
CHAIN = " < "  # between the frames of a stack, innermost first
_DEPTH = 24  # frames kept per stack: the owner is among the innermost
_PACKAGES = ("site-packages/", "dist-packages/")


def _short(path: str) -> str:
    """A package's file by its path inside the package; the user's file by its name."""
    for marker in _PACKAGES:
        if marker in path:
            return path.split(marker, 1)[1]
    return path.rsplit("/", 1)[-1]
_COMPUTATION_INSTRUCTIONS, _COMPUTATION_ID = 2, 5
_INSTRUCTION_NAME, _INSTRUCTION_OPCODE, _INSTRUCTION_METADATA, _INSTRUCTION_ID, _INSTRUCTION_OPERANDS, _INSTRUCTION_CALLS = 1, 2, 7, 35, 36, 38
_METADATA_OP_NAME, _METADATA_FRAME = 2, 15

_PROGRAM = re.compile(r"\((\d+)\)\Z")  # `jit_train_step(24)`: the module's program id


@dataclass(frozen=True)
class Module:
    """One compiled XLA module: its name and, per instruction of its entry computation, the
    framework's scope path ("" where the HLO has none) and the Python that made it. Those two are
    read from the file on first use, while it is open: a trace's metadata holds every module
    compiled, most never seen running in the window."""

    name: str
    program_id: int
    proto: Field | None = None  # where its HloModuleProto lies in the file: costed (module_cost_of) once seen to run
    wf: WireFile | None = field(default=None, repr=False, compare=False)

    @cached_property
    def _read(self) -> tuple[dict, dict]:
        if self.proto is None or self.wf is None:
            return {}, {}
        try:
            return _module(self.wf, self.proto)
        except (WireError, UnicodeDecodeError):  # an HLO that does not parse: its ops keep the thunks' names
            return {}, {}

    @property
    def sources(self) -> dict:
        """Instruction name -> op_name."""
        return self._read[0]

    @property
    def code(self) -> dict:
        """Instruction name -> the Python stack that made it (Frames.text)."""
        return self._read[1]


def read_modules(wf: WireFile, plane: list[Field]) -> dict[int, Module]:
    """The modules of a `/host:metadata` plane (its top-level fields), by program id."""
    stat_ids = _stat_ids(wf, plane)
    hlo_id = stat_ids.get("Hlo Proto")
    program_stat = stat_ids.get("program_id")
    out: dict[int, Module] = {}
    if hlo_id is None:
        return out
    for entry in (f for f in plane if f.number == _PLANE_EVENT_METADATA):
        value = next((f for f in fields(wf, entry.start, entry.end) if f.number == _MAP_VALUE), None)
        if value is None:
            continue
        name, proto, program = "", None, None
        for f in fields(wf, value.start, value.end):
            if f.number == _EVENT_MD_NAME:
                name = wf.read(f.start, f.end - f.start).decode("utf-8", "replace")
            elif f.number == _EVENT_MD_STATS:
                sid, payload = _stat(wf, f)
                if sid == hlo_id and isinstance(payload, Field):
                    proto = payload
                elif sid == program_stat and isinstance(payload, int):
                    program = payload
        if proto is None:
            continue
        if program is None:
            m = _PROGRAM.search(name)
            program = int(m.group(1)) if m else -1 - len(out)
        module = next((f for f in fields(wf, proto.start, proto.end) if f.number == _HLO_MODULE), None)
        module_name = _module_name(wf, module) if module is not None else ""
        out[program] = Module(module_name or _PROGRAM.sub("", name), program, module, wf)
    return out


def module_cost_of(wf: WireFile, module: Module, gpu: bool) -> ModuleCost | None:
    """What each instruction of a module costs, with XLA's GPU cost model (`gpu`) or its
    target-free one (XLA:CPU); None where its HLO holds what the cost model cannot read (the
    module's names and scopes stand without it)."""
    if module.proto is None:
        return None
    try:
        return module_cost(wf, module.proto, module.program_id, gpu)
    except (WireError, IndexError, KeyError, ValueError, TypeError, AttributeError, ZeroDivisionError, OverflowError,
            RecursionError):
        return None


def _stat_ids(wf: WireFile, plane: list[Field]) -> dict[str, int]:
    """Stat names -> their metadata ids."""
    out = {}
    for entry in (f for f in plane if f.number == _PLANE_STAT_METADATA):
        value = next((f for f in fields(wf, entry.start, entry.end) if f.number == _MAP_VALUE), None)
        if value is None:
            continue
        sid, name = None, ""
        for f in fields(wf, value.start, value.end):
            if f.number == _STAT_MD_ID:
                sid = wf.varint(f.start)[0]
            elif f.number == _STAT_MD_NAME:
                name = wf.read(f.start, f.end - f.start).decode("utf-8", "replace")
        if sid is not None and name:
            out.setdefault(name, sid)
    return out


def _stat(wf: WireFile, f: Field):
    """An XStat's metadata id and its value: a Field for bytes (left unread), an int for ints."""
    sid, payload = None, None
    for g in fields(wf, f.start, f.end):
        if g.number == _STAT_ID:
            sid = wf.varint(g.start)[0]
        elif g.number == _STAT_BYTES:
            payload = g
        elif g.number in (_STAT_UINT64, _STAT_INT64):
            payload = wf.varint(g.start)[0]
    return sid, payload


def _module_name(wf: WireFile, module: Field) -> str:
    for f in fields(wf, module.start, module.end):
        if f.number == _MODULE_NAME:
            return wf.read(f.start, f.end - f.start).decode("utf-8", "replace")
    return ""


def _module(wf: WireFile, module: Field) -> tuple[dict[str, str], dict[str, str]]:
    """({entry instruction: op_name}, {entry instruction: its Python}) of an HloModuleProto."""
    entry_id, computations, frames = None, [], None
    for f in fields(wf, module.start, module.end):
        if f.number == _MODULE_ENTRY_ID:
            entry_id = wf.varint(f.start)[0]
        elif f.number == _MODULE_COMPUTATIONS:
            computations.append(f)
        elif f.number == _MODULE_FRAMES:
            frames = f
    by_id = {_computation_id(wf, c): c for c in computations}
    entry = by_id.get(entry_id) if entry_id is not None else (computations[-1] if computations else None)
    if entry is None:
        return {}, {}
    instructions = list(_instructions(wf, entry))
    graph = _Graph(instructions, {i.id: i.op_name or _called(wf, i.calls, by_id, "op_name") for i in instructions})
    frame = {i.id: i.frame or _called(wf, i.calls, by_id, "frame") or 0 for i in instructions}
    sources, code = {}, {}
    where = _Frames(wf, frames) if frames is not None else None
    for i in instructions:
        source, from_id = (graph.own[i.id], i.id) if graph.own[i.id] else graph.neighbour(i.id)
        sources[i.name] = source
        # An instruction XLA made takes the Python stack of the one whose scope it took.
        text = where.text(frame[i.id] or frame.get(from_id, 0)) if where is not None else ""
        if text:
            code[i.name] = text
    return sources, code


class _Frames:
    """A module's stack frame index: each frame id as `function (file:line)`, its innermost frame."""

    def __init__(self, wf: WireFile, index: Field):
        self.files, self.functions, self.locations, self.frames = [], [], [], []
        for f in fields(wf, index.start, index.end):
            if f.number == _FRAME_FILES:
                self.files.append(wf.read(f.start, f.end - f.start).decode("utf-8", "replace"))
            elif f.number == _FRAME_FUNCTIONS:
                self.functions.append(wf.read(f.start, f.end - f.start).decode("utf-8", "replace"))
            elif f.number == _FRAME_LOCATIONS:
                self.locations.append(_ints(wf, f, (_LOCATION_FILE, _LOCATION_FUNCTION, _LOCATION_LINE)))
            elif f.number == _FRAME_FRAMES:
                self.frames.append(tuple(_ints(wf, f, (_FRAME_LOCATION, _FRAME_PARENT))))

    def text(self, frame_id: int) -> str:
        """The Python stack that made an op, innermost first: `fn@file:line` frames joined by
        CHAIN (a package's file as its path inside the package, `keras/src/...`; the user's by
        its name). Ids count from 1; 0 is no frame."""
        out: list[str] = []
        seen = set()
        while 0 < frame_id <= len(self.frames) and frame_id not in seen and len(out) < _DEPTH:
            seen.add(frame_id)
            loc, parent = self.frames[frame_id - 1]
            if 0 < loc <= len(self.locations):
                file_id, fn_id, line = self.locations[loc - 1]
                fn = self.functions[fn_id - 1] if 0 < fn_id <= len(self.functions) else "?"
                file = self.files[file_id - 1] if 0 < file_id <= len(self.files) else ""
                out.append(f"{fn}@{_short(file)}:{line}")
            frame_id = parent
        return CHAIN.join(out)


def _ints(wf: WireFile, f: Field, numbers: tuple[int, ...]) -> list[int]:
    """The varint fields `numbers` of a small message (0 where absent)."""
    if native.events is not None:  # in C: a module's frame index holds thousands of these
        found = native.events.ints(wf.read(f.start, f.end - f.start))
        if found is not None:
            return [found.get(n, 0) for n in numbers]
    values = dict.fromkeys(numbers, 0)
    for g in fields(wf, f.start, f.end):
        if g.number in values:
            values[g.number] = wf.varint(g.start)[0]
    return [values[n] for n in numbers]


_BACKWARD = ("transpose(", "gradient_tape/")  # JAX's and TensorFlow's marks of a backward pass
_REACH = 4  # instructions an unnamed one looks through for a named neighbour
_JVP = re.compile(r"jvp\(([^()]*)\)")


def _is_backward(op_name: str) -> bool:
    return any(b in op_name for b in _BACKWARD)


class _Graph:
    """An entry computation's dataflow, to name the instructions XLA made itself (a layout copy,
    a weight gradient's convolution, max-pool's gradient expanded) after their neighbours."""

    def __init__(self, instructions: list, own: dict):
        self.own = {k: v if "/" in v else "" for k, v in own.items()}  # `args[0]`, `state[1]`: no scope
        self.operands = {i.id: i.operands for i in instructions}
        self.users: dict[int, list[int]] = {}
        for i in instructions:
            for o in i.operands:
                self.users.setdefault(o, []).append(i.id)
        self.parameters = {i.id for i in instructions if i.opcode == "parameter"}

    def neighbour(self, i: int) -> tuple[str, int]:
        """The scope (and the instruction it is read from, -1 for none) of its nearest named
        users, preferring a backward one among them and its operands; an instruction only the
        optimizer uses is a gradient: the backward pass of the layer whose weight that update
        writes."""
        up = self.nearest(i, self.users)
        if up and not all(in_optimizer(self.own[j]) for j in up):
            backward = [j for j in up + self.nearest(i, self.operands) if _is_backward(self.own[j])]
            j = (backward or up)[0]
            return self.own[j], j
        j = self.updated_layer(i)
        if j >= 0:
            layer = self.own[j]
            return (_JVP.sub(lambda m: f"transpose(jvp({m.group(1)}))", layer, count=1) if "jvp(" in layer
                    else layer), j
        down = self.nearest(i, self.operands, _is_backward) or self.nearest(i, self.operands)
        picked = (down or up or [-1])[0]
        return (self.own[picked] if picked >= 0 else ""), picked

    def nearest(self, i: int, edges: dict, wanted=bool) -> list[int]:
        """The nearest instructions along `edges` whose op_name is `wanted`."""
        frontier, seen = [i], {i}
        for _ in range(_REACH):
            nxt = [j for k in frontier for j in edges.get(k, ()) if j not in seen]
            seen.update(nxt)
            named = [j for j in nxt if self.own.get(j) and wanted(self.own[j])]
            if named:
                return named
            frontier = nxt
        return []

    def updated_layer(self, i: int) -> int:
        """From a gradient, through the optimizer's update, the nearest weight (a parameter used
        outside the optimizer): its first use there (-1 for none)."""
        frontier, seen = [i], {i}
        for _ in range(2 * _REACH):
            nxt = []
            for k in frontier:
                for j in (*self.users.get(k, ()), *self.operands.get(k, ())):
                    if j in seen or (self.own.get(j) and not in_optimizer(self.own[j])):
                        continue
                    seen.add(j)
                    nxt.append(j)
            for j in nxt:
                if j in self.parameters:
                    uses = [u for u in self.nearest(j, self.users) if not in_optimizer(self.own[u])]
                    if uses:
                        return uses[0]
            frontier = [j for j in nxt if j not in self.parameters]
        return -1


def _computation_id(wf: WireFile, c: Field) -> int | None:
    for f in fields(wf, c.start, c.end):
        if f.number == _COMPUTATION_ID:
            return wf.varint(f.start)[0]
    return None


class _Instruction(NamedTuple):
    name: str
    opcode: str
    op_name: str
    frame: int
    id: int
    operands: list
    calls: list


_NONE = _Instruction("", "", "", 0, -1, [], [])


def _instructions(wf: WireFile, computation: Field):
    """Each instruction's name, op_name, id, operands and called computations, in order."""
    for f in fields(wf, computation.start, computation.end):
        if f.number != _COMPUTATION_INSTRUCTIONS:
            continue
        name, opcode, op_name, frame, iid, operands, calls = "", "", "", 0, -1, [], []
        for g in fields(wf, f.start, f.end):
            if g.number == _INSTRUCTION_NAME:
                name = wf.read(g.start, g.end - g.start).decode("utf-8", "replace")
            elif g.number == _INSTRUCTION_OPCODE:
                opcode = wf.read(g.start, g.end - g.start).decode("utf-8", "replace")
            elif g.number == _INSTRUCTION_METADATA:
                op_name, frame = _op_name(wf, g)
            elif g.number == _INSTRUCTION_ID:
                iid = wf.varint(g.start)[0]
            elif g.number == _INSTRUCTION_OPERANDS:
                operands += _ids(wf, g)
            elif g.number == _INSTRUCTION_CALLS:
                calls += _ids(wf, g)
        yield _Instruction(name, opcode, op_name, frame, iid, operands, calls)


def _op_name(wf: WireFile, metadata: Field) -> tuple[str, int]:
    """An OpMetadata's op_name and stack frame id."""
    op_name, frame = "", 0
    for g in fields(wf, metadata.start, metadata.end):
        if g.number == _METADATA_OP_NAME:
            op_name = wf.read(g.start, g.end - g.start).decode("utf-8", "replace")
        elif g.number == _METADATA_FRAME:
            frame = wf.varint(g.start)[0]
    return op_name, frame


def _ids(wf: WireFile, g: Field) -> list[int]:
    """A repeated int64 field: one varint, or packed (length-delimited) varints."""
    if wf.read(g.tag_start, 1)[0] & 7 == 0:  # the tag's first byte holds the wire type
        return [wf.varint(g.start)[0]]
    out, pos = [], g.start
    while pos < g.end:
        v, pos = wf.varint(pos)
        out.append(v)
    return out


def _called(wf: WireFile, calls: list[int], by_id: dict, what: str):
    """For an instruction without its own op_name (or frame): the one most of the instructions
    it calls carry (a fusion's), empty if none does."""
    values = Counter(getattr(i, what) for c in calls if c in by_id for i in _instructions(wf, by_id[c])
                     if getattr(i, what))
    return max(values.items(), key=lambda kv: (kv[1], kv[0]))[0] if values else type(getattr(_NONE, what))()
