"""The commands an agent or a script asks with (`findings`, `explain`, `whatif`, `schema`, `mcp`):
glue only, the answers come from tftrace.api."""

# No `from __future__ import annotations`: typer reads the options from these annotations.

import json
import sys
from typing import Annotated, Literal, Optional

import typer

from tftrace.cli.commands import CommandError, OutputOpt, PathArg, _command, _text_width, _write

AnswerFormat = Literal["text", "json"]
Schema = Literal["all", "report", "diff", "findings", "explain", "whatif", "owners", "roofline", "captured", "spilled",
                 "error"]
FormatOpt = Annotated[AnswerFormat, typer.Option("--format", "-f", metavar="FORMAT", help="Output format: text, json.")]
MaxBytesOpt = Annotated[int, typer.Option("--max-bytes", min=1, metavar="N", help=(
    "Print at most N bytes: a larger answer is written to a file named by its content, and its path printed."))]


def _answer(answer, fmt: str, name: str, output: Optional[str], max_bytes: int) -> int:
    from tftrace.render.answer_text import render_answer
    text = render_answer(answer, fmt, width=_text_width(output))
    if output is None:
        from tftrace.spill import spill
        spilled = spill(text, name, ".json" if fmt == "json" else ".txt", max_bytes)
        if spilled is not None:
            text = render_answer(spilled, fmt)
    _write(text, output)
    return 0


@_command("findings", "The ranked findings of each run under PATH, compact: id, projection and fix.")
def _findings(path: PathArg, fmt: FormatOpt = "text", output: OutputOpt = None, max_bytes: MaxBytesOpt = 100_000) -> int:
    from tftrace.api import findings
    return _answer(findings(path), fmt, "findings", output, max_bytes)


@_command("explain", "The ops, owners, steps and timeline slice behind one finding of the run at PATH.")
def _explain(
    path: PathArg,
    finding: Annotated[str, typer.Argument(metavar="ID", show_default=False,
                                           help="A finding's id, as `tftrace findings` lists it (layer/conv2d).")],
    fmt: FormatOpt = "text", output: OutputOpt = None, max_bytes: MaxBytesOpt = 100_000,
) -> int:
    from tftrace.api import explain
    return _answer(explain(path, finding), fmt, "explain", output, max_bytes)


@_command("whatif", "The step of the run at PATH once several findings' fixes are applied together.")
def _whatif(
    path: PathArg,
    fix: Annotated[Optional[list[str]], typer.Option("--fix", metavar="ID", show_default=False,
                                                     help="A finding's id to fix (repeat for several).")] = None,
    fmt: FormatOpt = "text", output: OutputOpt = None, max_bytes: MaxBytesOpt = 100_000,
) -> int:
    from tftrace.api import whatif
    if not fix:
        raise CommandError("give at least one --fix ID (tftrace findings PATH lists the ids)")
    return _answer(whatif(path, fix), fmt, "whatif", output, max_bytes)


@_command("schema", "Print the JSON Schema (draft 2020-12) of what --format json writes.")
def _schema(
    name: Annotated[Schema, typer.Argument(metavar="[NAME]", help="all (default), report, diff, findings, explain, "
                                           "whatif, owners, roofline, captured, spilled or error.")] = "all",
    output: OutputOpt = None,
) -> int:
    from tftrace.api import schema
    _write(json.dumps(schema(None if name == "all" else name), indent=2) + "\n", output)
    return 0


@_command("mcp", "Serve tftrace's questions to an agent over MCP (stdio): analyze, findings, explain, whatif, "
                 "diff, owners, roofline; pip install \"tftrace[mcp]\".")
def _mcp(
    allow_capture: Annotated[bool, typer.Option("--allow-capture", help="Also serve a capture tool (it runs "
                                                "`tftrace capture` against profiler servers you name).")] = False,
) -> int:
    try:
        from tftrace.mcp.tools import serve
    except ImportError as e:
        raise CommandError(f"tftrace mcp needs the mcp package: pip install \"tftrace[mcp]\" ({e})") from None
    if sys.stdin.isatty():
        print("tftrace mcp: serving MCP on stdin/stdout; an MCP client starts this command (Ctrl-C ends it)",
              file=sys.stderr)
    serve(allow_capture)
    return 0
