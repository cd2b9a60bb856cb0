"""The `tftrace` command: glue only (resolve paths, load, analyze, render, write).

Built on the standard library's argparse: a command-line framework that coerces arguments
through pydantic (typer does) costs more start-up than analysing a small trace.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from tftrace.render import DIFF_FORMATS, FORMATS
from tftrace.tables import TABLES

_SIDES = ("all", "host", "device")


class CommandError(Exception):
    """A one-line error for the user: printed as `tftrace: error: ...`, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise CommandError(f"{message} (see {self.prog} --help)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def _parser() -> argparse.ArgumentParser:
    from tftrace import __version__
    top = _Parser(prog="tftrace", description="Find where a TensorFlow/Keras run spends its time, from "
                                              "profiler traces.")
    top.add_argument("--version", action="version", version=__version__, help="Print the version and exit.")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("analyze", help="Rank where the time goes in each profiled run under PATH.",
                       description="Rank where the time goes in each profiled run under PATH.")
    p.add_argument("path", help="A logdir, a run folder, or one *.xplane.pb / *.trace.json[.gz] file.")
    p.add_argument("--format", "-f", dest="fmt", default="text", choices=FORMATS, metavar="FORMAT",
                   help=f"Output format: {', '.join(FORMATS)} (default text).")
    p.add_argument("--top", "-n", type=_positive, default=15, help="How many ops, layers and categories to list.")
    p.add_argument("--output", "-o", help="Write to this file instead of stdout.")
    p.add_argument("--table", default="ops", choices=(*TABLES, "all"), metavar="TABLE",
                   help=f"With --format csv: {', '.join(TABLES)}, or all (one file each: OUTPUT_<table>.csv).")
    p.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=True,
                   help="Also write the results into the logdir as a TensorBoard run (default on).")
    p.add_argument("--ops", default="all", choices=_SIDES, metavar="SIDE",
                   help="Which ops the op table lists: all, host or device (shares stay of all op time).")
    p.add_argument("--workers", type=_positive, default=None,
                   help="Processes that analyse a run's hosts at once (default: the machine's cores, at most one "
                        "per host).")
    p.add_argument("--dask", metavar="ADDRESS", help="Analyse the hosts on this Dask scheduler instead "
                                                     "(pip install \"tftrace[dask]\").")
    p.set_defaults(run=_analyze)

    p = sub.add_parser("diff", help="Did the candidate make steps faster, and what moved?",
                       description="Did the candidate make steps faster, and which ops, layers and categories "
                                   "moved?")
    p.add_argument("baseline", help="Baseline: a logdir, run folder, trace file or saved JSON report.")
    p.add_argument("candidate", help="Candidate: the same kinds.")
    p.add_argument("--format", "-f", dest="fmt", default="text", choices=DIFF_FORMATS, metavar="FORMAT",
                   help=f"Output format: {', '.join(DIFF_FORMATS)} (default text).")
    p.add_argument("--top", "-n", type=_positive, default=20, help="How many ops, layers and categories to list.")
    p.add_argument("--output", "-o", help="Write to this file instead of stdout.")
    p.add_argument("--fail-if-slower", metavar="PCT",
                   help="CI speed gate: exit 1 if the candidate's median step time is slower by more than PCT "
                        "percent and the change is significant (Mann-Whitney U); the reason goes to stderr.")
    p.set_defaults(run=_diff)

    p = sub.add_parser("capture", help="Capture running profiler servers at once into one run.",
                       description="Capture running profiler servers at the same time into one run with a file "
                                   "per host. Start a server in each worker first: "
                                   "tf.profiler.experimental.server.start(6009), or "
                                   "TraceCallback(..., server_port=6009).")
    p.add_argument("addresses", help="Profiler servers to capture, host:port[,host:port...] (one per worker).")
    p.add_argument("logdir", help="The logdir to write the run into (plugins/profile/<run>/).")
    p.add_argument("--duration-ms", type=_positive, default=2000, help="How long to trace, in milliseconds.")
    p.add_argument("--python-tracer", action="store_true",
                   help="Also record Python function calls (main thread only; slows the workers while tracing).")
    p.set_defaults(run=_capture)

    p = sub.add_parser("tensorboard", help="Start TensorBoard on LOGDIR (Profile tab and tftrace's summaries).",
                       description="Start TensorBoard on LOGDIR (Profile tab and tftrace's summaries).")
    p.add_argument("logdir", help="The logdir to show.")
    p.add_argument("--port", type=_positive, default=6006, help="Port on 127.0.0.1.")
    p.set_defaults(run=_tensorboard)
    return top


