"""The `tftrace` command, a typer app: glue only (resolve paths, load, analyze, render, write)."""

# No `from __future__ import annotations`: typer reads the options from these annotations.

import contextlib
import functools
import os
import sys
from typing import Annotated, Literal, Optional

import typer

from tftrace.render import DIFF_FORMATS, FORMATS
from tftrace.model.tables import TABLES

# Literal choices: typer checks them and lists them in --help, with no Enum to convert back.
Format = Literal[FORMATS]
DiffFormat = Literal[DIFF_FORMATS]
Table = Literal[(*TABLES, "all")]
Side = Literal["all", "host", "device"]

TEXT_WIDTH = 100  # the text report's width when it goes neither to a terminal nor COLUMNS says
_MIN_WIDTH = 60  # narrower, the tables' numbers would not fit beside a name

# Plain help (rich_markup_mode=None): typer's rich help imports rich's Markdown, Syntax and
# Traceback (markdown-it, pygments), 0.17 s here, which alone would take `--help` past 0.2 s.
app = typer.Typer(
    name="tftrace", help="Find where a TensorFlow/Keras run spends its time, from profiler traces.",
    context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True,
    rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=True)


class CommandError(Exception):
    """A one-line error for the user: printed as `tftrace: error: ...`, exit code 2."""


def _command(name: str, help: str):
    """Register a command whose Ctrl-C ends it with one line and exit code 130, as before
    (typer would turn the interrupt into a silent exit)."""
    def register(fn):
        @functools.wraps(fn)
        def guarded(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except KeyboardInterrupt:
                _fail("interrupted", "interrupted", 130)
                raise typer.Exit(130) from None
        return app.command(name, help=help, short_help=help.split(". ")[0].rstrip("."))(guarded)
    return register


def _version(value: bool) -> None:
    if value:
        from tftrace.model.version import VERSION
        print(VERSION)
        raise typer.Exit()


@app.callback()
def _top(ctx: typer.Context,
         version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print the version and exit.")] = False) -> None:
    if ctx.invoked_subcommand is None:  # bare `tftrace`: the help, and success
        print(ctx.get_help())
        raise typer.Exit()


PathArg = Annotated[str, typer.Argument(metavar="PATH", show_default=False,
                                        help="A logdir, a run folder, or one *.xplane.pb / *.trace.json[.gz] file.")]
OutputOpt = Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", show_default=False,
                                                  help="Write to this file instead of stdout (whole or not at all).")]


@_command("analyze", "Rank where the time goes in each profiled run under PATH.")
def _analyze(
    path: PathArg,
    fmt: Annotated[Format, typer.Option("--format", "-f", metavar="FORMAT",
                                        help=f"Output format: {', '.join(FORMATS)}.")] = "text",
    top: Annotated[int, typer.Option("--top", "-n", min=1, metavar="N", help="How many ops, layers and categories to list.")] = 15,
    output: OutputOpt = None,
    table: Annotated[Table, typer.Option("--table", metavar="TABLE", help=f"With --format csv: {', '.join(TABLES)}, "
                                         "or all (one file each: OUTPUT_<table>.csv).")] = "ops",
    tensorboard: Annotated[bool, typer.Option("--tensorboard/--no-tensorboard", help="Also write the results into "
                                              "the logdir as a TensorBoard run.")] = True,
    ops: Annotated[Side, typer.Option("--ops", metavar="SIDE", help="Which ops the op table lists: all, host or "
                                      "device (shares stay of all op time).")] = "all",
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, metavar="N", show_default=False,
                                                   help="Processes that analyse a run's hosts at once (default: the "
                                                        "machine's cores, at most one per host).")] = None,
    dask: Annotated[Optional[str], typer.Option("--dask", metavar="ADDRESS", show_default=False,
                                                help="Analyse the hosts on this Dask scheduler instead "
                                                     "(pip install \"tftrace[dask]\").")] = None,
) -> int:
    from tftrace.api import analyze
    from tftrace.malloc import keep_freed_memory
    from tftrace.render import render
    if fmt == "csv" and table == "all" and output is None:
        raise CommandError("--table all writes one file per table: give --output (a file name to derive them from)")
    keep_freed_memory()
    from tftrace.hostmap import dask_client, default_workers
    client = dask_client(dask) if dask else None
    try:
        with _progress() as progress:
            report = analyze(path, top=top, progress=progress, ops=ops, workers=workers or default_workers(),
                             client=client)
    finally:
        if client is not None:
            client.close()
    if fmt == "csv" and table == "all":
        stem = output[:-4] if output.endswith(".csv") else output
        for name in TABLES:
            _write(render(report, "csv", table=name), f"{stem}_{name}.csv")
    elif fmt == "text":
        _write(render(report, "text", color=_color(output), width=_text_width(output)), output)
    else:
        _write(render(report, fmt, table=table), output)
    if tensorboard and _is_folder(path):
        _write_tensorboard(path, report)
    return 0


