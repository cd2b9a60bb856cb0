"""Let glibc keep freed memory for reuse while one command runs: large traces then read in linear time."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

_M_TOP_PAD = -2  # mallopt's parameter number (malloc.h)
# Each line of a large trace allocates and frees arrays of tens of MB. By default glibc hands that
# memory back to the system and faults it in again, page by page, for the next line; on this
# project's machine that made 10M events cost 1.6x the time per event of 1M. Keeping up to 128 MB
# at the top of the heap for reuse brings it back to about 1x, for 2% more peak memory.
_TOP_PAD = 128 << 20


def keep_freed_memory() -> None:
    """For a one-shot command only: a library must not change its host process's allocator."""
    _set_top_pad(_TOP_PAD)


_DEFAULT_TOP_PAD = 128 << 10  # glibc's DEFAULT_TOP_PAD, unless MALLOC_TOP_PAD_ set another


@contextlib.contextmanager
def freed_memory_kept():
    """keep_freed_memory for the length of one task in a process tftrace does not own (a Dask
    worker), then glibc's default again. Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_
    = 64 KiB, which hands each line's freed arrays back at once: a host then took 3.5x as long."""
    keep_freed_memory()
    try:
        yield
    finally:
        _set_top_pad(int(os.environ.get("MALLOC_TOP_PAD_", "") or _DEFAULT_TOP_PAD))


def _set_top_pad(value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).mallopt(_M_TOP_PAD, value)
    except (OSError, AttributeError):  # not glibc
        pass
