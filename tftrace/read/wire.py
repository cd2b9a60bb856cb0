"""Walk the top levels of an XSpace file's protobuf wire format without loading it whole.

Big traces are one XSpace message; parsing it at once costs ~4.5x the file in memory. Reading
it plane by plane and line by line (each parsed and freed in turn) keeps the peak near the size
of the largest line, while the protobuf library still parses every message's contents.
"""

from __future__ import annotations

from typing import BinaryIO, Iterator, NamedTuple

from tftrace.read import native

_BLOCK = 1 << 16


class WireError(ValueError):
    """The bytes are not protobuf wire format (or end too soon)."""


class Field(NamedTuple):
    number: int
    tag_start: int  # where the field's tag starts: [tag_start, end) is the whole field
    start: int  # where the value starts (after tag and length)
    end: int  # where the value ends


class WireFile:
    """Random-access reads with a small block cache, for scanning tags and lengths."""

    def __init__(self, f: BinaryIO, size: int):
        self._f = f
        self.size = size
        self._block_at = -1
        self._block = b""

    def read(self, pos: int, n: int) -> bytes:
        if pos + n > self.size:
            raise WireError("the file ends inside a message (truncated?)")
        if self._block_at <= pos and pos + n <= self._block_at + len(self._block):
            off = pos - self._block_at
            return self._block[off:off + n]
        if n > _BLOCK // 2:
            self._f.seek(pos)
            return self._f.read(n)
        self._f.seek(pos)
        self._block_at, self._block = pos, self._f.read(_BLOCK)
        return self._block[:n]

    def varint(self, pos: int) -> tuple[int, int]:
        head = self.read(pos, min(10, self.size - pos))
        value = shift = 0
        for i, byte in enumerate(head):
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, pos + i + 1
            shift += 7
        raise WireError("a varint runs past its end")


_SCAN_BYTES = 1 << 23  # messages up to this size are read whole and walked in C (read/_events.c)


def fields(wf: WireFile, start: int, end: int) -> Iterator[Field]:
    """The fields of the message in [start, end), in file order."""
    if native.events is not None and end - start <= _SCAN_BYTES:
        found = native.events.fields(wf.read(start, end - start), start)
        if found is not None:  # else the walk below says what is wrong
            return map(Field._make, found)
    return _walk(wf, start, end)


def _walk(wf: WireFile, start: int, end: int) -> Iterator[Field]:
    pos = start
    while pos < end:
        tag_start = pos
        tag, pos = wf.varint(pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == 0:
            _value, after = wf.varint(pos)
            yield Field(number, tag_start, pos, after)
            pos = after
        elif wire == 2:
            length, pos = wf.varint(pos)
            if pos + length > end:
                raise WireError("a field's length runs past its message (truncated?)")
            yield Field(number, tag_start, pos, pos + length)
            pos += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield Field(number, tag_start, pos, pos + width)
            pos += width
        else:
            raise WireError(f"wire type {wire} is not used by XSpace files")
    if pos != end:
        raise WireError("a field runs past its message")


def raw(wf: WireFile, fd: Field) -> bytes:
    """A field's bytes as written (tag included): concatenated fields parse as a message."""
    return wf.read(fd.tag_start, fd.end - fd.tag_start)


def value(wf: WireFile, fd: Field) -> bytes:
    """A length-delimited field's payload: an embedded message's own bytes."""
    return wf.read(fd.start, fd.end - fd.start)
