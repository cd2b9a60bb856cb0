"""Jupyter and IPython: `%load_ext tftrace`, then a cell starting with `%%tftrace [LOGDIR]` runs
under `tftrace.trace()` and the report of what it captured is shown below it."""

from __future__ import annotations

import argparse
import shlex
import sys

USAGE = "%%tftrace [LOGDIR] [--label NAME] [--top N]"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a one-line UsageError in the notebook, never a SystemExit
        from IPython.core.error import UsageError
        raise UsageError(f"{message}; usage: {USAGE}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%%tftrace", add_help=False)
    p.add_argument("logdir", nargs="?", default="logs", help="where the run is written (default: logs)")
    p.add_argument("--label", default="notebook", help="the run's label (default: notebook)")
    p.add_argument("--top", type=int, default=15, help="ops, layers and categories listed (default: 15)")
    return p


def tftrace_cell(line: str, cell: str) -> None:
    """Profile the cell, then display the report (HTML in notebooks, text in a terminal). The
    report is kept in the variable `_tftrace_report`."""
    from IPython import get_ipython
    from IPython.core.error import UsageError
    try:
        args = _parser().parse_args(shlex.split(line))
    except ValueError as e:  # unbalanced quotes
        raise UsageError(f"{e}; usage: {USAGE}") from None
    if args.top < 1:
        raise UsageError(f"--top must be at least 1; usage: {USAGE}")
    shell = get_ipython()
    from tftrace.capture.session import trace
    captured = trace(args.logdir, label=args.label)
    captured.__enter__()
    error: BaseException | None = None
    try:
        # run_cell shows the cell's own traceback and keeps its error instead of raising it:
        # hand that error to the capture so the window is marked cut short by it.
        result = shell.run_cell(cell)
        error = result.error_before_exec or result.error_in_exec
    except BaseException as e:
        error = e
        raise
    finally:
        captured.__exit__(type(error) if error is not None else None, error, None)
    if error is not None:
        print(f"tftrace: the cell raised {type(error).__name__}; no report (what was captured is kept in "
              f"{captured.run_dir or args.logdir}, marked cut short)", file=sys.stderr)
        return
    if not captured.run_dir:
        print("tftrace: nothing was captured (see the warning above)", file=sys.stderr)
        return
    _show(captured.run_dir, args.top, shell)


def _show(run_dir: str, top: int, shell) -> None:
    from IPython.display import display
    from tftrace.api import analyze
    from tftrace.model.errors import TftraceError
    try:
        report = analyze(run_dir, top=top)
    except TftraceError as e:
        print(f"tftrace: {e}", file=sys.stderr)
        return
    shell.user_ns["_tftrace_report"] = report
    display({"text/html": report._repr_html_(), "text/plain": _plain(report, run_dir)}, raw=True)


def _plain(report, run_dir: str) -> str:
    """For frontends without HTML (terminal IPython): each run's verdict and bottlenecks.
    (The rich text report would turn itself into HTML outputs inside a kernel.)"""
    lines = []
    for run in report.runs:
        lines.append(f"tftrace: run {run.name}: " + (run.error or run.verdict.text))
        lines += [f"  {b.rank}. {b.title} ({b.share:.0%} of step time)" for b in run.bottlenecks]
    lines.append(f"full report: tftrace analyze {run_dir}")
    return "\n".join(lines)


def load_ipython_extension(ipython) -> None:
    """`%load_ext tftrace`: register the `%%tftrace` cell magic."""
    ipython.register_magic_function(tftrace_cell, magic_kind="cell", magic_name="tftrace")


def unload_ipython_extension(ipython) -> None:
    ipython.magics_manager.magics["cell"].pop("tftrace", None)
