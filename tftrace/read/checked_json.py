"""A JSON object saved beside a run, its malformed fields left out with one note."""

from __future__ import annotations

import json

from tftrace.model.errors import TraceReadError
from tftrace.read import storage


def read_checked(path: str, what: str, malformed) -> tuple[dict | None, list[str]]:
    """(fields, problems): the object's well-formed fields (None if the file is unreadable or not
    an object); `malformed(data)` names the fields of the wrong type."""
    try:
        data = json.loads(storage.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError, TraceReadError) as e:
        return None, [f"{path}: unreadable tftrace {what} ({e}); left out"]
    if not isinstance(data, dict):
        return None, [f"{path}: the tftrace {what} is not a JSON object; left out"]
    bad = sorted(malformed(data))
    clean = {k: v for k, v in data.items() if k not in bad}
    return clean, [f"{path}: {what} field{'s' if len(bad) > 1 else ''} {', '.join(bad)} malformed; left out"] if bad else []
