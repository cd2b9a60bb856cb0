"""Per-instance wrappers of Keras callback hooks, put back exactly: step markers, callback names."""

from __future__ import annotations

# The hooks' own time is this thread's CPU time: a wait for the GIL, which another thread (Keras'
# worker turning logs into numbers) holds, is not theirs and would happen without them too.
from time import thread_time_ns as own_ns

from tftrace.model.names import CALLBACK_MARK as PREFIX

_MISSING = object()
_FRAMEWORKS = ("keras", "tf_keras")


class Patches:
    """Methods replaced on single instances, never on their class, and put back exactly: the
    instance's own attribute where it had one, else none, so the class's method shows again."""

    def __init__(self):
        self._set: list[tuple] = []

    def __bool__(self) -> bool:
        return bool(self._set)

    def put(self, obj, attr: str, wrapper_for) -> bool:
        """Set `wrapper_for(current method)` on `obj`; False if `obj` takes no such attribute."""
        fn = getattr(obj, attr, None)
        if fn is None or not callable(fn):
            return False
        try:
            before = vars(obj).get(attr, _MISSING)
            wrapper = wrapper_for(fn)
            setattr(obj, attr, wrapper)
        except Exception:  # slotted, read-only or odd objects stay as they are
            return False
        self._set.append((obj, attr, before, wrapper))
        return True

    def restore(self) -> None:
        done, self._set = self._set, []
        for obj, attr, before, wrapper in reversed(done):
            try:
                if vars(obj).get(attr) is not wrapper:
                    continue  # someone set their own since: theirs stays
                if before is _MISSING:
                    delattr(obj, attr)
                else:
                    setattr(obj, attr, before)
            except Exception:
                pass


def mark_callbacks(patches: Patches, callbacks, skip: type, trace, clock=None) -> None:
    """Wrap each hook that `callbacks` (a CallbackList) calls and that does something of its own, on
    every callback but `skip`'s instances, in `trace("tftrace callback <Class>.<hook>")` (a TraceMe:
    TensorFlow's `Trace` or JAX's `TraceAnnotation`); the marks' own time adds to `clock.hooks_ns`."""
    hooks = [a for a in dir(type(callbacks)) if a.startswith("on_")]
    seen = set()
    for cb in list(getattr(callbacks, "callbacks", None) or ()):
        if isinstance(cb, skip) or id(cb) in seen:
            continue
        seen.add(id(cb))
        for hook in hooks:
            if _own(cb, hook):
                name = _name(type(cb).__name__, hook)
                patches.put(cb, hook, lambda fn, name=name: marked(fn, name, trace, clock))


def marked(fn, name: str, trace, clock=None):
    """`fn` inside `trace(name)` (a profiler range); the range's own time, entering and leaving it,
    adds to `clock.hooks_ns` where a clock is given (the capture's time, not the program's)."""
    if clock is None:
        def call(*args, **kwargs):
            with trace(name):
                return fn(*args, **kwargs)
    else:
        def call(*args, **kwargs):
            began = own_ns()
            region = trace(name)
            region.__enter__()
            entered = own_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                left = own_ns()
                region.__exit__(None, None, None)
                clock.hooks_ns += own_ns() - left + entered - began
    call.__wrapped__ = fn
    return call


def _name(cls: str, hook: str) -> str:
    # TraceMe reads '#' as the start of its metadata; `name:Type` reads as a TF op (tftrace.model.names).
    return PREFIX + f"{cls}.{hook}".replace(":", "_").replace("#", "_")


def _own(cb, hook: str) -> bool:
    """Whether the hook does something: the base Callback's are no-ops, or forward to an older hook
    (on_train_batch_end to on_batch_end), which is then marked itself if a class overrides it."""
    try:
        if hook in vars(cb):  # LambdaCallback sets its hooks on the instance
            return callable(vars(cb)[hook])
    except TypeError:
        pass
    fn = getattr(cb, hook, None)
    if fn is None or getattr(fn, "_is_default", False):
        return False
    for klass in type(cb).__mro__:
        if hook in vars(klass):
            return not (klass.__name__ == "Callback" and klass.__module__.split(".")[0] in _FRAMEWORKS)
    return False
