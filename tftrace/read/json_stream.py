"""Stream the events of a trace viewer JSON file in batches, refusing files that inflate too far."""

from __future__ import annotations

import codecs
import contextlib
import gzip
import json
import os
import re
import zlib
from typing import Iterator

from tftrace.model.errors import TraceReadError
from tftrace.read import storage

_MB = 1 << 20
# Trace viewer events take 100-260 bytes of JSON each in the public traces: the limit holds
# millions. Past it a file is refused before it is parsed: a .gz of a few hundred KB can
# inflate to gigabytes (a gzip bomb).
DEFAULT_LIMIT_MB = 512
LIMIT_ENV = "TFTRACE_MAX_JSON_MB"
_READ = 1 << 22  # bytes inflated per step; a batch of events is about this much text
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9eE.+\-]*")
_DECODER = json.JSONDecoder()


def limit_bytes() -> int:
    """How many bytes of JSON a file may hold (inflated): TFTRACE_MAX_JSON_MB, else the default."""
    value = os.environ.get(LIMIT_ENV, "").strip()
    return (int(value) if value.isdigit() and int(value) > 0 else DEFAULT_LIMIT_MB) * _MB


def event_batches(path: str, parse_float=None, top: dict | None = None) -> Iterator[list]:
    """The elements of the file's `traceEvents` list (or of a top-level list), a batch at a
    time; TraceReadError names what is wrong with the file. Memory stays near one batch.
    `parse_float` (as json's: `str` keeps each number's decimal text) reads fractional numbers;
    `top`, if given, receives the top-level object's other values (PyTorch's `baseTimeNanoseconds`)."""
    limit = limit_bytes()
    text = _Text(_text_chunks(path, limit), parse_float)
    try:
        _check_size(path, limit)
        yield from _top_level(text, path, top)
    except json.JSONDecodeError as e:  # where in the file, not in the window of text read
        raise TraceReadError(f"{path}: not valid trace JSON ({e.msg} at character {text.base + e.pos})") from None
    except OSError as e:
        if isinstance(e, FileNotFoundError) or not (storage.is_url(path) or os.path.exists(path)):
            raise TraceReadError(f"{path}: cannot read: {e.strerror or e}") from None
        raise TraceReadError(f"{path}: not a readable gzip file (truncated or corrupt: {e})") from None
    except (EOFError, zlib.error) as e:
        raise TraceReadError(f"{path}: truncated or corrupt gzip data ({e})") from None
    except RecursionError:
        raise TraceReadError(f"{path}: not valid trace JSON (nested too deeply)") from None
    except UnicodeDecodeError as e:
        raise TraceReadError(f"{path}: not valid trace JSON ({e})") from None


def _too_big(path: str, limit: int) -> TraceReadError:
    return TraceReadError(f"{path}: holds more than {limit // _MB} MB of JSON once inflated, past tftrace's "
                          f"limit for trace.json files (set {LIMIT_ENV} to raise it)")


def _check_size(path: str, limit: int) -> None:
    """Refuse a file past the limit before parsing any of it: inflating alone is fast, so a
    gzip bomb is refused in about a second, whatever it holds, with one block in memory."""
    if not path.endswith(".gz"):
        if storage.size(path) > limit:
            raise _too_big(path, limit)
        return
    for _ in _byte_chunks(path, limit):
        pass


def _byte_chunks(path: str, limit: int) -> Iterator[bytes]:
    total = 0
    with storage.open_binary(path) as raw, \
            (gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else contextlib.nullcontext(raw)) as f:
        while chunk := f.read(_READ):
            total += len(chunk)
            if total > limit:  # also checked here: the file may grow between the two passes
                raise _too_big(path, limit)
            yield chunk


def _text_chunks(path: str, limit: int) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
    for chunk in _byte_chunks(path, limit):
        yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


