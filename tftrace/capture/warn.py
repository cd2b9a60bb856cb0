"""The warnings capture gives instead of failing the user's code: shown every time, at the user's line."""

from __future__ import annotations

import sys
import warnings


class CaptureWarning(UserWarning):
    """Something kept tftrace from capturing; the user's code goes on regardless."""


_NOT_USER = {"tftrace", "keras", "tf_keras", "tensorflow", "jax", "jaxlib", "torch", "contextlib", "atexit"}


def warn(message: str) -> None:
    """A CaptureWarning pointing at the user's line."""
    # Shown every time, not once per line: a capture that fails again from the same notebook line
    # must say so again. Appended, so a filter the user sets still wins.
    if not any(f[2] is CaptureWarning for f in warnings.filters):
        warnings.filterwarnings("always", category=CaptureWarning, append=True)
    warnings.warn(f"tftrace: {message}", CaptureWarning, stacklevel=_user_level())


def _user_level() -> int:
    """The stacklevel of the first frame outside tftrace and the frameworks: the user's line."""
    frame, level = sys._getframe(2), 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in _NOT_USER:
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2
