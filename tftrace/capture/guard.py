"""Close a capture window before an exception or Ctrl-C unwinds the code that runs it."""

from __future__ import annotations

import signal
import sys
import threading


def normal_end(exc: BaseException) -> bool:
    # How Keras' loops end an epoch or a call: not an interruption.
    return isinstance(exc, StopIteration) or type(exc).__name__ == "OutOfRangeError"


def _wrapper(fn, handlers: list, own: bool):
    def guarded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BaseException as e:
            if not normal_end(e):
                for handler in list(handlers):
                    handler(e)
            raise  # the same exception, its traceback only grown by this frame

    guarded.__wrapped__ = fn
    guarded._tftrace_handlers = handlers
    guarded._tftrace_own = own  # whether `fn` was set on the instance, or came from its class
    return guarded


class Guards:
    """The callables one owner wrapped. Every exception through one (other than a loop's normal
    end) calls `on_raise(exc)` before it propagates unchanged; `on_raise` must not raise. Owners
    sharing a callable share one wrapper, so restoring in any order leaves the others' in place."""

    def __init__(self, on_raise):
        self._on_raise = on_raise
        self._wrapped: list[tuple[object, str]] = []

    def wrap(self, obj, attr: str) -> None:
        fn = getattr(obj, attr, None)
        if fn is None or not callable(fn) or any(o is obj and a == attr for o, a in self._wrapped):
            return
        handlers = getattr(fn, "_tftrace_handlers", None)
        if handlers is not None:  # another owner's wrapper: join it
            handlers.append(self._on_raise)
        else:
            try:
                setattr(obj, attr, _wrapper(fn, [self._on_raise], attr in getattr(obj, "__dict__", {})))
            except Exception:  # read-only or slotted attributes stay unguarded
                return
        self._wrapped.append((obj, attr))

    def restore(self, obj=None, attr: str | None = None) -> None:
        """Unwrap what this owner wrapped (only `obj`'s, only `attr`, if given)."""
        keep = []
        for o, a in self._wrapped:
            if (obj is not None and o is not obj) or (attr is not None and a != attr):
                keep.append((o, a))
                continue
            self._unwrap(o, a)
        self._wrapped = keep

    def _unwrap(self, o, attr: str) -> None:
        current = getattr(o, attr, None)
        handlers = getattr(current, "_tftrace_handlers", None)
        if handlers is None:
            return  # replaced since (Keras rebuilt the step function): nothing of ours is left
        if self._on_raise in handlers:
            handlers.remove(self._on_raise)
        if handlers:
            return  # another owner still guards it
        try:
            if current._tftrace_own:
                setattr(o, attr, current.__wrapped__)
            else:
                delattr(o, attr)  # back to the class's method
        except Exception:
            pass


def running(frame) -> bool:
    """Whether `frame` is still executing on some thread (a frame that raised out is not)."""
    if frame is None:
        return False
    for top in sys._current_frames().values():
        f = top
        while f is not None:
            if f is frame:
                return True
            f = f.f_back
    return False


class SigintGuard:
    """While armed, Ctrl-C first calls `on_interrupt()` wherever it lands, then raises
    KeyboardInterrupt as Python's own handler does. Guards see only exceptions that pass through
    them; Ctrl-C can land in Keras' own loop (predict fetches its batches there), which none
    wraps. Armed only where Python's default handler is in place: a handler of the user's, or an
    ignored SIGINT, is left alone."""

    def __init__(self, on_interrupt):
        self._on_interrupt = on_interrupt
        self._handler = self._handle  # one bound method, so getsignal() can tell it is ours

    def arm(self) -> None:
        try:
            if threading.current_thread() is threading.main_thread() and \
                    signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, self._handler)
        except (ValueError, OSError):  # no signals here (embedded interpreters)
            pass

    def disarm(self) -> None:
        try:
            if signal.getsignal(signal.SIGINT) is self._handler:
                signal.signal(signal.SIGINT, signal.default_int_handler)
        except (ValueError, OSError):
            pass

    def _handle(self, signum, frame):
        self.disarm()  # a second Ctrl-C while the window is saved interrupts as usual
        self._on_interrupt()
        signal.default_int_handler(signum, frame)
