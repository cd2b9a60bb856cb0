"""trace.json(.gz) is read as a stream, and a file that inflates past the limit is refused."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from tftrace.model.errors import TraceReadError
from tftrace.read import json_stream
from tftrace.read.json_stream import DEFAULT_LIMIT_MB, LIMIT_ENV, event_batches

EVENT = {"ph": "X", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2, "name": "a/MatMul:MatMul"}


def _bomb(path, inflated_mb: int) -> None:
    """A valid-looking trace that inflates to `inflated_mb` MB: gzip members of 1 MB of events,
    each compressed to a few KB, one after another (gzip readers read every member)."""
    block = (json.dumps(EVENT) + ",").encode() * ((1 << 20) // 64)
    member = gzip.compress(block, 9)
    with open(path, "wb") as f:
        f.write(gzip.compress(b'{"traceEvents": [' + block, 9))
        for _ in range(inflated_mb):
            f.write(member)


def _limit_memory():
    # If the reader held what it inflates, it would hit this and fail the test, not the machine.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_a_gzip_bomb_gets_a_one_line_error_and_exit_2_in_seconds_with_memory_bounded(tmp_path):
    bomb = tmp_path / "bomb.trace.json.gz"
    _bomb(bomb, 4 * DEFAULT_LIMIT_MB)  # 2 GB of JSON in a few MB
    assert os.path.getsize(bomb) < 20 << 20
    env = {k: v for k, v in os.environ.items() if k != LIMIT_ENV}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tftrace", "analyze", str(bomb), "--no-tensorboard"], cwd=ROOT,
                          env=env, capture_output=True, text=True, preexec_fn=_limit_memory, timeout=120)
    seconds = time.perf_counter() - t0
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("tftrace: error: ") and "bomb.trace.json.gz" in lines[0]
    assert f"more than {DEFAULT_LIMIT_MB} MB of JSON" in lines[0] and LIMIT_ENV in lines[0]
    assert seconds < 15, seconds  # about a second here: inflating is fast, and nothing is parsed


def test_peak_memory_of_refusing_a_bomb_stays_far_below_what_it_inflates_to(tmp_path):
    bomb = tmp_path / "bomb.trace.json.gz"
    _bomb(bomb, 2 * DEFAULT_LIMIT_MB)
    # VmHWM, the child's own peak (ru_maxrss would start from this test process's).
    code = ("import sys\nfrom tftrace.read.json_stream import event_batches\n"
            "try:\n    list(event_batches(sys.argv[1]))\nexcept Exception as e:\n    print(type(e).__name__)\n"
            "print([line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')][0])")
    proc = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, cwd=ROOT,
                          preexec_fn=_limit_memory, timeout=120)
    kind, peak_kb = proc.stdout.split()
    assert kind == "TraceReadError"
    assert int(peak_kb) < 200 << 10, f"peak {int(peak_kb) >> 10} MB while refusing a 1 GB bomb"


def test_the_limit_can_be_raised_or_lowered_and_is_documented(tmp_path, monkeypatch):
    path = tmp_path / "big.trace.json"
    path.write_text(json.dumps({"traceEvents": [EVENT] * 40_000}))  # about 3 MB
    monkeypatch.setenv(LIMIT_ENV, "1")
    with pytest.raises(TraceReadError, match=f"more than 1 MB of JSON.*{LIMIT_ENV}"):
        list(event_batches(str(path)))
    monkeypatch.setenv(LIMIT_ENV, "8")
    assert sum(len(b) for b in event_batches(str(path))) == 40_000
    speed = open(os.path.join(ROOT, "docs", "speed.md"), encoding="utf-8").read()  # the documented limit
    assert f"{DEFAULT_LIMIT_MB} MB" in speed and LIMIT_ENV in speed


DOCS = {
    "list": [EVENT, {"ph": "M", "name": "thread_name", "args": {"name": "a},{b"}}, EVENT],
    "keys around": {"displayTimeUnit": "ns", "big": {"x": ["},", "]", 12345678901234567890] * 50},
                    "traceEvents": [EVENT, {"ph": "X", "args": {"s": "},\n{\"not\": 1}"}, "ts": 3}] * 40,
                    "metadata": [1.25e-7, None, True, "tail"]},
    "odd elements": {"traceEvents": [1, "two", [3, {"4": 5}], {"nested": [{"a": {}}, {}]}, 6.5e300, EVENT]},
    "empty list": {"traceEvents": []},
    "unicode": {"traceEvents": [dict(EVENT, name="bloc/été/MatMul:MatMul") for _ in range(30)]},
}


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("read", [1, 7, 64, 1 << 22])
@pytest.mark.parametrize("name", DOCS)
def test_streamed_events_are_exactly_what_json_loads_reads(tmp_path, monkeypatch, name, read, indent):
    monkeypatch.setattr(json_stream, "_READ", read)  # tiny reads: every value is cut somewhere
    doc = DOCS[name]
    path = tmp_path / "t.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc, indent=indent, ensure_ascii=False).encode()))
    want = doc if isinstance(doc, list) else doc["traceEvents"]
    assert [ev for batch in event_batches(str(path)) for ev in batch] == want


@pytest.mark.parametrize("text,words", [
    ("", "empty file"),
    ("   \n", "empty file"),
    ('{"traceEvents": [{"ph": "X"}, ]}', "not valid trace JSON"),
    ('{"traceEvents": [{"ph": "X"}', "not valid trace JSON"),
    ('{"traceEvents": []} extra', "not valid trace JSON"),
    ('{"traceEvents": 5}', "traceEvents"),
    ('{"other": []}', "traceEvents"),
    ("{}", "traceEvents"),
    ('"just a string"', "traceEvents"),
    ("[" * 100_000, "not valid trace JSON"),
])
def test_bad_json_raises_one_clear_error(tmp_path, monkeypatch, text, words):
    monkeypatch.setattr(json_stream, "_READ", 5)
    path = tmp_path / "bad.trace.json"
    path.write_text(text)
    with pytest.raises(TraceReadError, match=words) as info:
        list(event_batches(str(path)))
    assert "\n" not in str(info.value) and "bad.trace.json" in str(info.value)
