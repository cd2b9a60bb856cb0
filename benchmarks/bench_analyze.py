"""Speed and memory of `tftrace analyze` against a Python floor and XProf, in one run.

    python benchmarks/make_traces.py          # once: large real traces in benchmarks/data/
    python benchmarks/bench_analyze.py        # prints ratios, writes benchmarks/RESULTS.md

Two views, each repeated with the tools interleaved (this machine is shared and noisy) and
reported as the median:

Whole commands (bench_command.py), what a user feels: each a fresh process timed from outside,
from interpreter start to exit, with its peak RSS:
  python       `python -c pass`: this machine's interpreter start
  parse        a bare parse of the file with TensorFlow's generated xplane_pb2 (loaded by path,
               without importing TensorFlow), file read included: the floor for a Python reader
  analyze      `tftrace analyze PATH --format json --no-tensorboard`
  xprof-ops    XProf's framework_op_stats conversion, in-process after its imports (as below)
on the ~1M-event captures, `analyze` on the scaled traces and on every sample trace, `tftrace
--help`, and where the start-up time of `analyze` goes (`python -X importtime`).

In-process (timed after imports, in a fresh process each):
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
import glob
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_command  # noqa: E402
from make_traces import trace_path  # noqa: E402
from results import ANALYZE_BEGIN, ANALYZE_END, put_block, results_markdown  # noqa: E402

_WORKER = r"""
import json, os, shutil, sys, tempfile, time
sys.path.insert(0, {root!r})
tool, path = sys.argv[1], sys.argv[2]

def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024

if tool in ("floor", "floor-3"):
    import numpy as np
    from itertools import chain
    from operator import attrgetter
    from tftrace.read.schema import XSpace, XSpaceLazy
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
    from tftrace.read.loader import load
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
base = status_mb("VmRSS:")
t0 = time.perf_counter()
run()
seconds = time.perf_counter() - t0
# VmHWM, not ru_maxrss: ru_maxrss starts from the peak of the process this one was forked from.
peak = status_mb("VmHWM:")
print(json.dumps({{"seconds": seconds, "peak_mb": peak - base, "base_mb": base}}))
"""


def measure(tool: str, path: str) -> dict:
    code = _WORKER.format(root=ROOT)
    proc = subprocess.run([sys.executable, "-c", code, tool, path], capture_output=True, text=True, timeout=3600,
                          env=bench_command.environment())
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed on {path}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _medians(runs: dict[str, list[dict]]) -> dict:
    return {t: {"seconds": statistics.median(r["seconds"] for r in rs),
                "peak_mb": statistics.median(r["peak_mb"] for r in rs), "n": len(rs),
                "spread": (min(r["seconds"] for r in rs), max(r["seconds"] for r in rs))} for t, rs in runs.items()}


def bench(path: str, tools: list[str], repeats: int) -> dict:
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    for _ in range(repeats):
        for tool in tools:  # interleaved: a slow moment of the machine hits every tool
            runs[tool].append(measure(tool, path))
    return _medians(runs)


def bench_whole(names: list[str], scales: list[str], repeats: int) -> dict[str, dict]:
    """Whole commands on the large traces, and XProf in-process beside them, interleaved."""
    runs: dict[str, dict[str, list[dict]]] = {}
    for _ in range(repeats):
        for name in names + scales:
            path = trace_path(name)
            cmds = bench_command.commands(path)
            if name in scales:  # the floor commands are measured on the captures only
                cmds = {"analyze": cmds["analyze"]}
            for tool, argv in cmds.items():
                runs.setdefault(name, {}).setdefault(tool, []).append(bench_command.run(argv))
            if name in names:
                runs[name].setdefault("xprof-ops", []).append(measure("xprof-ops", path))
    return {name: _medians(r) for name, r in runs.items()}


def bench_samples(repeats: int) -> dict[str, dict]:
    """`tftrace analyze` on every sample trace and `tftrace --help`, as fresh processes."""
    samples = sorted(os.path.relpath(os.path.dirname(os.path.dirname(p)), ROOT)
                     for p in glob.glob(os.path.join(ROOT, "sample_traces", "*", "*", "plugins", "profile")))
    runs: dict[str, list[dict]] = {}
    for _ in range(repeats):
        for sample in samples:
            runs.setdefault(sample, []).append(bench_command.run(bench_command.analyze_command(sample)))
        runs.setdefault("--help", []).append(bench_command.run(bench_command.help_command()))
        runs.setdefault("analyze --help", []).append(bench_command.run(bench_command.help_command("analyze")))
        runs.setdefault("python", []).append(bench_command.run([sys.executable, "-c", "pass"]))
    return _medians(runs)


def events(path: str) -> int:
    """Counted in a child process: loading a trace here would raise every later child's ru_maxrss."""
    code = f"import sys; sys.path.insert(0, {HERE!r}); from make_traces import count_events; print(count_events({path!r}))"
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=ROOT).stdout)


