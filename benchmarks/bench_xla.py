"""XLA traces full of Python tracer events: `tftrace analyze` as a fresh process against XProf's
own op statistics (`framework_op_stats`, in-process, its start-up not counted) on the same file.

    python benchmarks/bench_xla.py [RUN_DIR ...]   (default: the H200 Keras run_eagerly sample)

Prints one JSON line per trace: its size, the command's median wall time over 5 runs, XProf's.
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


def _xprof(xplane: str) -> float:
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data
    with tempfile.TemporaryDirectory() as tmp:
        copy = shutil.copy(xplane, tmp)
        t = time.perf_counter()
        xspace_to_tool_data([copy], "framework_op_stats", {})
        return time.perf_counter() - t


def main() -> None:
    for run in sys.argv[1:] or DEFAULT:
        xplane = glob.glob(os.path.join(run, "**", "*.xplane.pb"), recursive=True)[0]
        ours, theirs = [], []
        for _ in range(5):  # interleaved: this shared machine's speed drifts
            ours.append(_command(run))
            theirs.append(_xprof(xplane))
        print(json.dumps({"trace": os.path.relpath(run, ROOT), "mb": round(os.path.getsize(xplane) / 2**20, 1),
                          "analyze_s": round(statistics.median(ours), 2),
                          "xprof_framework_op_stats_s": round(statistics.median(theirs), 2)}))


if __name__ == "__main__":
    main()