def _write(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from tftrace.read.logdir import is_trace_file
    if is_trace_file(output):
        raise CommandError(f"{output}: refusing to overwrite a trace file; choose another --output")
    try:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise CommandError(f"{output}: cannot write: {e.strerror or e}") from None


def _warn(message: str) -> None:
    print(f"tftrace: {message}", file=sys.stderr)


def _analyze(args) -> int:
    from tftrace.api import analyze
    from tftrace.malloc import keep_freed_memory
    from tftrace.render import render
    if args.fmt == "csv" and args.table == "all" and args.output is None:
        raise CommandError("--table all writes one file per table: give --output (a file name to derive them from)")
    keep_freed_memory()
    from tftrace.hostmap import dask_client, default_workers
    client = dask_client(args.dask) if args.dask else None
    try:
        with _progress() as progress:
            report = analyze(args.path, top=args.top, progress=progress, ops=args.ops,
                             workers=args.workers or default_workers(), client=client)
    finally:
        if client is not None:
            client.close()
    color = args.output is None and args.fmt == "text" and sys.stdout.isatty()
    if args.fmt == "csv" and args.table == "all":
        stem = args.output[:-4] if args.output.endswith(".csv") else args.output
        for name in TABLES:
            _write(render(report, "csv", table=name), f"{stem}_{name}.csv")
    else:
        _write(render(report, args.fmt, table=args.table, color=color), args.output)
    if args.tensorboard and os.path.isdir(args.path):
        _write_tensorboard(args.path, report)
    return 0


def _diff(args) -> int:
    from tftrace.api import diff
    from tftrace.malloc import keep_freed_memory
    from tftrace.render.diff import render_diff
    keep_freed_memory()
    result = diff(args.baseline, args.candidate, top=args.top, fail_if_slower=args.fail_if_slower)
    color = args.output is None and args.fmt == "text" and sys.stdout.isatty()
    _write(render_diff(result, args.fmt, color=color), args.output)
    if result.gate is None:
        return 0
    _warn(f"speed gate {result.gate.reason}")
    return 1 if result.gate.failed else 0


def _capture(args) -> int:
    from tftrace.capture.remote import capture, parse_addresses
    result = capture(parse_addresses(args.addresses), args.logdir, args.duration_ms, args.python_tracer)
    for address, why in sorted(result.failed.items()):
        _warn(f"warning: {address}: {why}; captured the others")
    print(f"captured {len(result.captured)} host(s) ({', '.join(result.captured)}) into {result.run_dir}")
    print(f"next: tftrace analyze {result.run_dir}")
    return 0


def _tensorboard(args) -> int:
    from tftrace.tensorboard import serve
    if not os.path.isdir(args.logdir):
        raise CommandError(f"{args.logdir}: no such folder")
    serve(args.logdir, args.port)
    return 0


@contextlib.contextmanager
def _progress():
    """A bar on stderr while large traces are read, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn
    bar = Progress(TextColumn("reading {task.description}"), BarColumn(), DownloadColumn(),
                   console=Console(stderr=True), transient=True)
    tasks: dict[str, int] = {}

    def report(path: str, done: int, total: int) -> None:
        if path not in tasks:
            tasks[path] = bar.add_task(os.path.basename(path), total=total)
        bar.update(tasks[path], completed=done)

    with bar:
        yield report


def _write_tensorboard(logdir: str, report) -> None:
    """Summaries beside the profiled runs; a failure here never hides the report just printed."""
    from tftrace.errors import TftraceError
    from tftrace.tensorboard import write_report
    try:
        where = write_report(logdir, report)
    except (TftraceError, OSError) as e:
        _warn(f"warning: TensorBoard summaries not written: {e}")
        return
    _warn(f"TensorBoard summaries in {where} (tftrace tensorboard {logdir})")


def run(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (0 fine, 1 speed gate failed, 2 bad input)."""
    from tftrace.errors import TftraceError
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        return args.run(args)
    except (CommandError, TftraceError) as e:
        print(f"tftrace: error: {e}", file=sys.stderr)
        return 2


def main() -> None:
    try:
        code = run()
    except KeyboardInterrupt:
        print("tftrace: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)
