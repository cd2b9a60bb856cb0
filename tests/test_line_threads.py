"""The reader's decoding threads (read/line_threads.py) when a plane's stream is abandoned: a bad
line raises mid-plane, and a stream left open is closed by the garbage collector wherever a
collection runs, once inside threading's own lock as a new thread started; closing it then must
not join its threads (that deadlocked the fuzz test). Run in a child process with a time limit,
so a deadlock fails the test instead of hanging the session."""

from __future__ import annotations

import subprocess
import sys

from conftest import sample

CHILD = r"""
import sys, threading
from tftrace.read import native, wire
from tftrace.read.line_threads import decoded_lines
from tftrace.read.wire import WireFile, fields
assert native.events is not None, "the C decoder is not built: no threads to test"
path = sys.argv[1]
with open(path, "rb") as f:
    wf = WireFile(f, len(open(path, "rb").read()))
    planes = [list(fields(wf, fd.start, fd.end)) for fd in fields(wf, 0, wf.size) if fd.number == 1]
    lines = max(([p for p in parts if p.number == 3] for parts in planes), key=len)
    assert len(lines) >= 3, len(lines)
    stream = decoded_lines(wf, lines, {})
    next(stream)  # the first line yielded, the next ones decoding in threads
    with threading._shutdown_locks_lock:  # held as in Thread.start when a collection closed the stream
        stream.close()
print("closed")
"""


def test_a_stream_closed_inside_threadings_lock_does_not_deadlock():
    path = sample("zoo", "pairwise_metric", "plugins", "profile", "run", "sample.xplane.pb")
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("closing an abandoned stream deadlocked (it joined its threads)") from None
    assert out.returncode == 0 and "closed" in out.stdout, out.stderr[-2000:]
