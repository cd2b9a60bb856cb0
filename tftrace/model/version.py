"""tftrace's version: the one place it is written (pyproject.toml states it too)."""

VERSION = "0.1.0"
