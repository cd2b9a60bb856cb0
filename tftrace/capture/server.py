"""TensorFlow's profiler server in this process, for `tftrace capture host:port` from outside."""

from __future__ import annotations

from tftrace.capture.session import _warn

_serving: set[int] = set()


def serve(port: int) -> None:
    """Start TensorFlow's profiler server once per process (a second start on the port fails)."""
    if port in _serving:
        return
    import tensorflow as tf
    try:
        tf.profiler.experimental.server.start(int(port))
        _serving.add(port)
    except Exception as e:
        _warn(f"could not start the profiler server on port {port} ({type(e).__name__}: {e}); "
              "tftrace capture will not reach this worker")
