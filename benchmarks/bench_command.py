"""Time what a user runs: whole commands in fresh processes, from start to exit, beside a bare parse.

Used by bench_analyze.py (which writes RESULTS.md); each command is a fresh process, timed
from outside (interpreter start, imports, reading, analysis, output), with its peak RSS.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# A bare protobuf parse of the whole file, file read included: the floor for any Python reader.
_PARSE = """import importlib.util, sys
spec = importlib.util.spec_from_file_location("xplane_pb2", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with open(sys.argv[2], "rb") as f:
    module.XSpace.FromString(f.read())
"""
_PARSE_OWN = """import sys
from tftrace.read.schema import XSpace
with open(sys.argv[1], "rb") as f:
    XSpace.FromString(f.read())
"""


def environment() -> dict:
    """Fresh processes as after `pip install`: bytecode cached (this machine sets
    PYTHONDONTWRITEBYTECODE, which would recompile tftrace's sources in every process), kept
    out of the tree in a temporary folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TFTRACE_MAX_JSON_MB")}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "tftrace-bench-pycache")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def tensorflow_xplane_pb2() -> str | None:
    """TensorFlow's generated xplane_pb2.py, loaded by path (importing TensorFlow takes seconds)."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "tsl", "profiler", "protobuf", "xplane_pb2.py")
    return path if os.path.exists(path) else None


def commands(trace: str) -> dict[str, list[str]]:
    """The commands timed on a large trace, by name."""
    pb2 = tensorflow_xplane_pb2()
    parse = ["-c", _PARSE, pb2, trace] if pb2 else ["-c", _PARSE_OWN, trace]
    return {
        "python": [sys.executable, "-c", "pass"],
        "parse": [sys.executable, *parse],
        "analyze": [sys.executable, "-m", "tftrace", "analyze", trace, "--format", "json", "--no-tensorboard"],
    }


def analyze_command(path: str) -> list[str]:
    return [sys.executable, "-m", "tftrace", "analyze", path, "--format", "json", "--no-tensorboard"]


def help_command(*command: str) -> list[str]:
    return [sys.executable, "-m", "tftrace", *command, "--help"]


# Runs the command and reports its time, its CPU time (user + system: less moved than wall time
# when other jobs share the machine) and peak RSS. A go-between, because a process's peak RSS
# (ru_maxrss) starts from that of the process it was forked from: a small launcher keeps a
# large benchmark process from showing in the command's figure.
_LAUNCHER = """import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_pid, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "peak_mb": usage.ru_maxrss / 1024,
                  "code": os.waitstatus_to_exitcode(status), "stderr": err.decode(errors="replace")[-2000:]}))
"""


def run(argv: list[str]) -> dict:
    """Seconds from start to exit and the process's peak RSS (MB)."""
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], capture_output=True, text=True, cwd=ROOT,
                          env=environment(), timeout=3600)
    result = json.loads(proc.stdout)
    if result.pop("code") != 0:
        raise RuntimeError(f"{' '.join(argv[:4])}... failed:\n{result['stderr']}")
    del result["stderr"]
    return result


_IMPORTS = ("numpy", "pandas", "typer", "pydantic", "rich", "google.protobuf", "tftrace.read.xspace", "tftrace.api")


def import_times(argv: list[str], wanted: tuple[str, ...] = _IMPORTS) -> dict[str, float]:
    """Seconds spent importing, in all and in the first import of a few packages (each with
    what it imports first), from `python -X importtime`."""
    argv = [argv[0], "-X", "importtime", *argv[1:]]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=environment(), check=True)
    out: dict[str, float] = {"all": 0.0}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        micros, depth, name = int(m.group(1)), len(m.group(2)), m.group(3)
        if depth == 1:  # top level: one space after the bar
            out["all"] += micros / 1e6
        if name in wanted and name not in out:
            out[name] = micros / 1e6
    return out
