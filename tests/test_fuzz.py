"""Corrupt files: bit flips, truncations, inserted, zeroed and duplicated bytes, and out-of-range
values, over sample and public traces (xplane.pb and trace JSON): each is analysed or refused
with one line, never a traceback. Fixed seeds: every run tries the same cases."""

from __future__ import annotations

import gzip
import json
import os
import random

import pytest

from conftest import PUBLIC, run_cli, sample_file
from tftrace.api import analyze
from tftrace.model.errors import TftraceError
from tftrace.read.schema import XSpace
from tftrace.render import render

# Small traces, so a few hundred cases take seconds.
SOURCES = [
    sample_file("predict_loop", "light"),
    sample_file("zoo", "retracing"),
    os.path.join(PUBLIC, "AMD-AGI__TraceLens", "tests", "traces", "mi300", "jax08_gemm", "tw003.xplane.pb"),
    os.path.join(PUBLIC, "awslabs__sagemaker-debugger", "tests", "profiler", "resources",
                 "tfprofiler_timeline_traces", "framework", "tensorflow", "detailed_profiling", "2020080513",
                 "000000000", "plugins", "profile", "2020_08_05_13_37_44", "8c859046be41.ant.amazon.com.trace.json.gz"),
    os.path.join(PUBLIC, "AmpereComputingAI__ampere_model_library", "natural_language_processing", "huggingface",
                 "bert-base-uncased_2021_07_22_01_55_32", "plugins", "profile", "2021_07_22_01_55_36",
                 "690019ccf0dc.trace.json.gz"),
]
CASES_PER_SOURCE = 100
# Values a corrupt number may take: the edges of int64, and past where picoseconds overflow.
EXTREMES = [0, -1, 1, 2 ** 31, 2 ** 62, 2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1]
JSON_EXTREMES = [2 ** 70, -2 ** 70, 1e308, -1.0, "x", None, [], {}, 0, True]


def _flip(rng, b):
    for _ in range(rng.choice([1, 1, 2, 8])):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)


def _truncate(rng, b):
    del b[rng.randrange(len(b)):]


def _insert(rng, b):
    i = rng.randrange(len(b))
    b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))


def _zero(rng, b):
    i = rng.randrange(len(b))
    n = min(rng.randrange(1, 64), len(b) - i)
    b[i:i + n] = bytes(n)


def _duplicate(rng, b):
    i, j = rng.randrange(len(b)), rng.randrange(len(b))
    b[j:j] = b[i:i + rng.randrange(1, 256)]


BYTE_MUTATIONS = [_flip, _truncate, _insert, _zero, _duplicate]


def _extreme_xspace(rng, data: bytes) -> bytes:
    """One number of a line, event or stat set to an edge value (the file stays valid protobuf,
    so the value reaches the code that uses it)."""
    space = XSpace.FromString(data)
    plane = rng.choice(space.planes)
    lines = [line for line in plane.lines if len(line.events)]
    value, where = rng.choice(EXTREMES), rng.randrange(4)
    if where == 0 and lines:
        setattr(rng.choice(lines), rng.choice(["timestamp_ns", "duration_ps", "id"]), value)
    elif where == 1 and lines:
        event = rng.choice(rng.choice(lines).events)
        setattr(event, rng.choice(["metadata_id", "offset_ps", "duration_ps", "num_occurrences"]), value)
    elif where == 2:
        stats = [st for line in lines for ev in line.events for st in ev.stats]
        if stats:
            stat, field = rng.choice(stats), rng.choice(["int64_value", "uint64_value", "ref_value", "double_value"])
            setattr(stat, field, float(value) if field == "double_value" else
                    value % 2 ** 64 if field in ("uint64_value", "ref_value") else value)
    elif len(plane.stats):
        rng.choice(plane.stats).int64_value = value
    return space.SerializeToString()


