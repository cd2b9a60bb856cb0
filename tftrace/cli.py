"""The `tftrace` command: glue only (resolve paths, load, analyze, render, write)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Optional

import typer

from tftrace.render import DIFF_FORMATS, FORMATS

# Plain help (rich_markup_mode=None): formatting it with rich costs 0.1 s of imports per command.
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Find where a TensorFlow/Keras run spends its time, from profiler traces.")

_FORMATS = "|".join(FORMATS)


def _print_version(version: bool) -> None:
    if version:
        from tftrace import __version__
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """tftrace: analyze and compare TensorFlow profiler traces."""


def _fail(message: str) -> None:
    typer.echo(f"tftrace: error: {message}", err=True)
    raise typer.Exit(2)


def _write(text: str, output: Optional[str]) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from tftrace.logdir import is_trace_file
    if is_trace_file(output):
        _fail(f"{output}: refusing to overwrite a trace file; choose another --output")
    try:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        _fail(f"{output}: cannot write: {e.strerror or e}")


def _check_format(fmt: str, allowed: str = _FORMATS) -> None:
    if fmt not in allowed.split("|"):
        _fail(f"unknown --format {fmt!r}; choose one of {allowed.replace('|', ', ')}")


@app.command()
def analyze(
    path: str = typer.Argument(..., help="A logdir, a run folder, or one *.xplane.pb / *.trace.json[.gz] file."),
    fmt: str = typer.Option("text", "--format", "-f", help=f"Output format: {_FORMATS}."),
    top: int = typer.Option(15, "--top", "-n", min=1, help="How many ops, layers and categories to list."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    table: str = typer.Option("ops", "--table", help="With --format csv: ops, layers, categories, stages, steps, hosts, "
                              "devices, python, or all (one file each: OUTPUT_<table>.csv)."),
    tensorboard: bool = typer.Option(True, "--tensorboard/--no-tensorboard",
                                     help="Also write the results into the logdir as a TensorBoard run."),
    ops: str = typer.Option("all", "--ops", help="Which ops the op table lists: all, host or device "
                            "(shares stay of all op time)."),
) -> None:
    """Rank where the time goes in each profiled run under PATH."""
    _check_format(fmt)
    if ops not in ("all", "host", "device"):
        _fail(f"unknown --ops {ops!r}; choose one of all, host, device")
    from tftrace.errors import TftraceError
    from tftrace.render import render
    from tftrace.render.csv import TABLES
    if fmt == "csv" and table not in (*TABLES, "all"):
        _fail(f"unknown --table {table!r}; choose one of {', '.join(TABLES)}, all")
    if fmt == "csv" and table == "all" and output is None:
        _fail("--table all writes one file per table: give --output (a file name to derive them from)")
    try:
        from tftrace.api import analyze as run_analysis
        from tftrace.malloc import keep_freed_memory
        keep_freed_memory()
        with _progress() as progress:
            report = run_analysis(path, top=top, progress=progress, ops=ops)
    except TftraceError as e:
        _fail(str(e))
    color = output is None and fmt == "text" and sys.stdout.isatty()
    if fmt == "csv" and table == "all":
        stem = output[:-4] if output.endswith(".csv") else output
        for name in TABLES:
            _write(render(report, fmt, table=name), f"{stem}_{name}.csv")
    else:
        _write(render(report, fmt, table=table, color=color), output)
    if tensorboard and os.path.isdir(path):
        _write_tensorboard(path, report)


@app.command()
def diff(
    baseline: str = typer.Argument(..., help="Baseline: a logdir, run folder, trace file or saved JSON report."),
    candidate: str = typer.Argument(..., help="Candidate: the same kinds."),
    fmt: str = typer.Option("text", "--format", "-f", help=f"Output format: {'|'.join(DIFF_FORMATS)}."),
    top: int = typer.Option(20, "--top", "-n", min=1, help="How many ops, layers and categories to list."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    fail_if_slower: Optional[str] = typer.Option(
        None, "--fail-if-slower", metavar="PCT",
        help="CI speed gate: exit 1 if the candidate's median step time is slower by more than PCT percent "
             "and the change is significant (Mann-Whitney U); the reason goes to stderr."),
) -> None:
    """Did the candidate make steps faster, and which ops, layers and categories moved?"""
    _check_format(fmt, "|".join(DIFF_FORMATS))
    from tftrace.errors import TftraceError
    from tftrace.render.diff import render_diff
    try:
        from tftrace.api import diff as run_diff
        from tftrace.malloc import keep_freed_memory
        keep_freed_memory()
        result = run_diff(baseline, candidate, top=top, fail_if_slower=fail_if_slower)
    except TftraceError as e:
        _fail(str(e))
    _write(render_diff(result, fmt, color=output is None and fmt == "text" and sys.stdout.isatty()), output)
    if result.gate is not None:
        typer.echo(f"tftrace: speed gate {result.gate.reason}", err=True)
        raise typer.Exit(1 if result.gate.failed else 0)


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
        typer.echo(f"tftrace: warning: TensorBoard summaries not written: {e}", err=True)
        return
    typer.echo(f"tftrace: TensorBoard summaries in {where} (tftrace tensorboard {logdir})", err=True)


@app.command()
def capture(
    addresses: str = typer.Argument(..., help="Profiler servers to capture, host:port[,host:port...] (one per worker)."),
    logdir: str = typer.Argument(..., help="The logdir to write the run into (plugins/profile/<run>/)."),
    duration_ms: int = typer.Option(2000, "--duration-ms", min=1, help="How long to trace, in milliseconds."),
    python_tracer: bool = typer.Option(False, "--python-tracer", help="Also record Python function calls "
                                       "(main thread only; slows the workers while tracing)."),
) -> None:
    """Capture running profiler servers at the same time into one run with a file per host.

    Start a server in each worker first: tf.profiler.experimental.server.start(6009), or
    TraceCallback(..., server_port=6009)."""
    from tftrace.capture.remote import capture as run_capture, parse_addresses
    from tftrace.errors import TftraceError
    try:
        result = run_capture(parse_addresses(addresses), logdir, duration_ms, python_tracer)
    except TftraceError as e:
        _fail(str(e))
    for address, why in sorted(result.failed.items()):
        typer.echo(f"tftrace: warning: {address}: {why}; captured the others", err=True)
    typer.echo(f"captured {len(result.captured)} host(s) ({', '.join(result.captured)}) into {result.run_dir}")
    typer.echo(f"next: tftrace analyze {result.run_dir}")


@app.command("tensorboard")
def tensorboard_cmd(
    logdir: str = typer.Argument(..., help="The logdir to show."),
    port: int = typer.Option(6006, "--port", help="Port on 127.0.0.1."),
) -> None:
    """Start TensorBoard on LOGDIR (Profile tab and tftrace's summaries)."""
    from tftrace.errors import TftraceError
    from tftrace.tensorboard import serve
    if not os.path.isdir(logdir):
        _fail(f"{logdir}: no such folder")
    try:
        serve(logdir, port)
    except TftraceError as e:
        _fail(str(e))


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("tftrace: interrupted", err=True)
        sys.exit(130)
