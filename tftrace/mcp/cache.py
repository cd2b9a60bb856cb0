"""Analysed runs kept by path and what their files say of themselves (names, sizes, modification
times), so an agent's second question about a run does not read it again, and a run captured anew
is read again."""

from __future__ import annotations

import os
from collections import OrderedDict

KEEP = 8  # reports kept, the least recently asked for dropped first


class Reports:
    def __init__(self, make, keep: int = KEEP):
        self._make = make  # (path, top) -> Report
        self._kept: OrderedDict = OrderedDict()
        self._keep = keep

    def get(self, path: str, top: int | None = None):
        key = (os.path.abspath(path) if "://" not in path else path, top)
        mark = signature(path)
        hit = self._kept.get(key)
        if hit is not None and mark is not None and hit[0] == mark:
            self._kept.move_to_end(key)
            return hit[1]
        report = self._make(path, top)
        self._kept[key] = (mark, report)
        self._kept.move_to_end(key)
        while len(self._kept) > self._keep:
            self._kept.popitem(last=False)
        return report


def signature(path: str):
    """Every file under a local path with its size and modification time; None for a URL or a path
    that is not there (never kept: read each time)."""
    if "://" in path or not os.path.exists(path):
        return None
    if os.path.isfile(path):
        st = os.stat(path)
        return ((path, st.st_size, st.st_mtime_ns),)
    out = []
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(folder, f)
            try:
                st = os.stat(full)
            except OSError:  # gone since the listing
                continue
            out.append((full, st.st_size, st.st_mtime_ns))
    return tuple(out)
