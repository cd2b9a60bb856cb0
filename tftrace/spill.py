"""Answers too large to print go to a file, whose path is printed instead (as XProf's CLI does past
its limit): the file is named by its content, so the same answer lands at the same path."""

from __future__ import annotations

import hashlib
import os
import tempfile

from tftrace.model.answers import Spilled, SpilledFile

LIMIT = 100_000  # bytes an answer prints (about 25,000 tokens); larger ones are written to a file


def spill(text: str, name: str, suffix: str, limit: int = LIMIT) -> Spilled | None:
    """None when `text` fits in `limit` bytes; else it is written to `<tmp>/tftrace/<name>-<hash><suffix>`."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return None
    from tftrace.atomic import write_text
    folder = os.path.join(tempfile.gettempdir(), "tftrace")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}-{hashlib.sha256(data).hexdigest()[:16]}{suffix}")
    if not os.path.exists(path):
        write_text(path, text)
    return Spilled(SpilledFile(path, len(data), limit))
