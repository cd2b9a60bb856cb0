"""`python -m tftrace`."""

from tftrace.cli import main

main()