def versions() -> dict:
    out = {"python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    for pkg in ("protobuf", "numpy", "rich", "xprof", "tensorflow-cpu"):
        try:
            from importlib.metadata import version
            out[pkg] = version(pkg)
        except Exception:
            out[pkg] = "not installed"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3, help="in-process runs per tool and trace")
    parser.add_argument("--command-repeats", type=int, default=7, help="whole-command runs per tool and trace")
    parser.add_argument("--scales", default="x2,x5,x10", help="scaled traces to time (tftrace and floor only)")
    parser.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"))
    args = parser.parse_args()
    captures = [n for n in ("captured", "keras_tb") if os.path.exists(trace_path(n))]
    if not captures:
        sys.exit("run `python benchmarks/make_traces.py` first")
    scales = [s for s in args.scales.split(",") if s and os.path.exists(trace_path(s))]
    for argv in [bench_command.help_command(), *bench_command.commands(trace_path(captures[0])).values()]:
        bench_command.run(argv)  # warm-up: bytecode cache and page cache, as on a user's second run
    sizes = {n: (os.path.getsize(trace_path(n)), events(trace_path(n))) for n in captures + scales}
    whole = bench_whole(captures, scales, args.command_repeats)
    for name, r in whole.items():
        print(_whole_line(name, sizes[name], r), flush=True)
    samples = bench_samples(args.command_repeats)
    print(f"samples: slowest {max(r['seconds'] for k, r in samples.items() if k.startswith('sample')):.2f} s; "
          f"--help {samples['--help']['seconds']:.2f} s", flush=True)
    imports = bench_command.import_times(bench_command.analyze_command(sorted(samples)[-1]))
    rows = []
    plan = [(n, ["floor", "floor-3", "tftrace", "tftrace-ops", "xprof-ops", "xprof-input"]) for n in captures]
    plan += [(s, ["floor", "floor-3", "tftrace"]) for s in scales]
    for name, tools in plan:
        result = bench(trace_path(name), tools, args.repeats)
        rows.append((name, *sizes[name], result))
        _print_row(rows[-1])
    block = results_markdown(whole, sizes, samples, imports, rows, versions(), args)
    put_block(args.output, block, ANALYZE_BEGIN, ANALYZE_END)  # the other benchmarks' blocks and the readings stay
    print(f"\nwrote {args.output}")


def _whole_line(name: str, size: tuple[int, int], r: dict) -> str:
    a = r["analyze"]["seconds"]
    line = f"{name}: {size[1]:,} events: tftrace analyze {a:.2f} s, peak RSS {r['analyze']['peak_mb']:.0f} MB"
    if "parse" in r:
        line += f" = {a / r['parse']['seconds']:.2f}x bare parse, {a / r['xprof-ops']['seconds']:.2f}x xprof"
    return line


def _print_row(row) -> None:
    name, size, events, r = row
    t = r["tftrace"]["seconds"]
    line = f"{name}: {events:,} events, {size / 1e6:.0f} MB: tftrace {t:.2f}s = {t / r['floor']['seconds']:.2f}x floor"
    if "xprof-ops" in r:
        line += f", {t / r['xprof-ops']['seconds']:.2f}x xprof framework_op_stats"
    line += f"; peak +{r['tftrace']['peak_mb']:.0f} MB = {r['tftrace']['peak_mb'] * 1e6 / size:.2f}x file"
    print(line, flush=True)


if __name__ == "__main__":
    main()
