"""`python -m tftrace`."""

from tftrace.cli import console

console()
