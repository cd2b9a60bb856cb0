"""The reader's C part (read/_events.c) where the install built it, else None: every caller keeps
its numpy way, which gives the same result."""

from __future__ import annotations

try:
    from tftrace.read import _events as events
except ImportError:  # pragma: no cover - an install without a C compiler
    events = None
