"""The profiler server in this process (TensorFlow's or JAX's), for `tftrace capture host:port` from outside."""

from __future__ import annotations

from tftrace.capture import backend as backends
from tftrace.capture.warn import warn as _warn

_serving: set[int] = set()


def serve(port: int, backend: str | None = None) -> None:
    """Start the profiler server once per process (a second start on the port fails); `backend`:
    "tensorflow" or "jax" (None: the one a capture would choose)."""
    if port in _serving:
        return
    try:
        backends.profiler(backend or backends.choose()).serve(int(port))
        _serving.add(port)
    except Exception as e:
        _warn(f"could not start the profiler server on port {port} ({type(e).__name__}: {e}); "
              "tftrace capture will not reach this worker")
