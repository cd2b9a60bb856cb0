"""The C part of the reader (tftrace/read/_events.c): optional, so an install without a C compiler
still works (lines.py then decodes in numpy alone). Everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tftrace.read._events", ["tftrace/read/_events.c"], optional=True)])