@_command("diff", "Did the candidate make steps faster, and which ops, layers and categories moved?")
def _diff(
    baseline: Annotated[str, typer.Argument(metavar="BASELINE", show_default=False,
                                            help="A logdir, run folder, trace file or saved JSON report.")],
    candidate: Annotated[str, typer.Argument(metavar="CANDIDATE", show_default=False,
                                             help="The same kinds.")],
    fmt: Annotated[DiffFormat, typer.Option("--format", "-f", metavar="FORMAT",
                                            help=f"Output format: {', '.join(DIFF_FORMATS)}.")] = "text",
    top: Annotated[int, typer.Option("--top", "-n", min=1, metavar="N", help="How many ops, layers and categories to list.")] = 20,
    output: OutputOpt = None,
    fail_if_slower: Annotated[Optional[str], typer.Option(
        "--fail-if-slower", metavar="PCT", show_default=False,
        help="CI speed gate: exit 1 if the candidate's median step time is slower by more than PCT percent and the "
             "change is significant (Mann-Whitney U); the reason goes to stderr.")] = None,
) -> int:
    from tftrace.api import diff
    from tftrace.malloc import keep_freed_memory
    from tftrace.render.diff import render_diff
    keep_freed_memory()
    result = diff(baseline, candidate, top=top, fail_if_slower=fail_if_slower)
    if fmt == "text":
        _write(render_diff(result, "text", color=_color(output), width=_text_width(output)), output)
    else:
        _write(render_diff(result, fmt), output)
    if result.gate is None:
        return 0
    _warn(f"speed gate {result.gate.reason}")
    return 1 if result.gate.failed else 0


@_command("capture", "Capture running profiler servers at the same time into one run with a file per host. "
                     "Start a server in each worker first: tf.profiler.experimental.server.start(6009), or "
                     "TraceCallback(..., server_port=6009).")
def _capture(
    addresses: Annotated[str, typer.Argument(metavar="ADDRESSES", help="Profiler servers to capture, host:port[,host:port...] "
                                             "(one per worker).", show_default=False)],
    logdir: Annotated[str, typer.Argument(metavar="LOGDIR", help="The logdir to write the run into (plugins/profile/<run>/).",
                                          show_default=False)],
    duration_ms: Annotated[int, typer.Option("--duration-ms", min=1, metavar="MS", help="How long to trace, in milliseconds.")]
    = 2000,
    python_tracer: Annotated[bool, typer.Option("--python-tracer", help="Also record Python function calls (main "
                                                "thread only; slows the workers while tracing).")] = False,
) -> int:
    from tftrace.capture.remote import capture, parse_addresses
    result = capture(parse_addresses(addresses), logdir, duration_ms, python_tracer)
    for address, why in sorted(result.failed.items()):
        _warn(f"warning: {address}: {why}; captured the others")
    print(f"captured {len(result.captured)} host(s) ({', '.join(result.captured)}) into {result.run_dir}")
    print(f"next: tftrace analyze {result.run_dir}")
    return 0


@_command("tensorboard", "Start TensorBoard on LOGDIR (Profile tab and tftrace's summaries).")
def _tensorboard(
    logdir: Annotated[str, typer.Argument(metavar="LOGDIR", help="The logdir to show.", show_default=False)],
    port: Annotated[int, typer.Option("--port", min=1, metavar="PORT", help="Port on 127.0.0.1.")] = 6006,
) -> int:
    from tftrace.tensorboard.serve import serve
    if not os.path.isdir(logdir):
        raise CommandError(f"{logdir}: no such folder")
    serve(logdir, port)
    return 0


def _is_folder(path: str) -> bool:
    """A local folder, or a folder in cloud storage (already read: it exists)."""
    from tftrace.api import is_folder
    return is_folder(path)


