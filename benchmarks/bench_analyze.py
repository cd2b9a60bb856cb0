"""Speed and memory of `tftrace analyze` against a Python floor and XProf, in one run.

    python benchmarks/make_traces.py          # once: large real traces in benchmarks/data/
    python benchmarks/bench_analyze.py        # prints ratios, writes benchmarks/RESULTS.md

Every measurement runs in a fresh process (so memory peaks do not mix), timed after imports,
repeated with the tools interleaved (this machine is shared and noisy), reported as the median.
Measured on each trace:
  floor        a bare protobuf parse of the file plus one Python pass touching every event
               (reading its duration): the floor for any Python reader
  floor-3      the same parse plus reading the three fields every event has (what, when, how
               long), with the fastest idiom found (C-level attrgetter/chain/fromiter)
  tftrace      tftrace.analyze(path): read, every analysis, the report (no rendering)
  xprof-ops    XProf's framework_op_stats conversion (tensorboard-plugin-profile), on a copy
  xprof-input  XProf's input_pipeline_analyzer conversion, on a copy
Peak memory is the process's peak RSS minus its RSS after imports.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from make_traces import count_events, trace_path  # noqa: E402

_WORKER = r"""
import json, os, resource, shutil, sys, tempfile, time
sys.path.insert(0, {root!r})
tool, path = sys.argv[1], sys.argv[2]

def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

if tool in ("floor", "floor-3"):
    import numpy as np
    from itertools import chain
    from operator import attrgetter
    from tftrace.xplane.schema import XSpace, XSpaceLazy
    def run():
        with open(path, "rb") as f:
            space = (XSpace if tool == "floor" else XSpaceLazy)()
            space.ParseFromString(f.read())
        total = 0
        fields = attrgetter("metadata_id", "offset_ps", "duration_ps")
        for plane in space.planes:
            for line in plane.lines:
                if tool == "floor":
                    for ev in line.events:
                        total += ev.duration_ps
                else:
                    n = len(line.events)
                    np.fromiter(chain.from_iterable(map(fields, line.events)), np.int64, 3 * n)
        return total
elif tool == "tftrace":
    from tftrace.api import analyze
    run = lambda: analyze(path)
elif tool == "tftrace-ops":
    from tftrace.loader import load
    from tftrace.analysis.ops import op_stats
    run = lambda: op_stats(load(path))
else:
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data
    name = {{"xprof-ops": "framework_op_stats", "xprof-input": "input_pipeline_analyzer"}}[tool]
    scratch = tempfile.mkdtemp()
    copy = os.path.join(scratch, os.path.basename(path))
    shutil.copy(path, copy)  # XProf writes cache files next to the trace
    def run():
        data, _ = xspace_to_tool_data([copy], name, {{}})
        assert data
base = rss_mb()
t0 = time.perf_counter()
run()
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "peak_mb": peak - base, "base_mb": base}}))
"""


def measure(tool: str, path: str) -> dict:
    code = _WORKER.format(root=ROOT)
    proc = subprocess.run([sys.executable, "-c", code, tool, path], capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed on {path}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(path: str, tools: list[str], repeats: int) -> dict:
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    for _ in range(repeats):
        for tool in tools:  # interleaved: a slow moment of the machine hits every tool
            runs[tool].append(measure(tool, path))
    return {t: {"seconds": statistics.median(r["seconds"] for r in rs),
                "peak_mb": statistics.median(r["peak_mb"] for r in rs)} for t, rs in runs.items()}


def help_seconds(repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tftrace", "--help"], capture_output=True, check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def versions() -> dict:
    out = {"python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    for pkg in ("protobuf", "numpy", "pandas", "xprof", "tensorflow-cpu"):
        try:
            from importlib.metadata import version
            out[pkg] = version(pkg)
        except Exception:
            out[pkg] = "not installed"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scales", default="x2,x5,x10", help="scaled traces to time (tftrace and floor only)")
    parser.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"))
    args = parser.parse_args()
    base = trace_path("captured")
    if not os.path.exists(base):
        sys.exit("run `python benchmarks/make_traces.py` first")
    rows = []
    plan = [("captured", ["floor", "floor-3", "tftrace", "tftrace-ops", "xprof-ops", "xprof-input"])]
    plan += [(s, ["floor", "floor-3", "tftrace"]) for s in args.scales.split(",") if s and os.path.exists(trace_path(s))]
    for name, tools in plan:
        path = trace_path(name)
        result = bench(path, tools, args.repeats)
        rows.append((name, os.path.getsize(path), count_events(path), result))
        _print_row(rows[-1])
    report = _markdown(rows, help_seconds(), versions(), args.repeats)
    with open(args.output, "w") as f:
        f.write(report)
    print(f"\nwrote {args.output}")


def _print_row(row) -> None:
    name, size, events, r = row
    t = r["tftrace"]["seconds"]
    line = f"{name}: {events:,} events, {size / 1e6:.0f} MB: tftrace {t:.2f}s = {t / r['floor']['seconds']:.2f}x floor"
    if "xprof-ops" in r:
        line += f", {t / r['xprof-ops']['seconds']:.2f}x xprof framework_op_stats"
    line += f"; peak +{r['tftrace']['peak_mb']:.0f} MB = {r['tftrace']['peak_mb'] * 1e6 / size:.2f}x file"
    print(line, flush=True)


def _markdown(rows, help_s: float, vers: dict, repeats: int) -> str:
    out = ["# tftrace benchmark results", "",
           "Produced by `python benchmarks/make_traces.py && python benchmarks/bench_analyze.py` "
           f"(median of {repeats} interleaved runs, each in a fresh process, timed after imports).", "",
           "Machine and versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()), "",
           "| trace | events | MB | floor s | floor-3 s | tftrace s | tftrace / floor | tftrace / floor-3 | "
           "tftrace ops-only s | xprof framework_op_stats s | tftrace / xprof ops | xprof input_pipeline s | "
           "tftrace peak MB | peak / file |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    base_rate = None
    for name, size, events, r in rows:
        t = r["tftrace"]["seconds"]
        get = lambda k: f"{r[k]['seconds']:.2f}" if k in r else ""  # noqa: E731
        ratio_x = f"{t / r['xprof-ops']['seconds']:.2f}" if "xprof-ops" in r else ""
        out.append(f"| {name} | {events:,} | {size / 1e6:.0f} | {get('floor')} | {get('floor-3')} | {t:.2f} | "
                   f"{t / r['floor']['seconds']:.2f} | {t / r['floor-3']['seconds']:.2f} | {get('tftrace-ops')} | "
                   f"{get('xprof-ops')} | {ratio_x} | {get('xprof-input')} | {r['tftrace']['peak_mb']:.0f} | "
                   f"{r['tftrace']['peak_mb'] * 1e6 / size:.2f} |")
        base_rate = base_rate or t / events
    out += ["", "Linearity (seconds per million events, relative to the captured trace): " +
            ", ".join(f"{name} {r['tftrace']['seconds'] / events * 1e6:.2f} s/M "
                      f"({r['tftrace']['seconds'] / events / base_rate:.2f}x)" for name, _s, events, r in rows), "",
            f"`tftrace --help`: {help_s:.2f} s (median of 5, a fresh process each).", ""]
    if "tftrace-ops" in rows[0][3]:
        r = rows[0][3]
        out.append(f"Steps, breakdown, verdict and bottlenecks add {r['tftrace']['seconds'] - r['tftrace-ops']['seconds']:.2f} s "
                   f"to the op table's {r['tftrace-ops']['seconds']:.2f} s on the captured trace.")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
