"""The `tftrace` command: a typer app (commands.py) and its value parsing (values.py)."""

import os as _os
import sys as _sys


def _numpy_on_one_blas_thread() -> None:
    """Import numpy with OpenBLAS on one thread: starting its thread pool takes 20 ms of every
    command's start (a tenth of a small trace's whole run), and no analysis multiplies large
    matrices. The variable goes at once, so nothing the command starts inherits it."""
    if "numpy" in _sys.modules or "OPENBLAS_NUM_THREADS" in _os.environ:
        return
    _os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    except ImportError:  # the command says so itself, where it needs numpy
        pass
    finally:
        del _os.environ["OPENBLAS_NUM_THREADS"]


_numpy_on_one_blas_thread()

from tftrace.cli.commands import app, console, main, run  # noqa: E402 - after numpy's import above
from tftrace.cli import questions as _questions  # noqa: E402,F401 - registers findings, explain, whatif, schema, mcp

__all__ = ["app", "console", "main", "run"]
