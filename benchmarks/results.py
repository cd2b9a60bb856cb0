"""Write benchmarks/RESULTS.md: each benchmark its own block, the readings around them kept."""

from __future__ import annotations


ANALYZE_BEGIN, ANALYZE_END = "<!-- bench_analyze begin -->", "<!-- bench_analyze end -->"


def put_block(path: str, block: str, begin: str, end: str, heading: str = "") -> None:
    """One benchmark's own block of RESULTS.md (`begin` to `end`, both in `block`): in place of
    its last version, or added at the end, under `heading` where one is given."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# tftrace benchmark results\n"
    if begin in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + (f"{heading}\n\n" if heading else "") + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def _s(r: dict) -> str:
    lo, hi = r["spread"]
    return f"{r['seconds']:.2f} ({lo:.2f}-{hi:.2f})"


def results_markdown(whole, sizes, samples, imports, rows, vers, args) -> str:
    out = [ANALYZE_BEGIN,
           "Produced by `python benchmarks/make_traces.py && python benchmarks/bench_analyze.py` on this "
           "project's 2-core machine, which other developers' jobs share: every figure is the median of "
           f"interleaved runs ({args.command_repeats} per whole command, {args.repeats} in-process), with the "
           "fastest and slowest run in brackets where the noise matters.", "",
           "Machine and versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()), ""]
    out += _whole(whole, sizes)
    out += _samples(samples)
    out += _imports(imports)
    out += _in_process(rows, args.repeats)
    return "\n".join(out + [ANALYZE_END])


def _whole(whole, sizes) -> list[str]:
    out = ["## What a user runs: whole commands", "",
           "Each run is a fresh process timed from outside, from interpreter start to exit; peak is its "
           "peak RSS. Bytecode is cached as after `pip install` (`PYTHONPYCACHEPREFIX` set; this machine "
           "sets `PYTHONDONTWRITEBYTECODE`, which would recompile tftrace's sources every time).", "",
           "- analyze: `python -m tftrace analyze TRACE --format json --no-tensorboard`",
           "- bare parse: `python -c 'load xplane_pb2 by path; XSpace.FromString(open(TRACE, \"rb\").read())'` with "
           "TensorFlow's generated `tensorflow/tsl/profiler/protobuf/xplane_pb2.py` (loaded by path, so "
           "TensorFlow itself is not imported); file read included",
           "- XProf: `xprof.convert.raw_to_tool_data.xspace_to_tool_data([copy], \"framework_op_stats\", {})`, "
           "in-process after its imports (so XProf's start-up is not counted), interleaved with the commands",
           "- python: `python -c pass`, this machine's interpreter start", "",
           "| trace | events | MB | python s | bare parse s | tftrace analyze s | XProf framework_op_stats s | "
           "analyze / XProf | analyze / parse | analyze peak RSS MB | peak / file |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in whole.items():
        size, events = sizes[name]
        a = r["analyze"]
        cells = [name, f"{events:,}", f"{size / 1e6:.0f}"]
        if "parse" in r:
            cells += [f"{r['python']['seconds']:.2f}", _s(r["parse"]), _s(a), _s(r["xprof-ops"]),
                      f"{a['seconds'] / r['xprof-ops']['seconds']:.2f}", f"{a['seconds'] / r['parse']['seconds']:.2f}"]
        else:
            cells += ["", "", _s(a), "", "", ""]
        cells += [f"{a['peak_mb']:.0f}", f"{a['peak_mb'] * 1e6 / size:.2f}"]
        out.append("| " + " | ".join(cells) + " |")
    base = next(iter(whole))
    rate = whole[base]["analyze"]["seconds"] / sizes[base][1]
    out += ["", "Whole-command time per million events, relative to the first trace: " + ", ".join(
        f"{n} {r['analyze']['seconds'] / sizes[n][1] * 1e6:.2f} s/M ({r['analyze']['seconds'] / sizes[n][1] / rate:.2f}x)"
        for n, r in whole.items()), ""]
    return out


def _samples(samples) -> list[str]:
    out = ["## Small traces and `--help`", "",
           "`python -m tftrace analyze sample_traces/SCENARIO/VARIANT --format json --no-tensorboard`, each a "
           "fresh process:", "", "| command | s | peak RSS MB |", "|---|---|---|"]
    for name, r in samples.items():
        label = f"analyze {name}" if name.startswith("sample") else ("`python -c pass`" if name == "python"
                                                                     else f"`tftrace {name}`")
        out.append(f"| {label} | {_s(r)} | {r['peak_mb']:.0f} |")
    return out + [""]


def _imports(imports) -> list[str]:
    out = ["## Where start-up goes", "",
           "`python -X importtime -m tftrace analyze SAMPLE --format json --no-tensorboard` (one run; importtime "
           "itself slows imports a little). Each package's figure is its first import, including what it "
           "imports first; `all` sums every top-level import, interpreter start-up included.", "",
           "| import | s |", "|---|---|"]
    out += [f"| {name} | {seconds:.3f} |" for name, seconds in imports.items()]
    return out + [""]


def _in_process(rows, repeats: int) -> list[str]:
    out = ["## In-process (after imports)", "",
           f"Median of {repeats} interleaved runs, each in a fresh process, timed after imports; peak is the "
           "process's peak RSS minus its RSS after imports.", "",
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
    out += ["", "Linearity (seconds per million events, relative to the first trace): " +
            ", ".join(f"{name} {r['tftrace']['seconds'] / events * 1e6:.2f} s/M "
                      f"({r['tftrace']['seconds'] / events / base_rate:.2f}x)" for name, _s, events, r in rows), ""]
    first = rows[0][3]
    if "tftrace-ops" in first:
        out.append(f"Steps, breakdown, verdict and bottlenecks add {first['tftrace']['seconds'] - first['tftrace-ops']['seconds']:.2f} s "
                   f"to the op table's {first['tftrace-ops']['seconds']:.2f} s on {rows[0][0]}.")
    return out
