"""Give freed heap memory back to the operating system between reading and analysing."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name) if name else None
        return libc if libc is not None and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_free_memory() -> None:
    """glibc keeps a large freed heap for reuse; the analyses allocate differently shaped
    arrays, so without this the peak is the sum of both phases, not the larger one."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