def _extreme_json(rng, data: bytes) -> bytes:
    doc = json.loads(data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    for _ in range(rng.choice([1, 3])):
        event = rng.choice(events)
        event[rng.choice([*event, "ts", "dur", "pid", "tid", "args"])] = rng.choice(JSON_EXTREMES)
    return json.dumps(doc).encode()


def _cases(source: str):
    """(name, bytes) of each corrupt variant of `source`; gzip files are mutated inflated (so the
    damage reaches the JSON) and a few as they are on disk."""
    rng = random.Random(f"tftrace-fuzz:{os.path.basename(source)}")
    with open(source, "rb") as f:
        raw = f.read()
    packed = source.endswith(".gz")
    text = gzip.decompress(raw) if packed else raw
    extreme = _extreme_json if packed or source.endswith(".json") else _extreme_xspace
    for i in range(CASES_PER_SOURCE):
        if i % 3 == 0:
            data, how = extreme(rng, text), "extreme"
        else:
            mutate = rng.choice(BYTE_MUTATIONS)
            on_disk = packed and i % 10 == 1
            b = bytearray(raw if on_disk else text)
            mutate(rng, b)
            data, how = bytes(b), mutate.__name__.strip("_") + ("-gz" if on_disk else "")
        if packed and not (how.endswith("-gz")):
            data = gzip.compress(data, 1)
        yield f"{i}-{how}", data


def _check(path: str) -> str:
    """Analyse and render one file: 'ok' or 'refused'; anything else fails the test."""
    try:
        report = analyze(path)
    except TftraceError as e:
        message = str(e)
        assert message and "\n" not in message, f"{path}: a refusal must be one line: {message!r}"
        return "refused"
    render(report, "json")
    render(report, "text")
    return "ok"


@pytest.mark.parametrize("source", SOURCES, ids=os.path.basename)
def test_corrupt_variants_are_analysed_or_refused_in_one_line(source, tmp_path):
    outcomes = {"ok": 0, "refused": 0}
    path = str(tmp_path / os.path.basename(source))
    for name, data in _cases(source):
        with open(path, "wb") as f:
            f.write(data)
        try:
            outcomes[_check(path)] += 1
        except Exception as e:  # named, so the failing case can be rebuilt from the seed
            raise AssertionError(f"case {name} of {os.path.basename(source)}: {type(e).__name__}: {e}") from e
    # Both happen: the mutations are neither all harmless nor all fatal.
    assert outcomes["ok"] and outcomes["refused"], outcomes


def _timestamp_flipped(source: str, bit: int) -> bytes:
    """The sample with one bit flipped in its second timed line's timestamp."""
    with open(source, "rb") as f:
        space = XSpace.FromString(f.read())
    lines = [line for plane in space.planes for line in plane.lines if len(line.events)]
    lines[1].timestamp_ns ^= 1 << bit
    return space.SerializeToString()


def test_a_flipped_bit_in_a_line_timestamp_is_refused_in_one_line(tmp_path):
    # Was `OverflowError: Python int too large to convert to C long` in decode_line.
    path = tmp_path / "run.xplane.pb"
    path.write_bytes(_timestamp_flipped(SOURCES[0], 62))
    with pytest.raises(TftraceError, match="out of range"):
        analyze(str(path))


def test_the_command_exits_2_with_one_line_on_corrupt_files(tmp_path):
    files = [("flipped.xplane.pb", _timestamp_flipped(SOURCES[0], 62))]
    for source in (SOURCES[0], SOURCES[3]):
        name, data = next((n, d) for n, d in _cases(source) if "truncate" in n)
        files.append((f"{name}-{os.path.basename(source)}", data))
    for name, data in files:
        path = tmp_path / name
        path.write_bytes(data)
        proc = run_cli("analyze", str(path), "--no-tensorboard")
        if proc.returncode == 0 and name != files[0][0]:  # a cut at a message's end still parses
            continue
        assert proc.returncode == 2, (name, proc.returncode, proc.stderr[-2000:])
        assert proc.stderr.startswith("tftrace: error: ") and proc.stderr.count("\n") == 1, proc.stderr
        # Where JSON was asked for, the error is one JSON line on stdout with the same exit code.
        proc = run_cli("analyze", str(path), "--format", "json", "--no-tensorboard")
        assert proc.returncode == 2 and proc.stderr == "", (name, proc.stderr[-2000:])
        error = json.loads(proc.stdout)["error"]
        assert proc.stdout.count("\n") == 1 and error["exit"] == 2 and error["message"], error
