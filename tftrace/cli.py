"""The `tftrace` command: glue only (resolve paths, load, analyze, render, write)."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find where a TensorFlow/Keras run spends its time, from profiler traces.")

_FORMATS = "text|json|markdown|csv|html"


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    """tftrace: analyze and compare TensorFlow profiler traces."""
    if version:
        from tftrace import __version__
        typer.echo(__version__)
        raise typer.Exit(0)


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
    table: str = typer.Option("ops", "--table", help="With --format csv: ops, layers, categories, stages or steps."),
) -> None:
    """Rank where the time goes in each profiled run under PATH."""
    _check_format(fmt)
    from tftrace.errors import TftraceError
    from tftrace.render import render
    from tftrace.render.csv import TABLES
    if fmt == "csv" and table not in TABLES:
        _fail(f"unknown --table {table!r}; choose one of {', '.join(TABLES)}")
    try:
        from tftrace.api import analyze as run_analysis
        report = run_analysis(path, top=top)
    except TftraceError as e:
        _fail(str(e))
    color = output is None and fmt == "text" and sys.stdout.isatty()
    _write(render(report, fmt, table=table, color=color), output)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("tftrace: interrupted", err=True)
        sys.exit(130)
