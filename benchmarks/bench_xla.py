"""XLA traces full of Python tracer events: tftrace's analysis against XProf's own op statistics
(`framework_op_stats`) on the same file, each in a fresh process with its imports done before the
clock starts (the first call pays what a command pays: cold caches, the heap growing), and
tftrace's whole command besides.

    python benchmarks/bench_xla.py [RUN_DIR ...]   (default: the H200 Keras run_eagerly sample)

Prints one JSON line per trace: its size, and over 5 interleaved rounds the median seconds of
tftrace's analysis, XProf's, and tftrace's command (start-up, imports and JSON output included).
XProf writes cache files beside a trace, so it reads a copy in a temporary folder.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = [os.path.join(ROOT, "sample_traces", "gpu_jax", "keras_run_eagerly")]


def _command(run: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tftrace", "analyze", run, "--format", "json", "--no-tensorboard"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


# The analyses too: the command imports them while it reads (hostmap._one_file), not at start.
_OURS = """import time, tftrace.api, tftrace.hostmap, tftrace.cli.commands, tftrace.analysis.run
t = time.perf_counter(); tftrace.api.analyze({path!r}); print(time.perf_counter() - t)"""
_XPROF = """import time; from xprof.convert.raw_to_tool_data import xspace_to_tool_data
t = time.perf_counter(); xspace_to_tool_data([{path!r}], "framework_op_stats", {{}}); print(time.perf_counter() - t)"""


def _fresh(code: str) -> float:
    """Seconds the timed call took in a fresh process (its last line of output)."""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def _xprof(xplane: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        return _fresh(_XPROF.format(path=shutil.copy(xplane, tmp)))


def main() -> None:
    for run in sys.argv[1:] or DEFAULT:
        xplane = glob.glob(os.path.join(run, "**", "*.xplane.pb"), recursive=True)[0]
        ours, theirs, command = [], [], []
        for _ in range(5):  # interleaved: this shared machine's speed drifts
            ours.append(_fresh(_OURS.format(path=run)))
            theirs.append(_xprof(xplane))
            command.append(_command(run))
        print(json.dumps({"trace": os.path.relpath(run, ROOT), "mb": round(os.path.getsize(xplane) / 2**20, 1),
                          "tftrace_analysis_s": round(statistics.median(ours), 3),
                          "xprof_framework_op_stats_s": round(statistics.median(theirs), 3),
                          "tftrace_command_s": round(statistics.median(command), 2)}))


if __name__ == "__main__":
    main()
