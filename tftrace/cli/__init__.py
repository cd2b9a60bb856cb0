"""The `tftrace` command: a typer app (commands.py) and its value parsing (values.py)."""

from tftrace.cli.commands import app, main, run

__all__ = ["app", "main", "run"]
