"""Decode a plane's lines in threads, in order: the C decoder runs without the GIL, so the next
lines decode while the reader files the one before."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from tftrace.read import native, wire
from tftrace.read.lines import Line, decode_line

AHEAD = 2  # lines decoding at once: temporaries of this many lines, beside the one being filed


def decoded_lines(wf: wire.WireFile, lines: list, clock: dict, slots=None, drop=None):
    """(field, Line) for each of `lines` (XLine fields of one plane), in order. `clock` holds the
    file's time base (decode_line's `base_ns`): the first line of a file sets it, so it is
    decoded before any other. Bytes are read here, on the caller's thread (one file handle).
    `slots`, `drop`: as decode_line takes them. The lines after the first are under way by the
    time the first is yielded: the caller's work between the two overlaps their decoding."""
    todo = iter(lines)
    first = None
    if "base_ns" not in clock:
        p = next(todo, None)
        if p is None:
            return
        first = (p, decode_line(wire.value(wf, p), None, slots, drop))
        clock["base_ns"] = first[1].base_ns
    base = clock["base_ns"]
    # Threads where there is something to overlap, and only with the C decoder: numpy's decoding
    # makes temporaries of several times a line, which two lines at once would double.
    if len(lines) < 3 or (os.cpu_count() or 1) < 2 or native.events is None:
        if first is not None:
            yield first
            first = None
        for p in todo:
            yield p, decode_line(wire.value(wf, p), base, slots, drop)
        return
    pool = ThreadPoolExecutor(AHEAD, thread_name_prefix="tftrace-read")
    pending: deque = deque()

    def more() -> None:
        while len(pending) < AHEAD:
            p = next(todo, None)
            if p is None:
                return
            pending.append((p, pool.submit(decode_line, wire.value(wf, p), base, slots, drop)))

    try:
        more()
        if first is not None:
            yield first
            first = None
        while pending:
            p, future = pending.popleft()
            line = future.result()
            more()
            yield p, line
    finally:
        # Never a join here: a stream closed early may be closed by the garbage collector, at
        # whatever point a collection runs (inside threading's locks, where a join deadlocks).
        # The workers hold only their lines' bytes, and leave once the queue says so.
        pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["Line", "decoded_lines"]