def _write(text: str, output: Optional[str]) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from tftrace.atomic import write_text
    from tftrace.api import is_trace_file
    if is_trace_file(output):
        raise CommandError(f"{output}: refusing to overwrite a trace file; choose another --output")
    try:
        write_text(output, text)
    except OSError as e:
        raise CommandError(f"{output}: cannot write: {e.strerror or e}") from None


def _warn(message: str) -> None:
    print(f"tftrace: {message}", file=sys.stderr)


def _color(output: Optional[str]) -> bool:
    return output is None and sys.stdout.isatty()


def _text_width(output: Optional[str]) -> int:
    """COLUMNS if set, else the terminal's width, else 100 (a pipe or a file)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0 and output is None and sys.stdout.isatty():
        with contextlib.suppress(OSError):  # a terminal that does not say its size
            columns = os.get_terminal_size(sys.stdout.fileno()).columns
    return max(_MIN_WIDTH, columns) if columns > 0 else TEXT_WIDTH


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
    from tftrace.model.errors import TftraceError
    from tftrace.tensorboard.summaries import write_report
    try:
        where = write_report(logdir, report)
    except (TftraceError, OSError) as e:
        _warn(f"warning: TensorBoard summaries not written: {e}")
        return
    _warn(f"TensorBoard summaries in {where} (tftrace tensorboard {logdir})")


_JSON_ERRORS = False  # this command's errors are JSON on stdout (--format json, `schema`), else a line on stderr
_JSON_COMMANDS = ("schema",)  # commands whose output is always JSON


def wants_json(args: list[str]) -> bool:
    """Does the command line ask for JSON (`--format json`, `--format=json`, `-f json`, `-fjson`)?"""
    if args and args[0] in _JSON_COMMANDS:
        return True
    for i, a in enumerate(args):
        if a in ("--format=json", "-fjson") or (a in ("--format", "-f") and args[i + 1:i + 2] == ["json"]):
            return True
    return False


def _fail(code: str, message: str, exit_code: int) -> int:
    """Say an error: `{"error": {"code", "message", "exit"}}` on stdout where JSON was asked for,
    else one line on stderr; returns the exit code."""
    if _JSON_ERRORS:
        import json
        error = {"error": {"code": code, "message": " ".join(message.split()), "exit": exit_code}}
        sys.stdout.write(json.dumps(error) + "\n")
    else:
        print(f"tftrace: {message}" if code == "interrupted" else f"tftrace: error: {message}", file=sys.stderr)
    return exit_code


def _usage_error(e) -> str:
    """Click's message on one line, pointing at the help of the command it concerns."""
    message = " ".join(e.format_message().split())
    where = e.ctx.command_path if getattr(e, "ctx", None) is not None else "tftrace"
    return f"{message} (see {where} --help)"


def run(argv: Optional[list] = None) -> int:
    """Run one command; returns its exit code (0 fine, 1 speed gate failed, 2 bad input)."""
    from tftrace.cli.values import install
    from tftrace.model.errors import TftraceError
    global _JSON_ERRORS
    _JSON_ERRORS = wants_json(sys.argv[1:] if argv is None else list(argv))
    command = typer.main.get_command(app)
    install(command)  # typer would import pydantic to convert the values: 0.1 s
    try:
        # standalone_mode=False: usage errors come back here as exceptions instead of typer's
        # boxed panels, so every error is one line; --help, --version and completion return 0.
        code = command.main(args=argv, prog_name="tftrace", standalone_mode=False)
    except typer.TyperException as e:  # a wrong option, a missing argument, a bad value
        return _fail("usage", _usage_error(e), 2)
    except CommandError as e:
        return _fail("bad_input", str(e), 2)
    except TftraceError as e:
        return _fail(e.code, str(e), 2)
    except typer.Abort:  # end of input at a prompt typer itself asked (completion install)
        return 1
    return code if isinstance(code, int) else 0


def main() -> None:
    try:
        code = run()
    except KeyboardInterrupt:  # while the arguments were still being read
        print("tftrace: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


def console() -> None:
    """The `tftrace` program (and `python -m tftrace`): main(), then out at once. Once the output
    is flushed and the exit handlers have run, all that is left is the interpreter taking apart
    what the command built (30 ms after a 1M-event trace), which a finished command need not
    wait for. main() itself keeps SystemExit for callers in a process of their own."""
    import atexit
    try:
        main()
    except SystemExit as e:
        code = e.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader that went away (`tftrace analyze ... | head`): nothing to tell it
        pass
    atexit._run_exitfuncs()
    os._exit(code)