def _top_level(text: "_Text", path: str, top: dict | None = None) -> Iterator[list]:
    first = text.peek()
    if first == "":
        raise TraceReadError(f"{path}: empty file, not a trace")
    found = False
    if first == "[":
        text.take("[")
        yield from text.elements()
        found = True
    elif first == "{":
        found = yield from _object(text, top)
    else:
        text.value()  # valid JSON, but not a trace: say so after checking it parses
    if text.peek() != "":
        raise json.JSONDecodeError("Extra data", text.buf, text.i)
    if not found:
        raise TraceReadError(f"{path}: JSON without a 'traceEvents' list, not a trace viewer file")


def _object(text: "_Text", top: dict | None = None):
    """Walk the top-level object, streaming its `traceEvents` list; other values are parsed and
    dropped (or kept in `top`). Returns whether the list was there."""
    text.take("{")
    found = False
    if text.peek() == "}":
        text.take("}")
        return found
    while True:
        key = text.value()
        text.take(":")
        if key == "traceEvents" and text.peek() == "[":
            text.take("[")
            yield from text.elements()
            found = True
        else:
            value = text.value()
            if top is not None and isinstance(key, str):
                top[key] = value
        if text.peek() == "}":
            text.take("}")
            return found
        text.take(",")


class _Text:
    """A window on the decoded text: consumed text is dropped as more arrives."""

    def __init__(self, chunks: Iterator[str], parse_float=None):
        self._chunks = chunks
        self._decoder = _DECODER if parse_float is None else json.JSONDecoder(parse_float=parse_float)
        self.buf = ""
        self.i = 0
        self.base = 0  # characters dropped before buf
        self._eof = False
        self._slow_until = -1  # a batch cut there failed: read one element at a time up to it

    def _more(self) -> bool:
        """Append at least as much text as is left unread (so re-parsing one long value costs
        no more than twice its length); False at the end of the file."""
        left = self.buf[self.i:]
        parts = [left]
        got = 0
        while got < max(len(left), 1):
            chunk = next(self._chunks, None)
            if chunk is None:
                self._eof = True
                break
            parts.append(chunk)
            got += len(chunk)
        self._slow_until -= self.i
        self.base += self.i
        self.buf, self.i = "".join(parts), 0
        return got > 0

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), without taking it."""
        while True:
            self.i = _WS.match(self.buf, self.i).end()
            if self.i < len(self.buf):
                return self.buf[self.i]
            if not self._more():
                return ""

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise json.JSONDecodeError(f"Expecting {char!r}", self.buf, self.i)
        self.i += 1

    def value(self):
        """One whole JSON value, reading on while it is cut off by the end of the text read."""
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self.buf, self.i)
            except json.JSONDecodeError:
                if self._more():
                    continue
                raise
            if not self._eof and _NUMBER_TAIL.fullmatch(self.buf, end) and self._more():
                continue  # a number may go on in the next chunk: "6.5" of "6.5e+300"
            self.i = end
            return value

    def elements(self) -> Iterator[list]:
        """The elements of the list whose '[' was just taken, a batch at a time: the C parser
        reads each batch whole, from one element's start to the last complete element."""
        if self.peek() == "]":
            self.i += 1
            return
        while True:
            cut = self._cut() if self.i > self._slow_until else None
            if cut is not None:
                try:
                    batch = self._decoder.decode(f"[{self.buf[self.i:cut[0]]}]")
                except ValueError:  # the cut fell inside a string or a nested value
                    self._slow_until = cut[0]
                else:
                    self.i = cut[1]
                    yield batch
                    continue
            yield [self.value()]
            if self.peek() == "]":
                self.i += 1
                return
            self.take(",")

    def _cut(self) -> tuple[int, int] | None:
        """The last '}' in the text read that a ',' follows: if it closes an element, the text up
        to it is whole elements. (If it does not, that text does not parse: nothing is lost.)"""
        end = len(self.buf)
        while True:
            j = self.buf.rfind("}", self.i, end)
            if j < 0:
                return None
            k = _WS.match(self.buf, j + 1).end()
            if k < len(self.buf) and self.buf[k] == ",":
                return j + 1, k + 1
            end = j
