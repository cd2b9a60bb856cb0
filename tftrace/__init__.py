"""tftrace: find where a TensorFlow/Keras run spends its time, from the profiler's own traces."""

from __future__ import annotations

from tftrace.model.version import VERSION as __version__

__all__ = ["TraceCallback", "trace", "step", "region", "confirm", "confirm_predict", "load", "analyze", "explore",
           "diff", "TftraceError", "__version__"]


def __getattr__(name: str):
    # Lazy: `import tftrace` must not import TensorFlow, pandas or the analyses up front.
    if name in ("TraceCallback",):
        from tftrace.capture.callback import TraceCallback
        return TraceCallback
    if name in ("trace", "step", "region"):
        from tftrace.capture import session
        return getattr(session, name)
    if name in ("confirm", "confirm_predict"):
        from tftrace.capture import confirm
        return getattr(confirm, name)
    if name == "load":
        from tftrace.api import load
        return load
    if name == "analyze":
        from tftrace.api import analyze
        return analyze
    if name == "explore":
        from tftrace.api import explore
        return explore
    if name == "diff":
        from tftrace.api import diff
        return diff
    if name in ("load_ipython_extension", "unload_ipython_extension"):  # `%load_ext tftrace`
        from tftrace import notebook
        return getattr(notebook, name)
    if name == "TftraceError":
        from tftrace.model.errors import TftraceError
        return TftraceError
    raise AttributeError(f"module 'tftrace' has no attribute {name!r}")
