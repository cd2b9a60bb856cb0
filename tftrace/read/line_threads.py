"""Decode a plane's lines in threads, in order: numpy's share of the decoding runs without the GIL,
so the next lines decode while the reader files the one before."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from tftrace.read import wire
from tftrace.read.lines import Line, decode_line

AHEAD = 2  # lines decoding at once: temporaries of this many lines, beside the one being filed


def decoded_lines(wf: wire.WireFile, lines: list, clock: dict):
    """(field, Line) for each of `lines` (XLine fields of one plane), in order. `clock` holds the
    file's time base (decode_line's `base_ns`): the first line of a file sets it, so it is
    decoded before any other. Bytes are read here, on the caller's thread (one file handle)."""
    rest = iter(lines)
    if "base_ns" not in clock:
        first = next(rest, None)
        if first is None:
            return
        line = decode_line(wire.value(wf, first), None)
        clock["base_ns"] = line.base_ns
        yield first, line
        del line
    base = clock["base_ns"]
    if len(lines) < 3 or (os.cpu_count() or 1) < 2:  # nothing to overlap
        for p in rest:
            yield p, decode_line(wire.value(wf, p), base)
        return
    with ThreadPoolExecutor(AHEAD, thread_name_prefix="tftrace-read") as pool:
        pending: deque = deque()
        for p in rest:
            pending.append((p, pool.submit(decode_line, wire.value(wf, p), base)))
            if len(pending) >= AHEAD:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()


__all__ = ["Line", "decoded_lines"]
