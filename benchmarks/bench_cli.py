"""Start-up of the `tftrace` command line: `--help`, `analyze --help` and a small sample's analyze.

    python benchmarks/bench_cli.py                 # prints the medians
    python benchmarks/bench_cli.py --write         # and records them in benchmarks/RESULTS.md

Each command is a fresh process timed from outside (bench_command.run), interleaved with
`python -c pass` so a slow moment of this shared machine hits every command alike; figures are
medians with the fastest and slowest run. The targets (issue 23): `--help` and `analyze --help`
within 0.2 s, a small sample's analyze within 0.4 s.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_command  # noqa: E402

SAMPLE = os.path.join("sample_traces", "augment", "flatten")
HEADING = "## The command line: start-up (issue 23)"


def commands() -> dict[str, list[str]]:
    tftrace = [sys.executable, "-m", "tftrace"]
    return {
        "`python -c pass`": [sys.executable, "-c", "pass"],
        "`tftrace --help`": [*tftrace, "--help"],
        "`tftrace analyze --help`": [*tftrace, "analyze", "--help"],
        f"`tftrace analyze {SAMPLE} --format json --no-tensorboard`": bench_command.analyze_command(SAMPLE),
        f"`tftrace analyze {SAMPLE} --no-tensorboard` (text)": [*tftrace, "analyze", SAMPLE, "--no-tensorboard"],
    }


def bench(repeats: int) -> dict[str, dict]:
    cmds = commands()
    for argv in cmds.values():
        bench_command.run(argv)  # warm-up: bytecode and page cache, as on a user's second run
    runs: dict[str, list[dict]] = {name: [] for name in cmds}
    for _ in range(repeats):
        for name, argv in cmds.items():
            runs[name].append(bench_command.run(argv))
    out = {}
    for name, rs in runs.items():
        wall = [r["seconds"] for r in rs]
        out[name] = {"median": statistics.median(wall), "low": min(wall), "high": max(wall),
                     "cpu": statistics.median(r["cpu_seconds"] for r in rs)}
    return out


def section(results: dict[str, dict], repeats: int, imports: dict[str, float], load: str) -> str:
    python = results["`python -c pass`"]["median"]
    lines = [HEADING, "",
             f"`python benchmarks/bench_cli.py --write`: {repeats} interleaved fresh processes per command, "
             "medians (fastest-slowest), the time above this machine's interpreter start, and the CPU time "
             "(user + system; other jobs on the machine move it less than the wall time). Targets: "
             "`--help` and `analyze --help` within 0.2 s, a small sample's analyze within 0.4 s.", "",
             f"Load average when measured: {load}.", "",
             "| command | s | above `python -c pass` s | CPU s |", "|---|---|---|---|"]
    for name, r in results.items():
        above = "" if name == "`python -c pass`" else f"{r['median'] - python:.2f}"
        lines.append(f"| {name} | {r['median']:.2f} ({r['low']:.2f}-{r['high']:.2f}) | {above} | {r['cpu']:.2f} |")
    lines += ["", "Where `tftrace --help` spends its imports (`python -X importtime`, one run, each package with "
              "what it imports first):", "", "| import | s |", "|---|---|"]
    lines += [f"| {name} | {seconds:.3f} |" for name, seconds in imports.items()]
    return "\n".join(lines) + "\n"


def help_imports() -> dict[str, float]:
    argv = [sys.executable, "-m", "tftrace", "--help"]
    wanted = ("typer", "typer.rich_utils", "rich", "pydantic", "tftrace.cli", "tftrace.api", "numpy")
    times = bench_command.import_times(argv, wanted)
    return {name: times[name] for name in ("all", *wanted) if name in times}


def write(text: str, path: str) -> None:
    """Replace this benchmark's section of RESULTS.md, or add it at the end."""
    with open(path, encoding="utf-8") as f:
        old = f.read()
    pattern = re.compile(re.escape(HEADING) + r".*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _m: text + "\n", old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + text
    with open(path, "w", encoding="utf-8") as f:
        f.write(new.rstrip("\n") + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="record the figures in benchmarks/RESULTS.md")
    args = parser.parse_args()
    before = os.getloadavg()
    results = bench(args.repeats)
    after = os.getloadavg()
    load = f"{before[0]:.2f} before, {after[0]:.2f} after (1-minute, {os.cpu_count()} cores)"
    for name, r in results.items():
        print(f"{r['median']:.3f} s ({r['low']:.3f}-{r['high']:.3f}), CPU {r['cpu']:.3f} s  {name}")
    print("load average:", load)
    imports = help_imports()
    print("  ".join(f"{k} {v:.3f}" for k, v in imports.items()))
    if args.write:
        write(section(results, args.repeats, imports, load), os.path.join(HERE, "RESULTS.md"))


if __name__ == "__main__":
    main()
