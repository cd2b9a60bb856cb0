"""The Keras CallbackList a TraceCallback runs in, and the frame running its loop."""

from __future__ import annotations

import sys


def calling_list(callback):
    """The CallbackList setting `callback` up (Keras 3 and tf.keras call set_model from theirs)."""
    try:
        frame = sys._getframe(2)
        for _ in range(3):
            owner = frame.f_locals.get("self")
            if owner is not callback and any(c is callback for c in getattr(owner, "callbacks", None) or ()):
                return owner
            frame = frame.f_back
    except Exception:  # no frames to inspect (other interpreters): the step functions stay guarded
        pass
    return None


def loop_frame(callbacks, ours: tuple):
    """The frame calling the hooks: Keras' fit/evaluate/predict, or the user's own loop. `ours`: the
    module globals whose frames are the capture's own, skipped with the list's methods."""
    codes = {getattr(f, "__code__", None) for k in type(callbacks).__mro__[:-1] for f in vars(k).values()} \
        if callbacks is not None else set()
    frame = sys._getframe(1)
    while frame is not None and (any(frame.f_globals is g for g in ours) or frame.f_code in codes):
        frame = frame.f_back
    return frame
