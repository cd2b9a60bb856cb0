"""Capture running profiler servers, one per worker, into one run: `tftrace capture`.

Each worker runs TensorFlow's profiler server (`tf.profiler.experimental.server.start(port)`,
or `TraceCallback(server_port=port)`). The client is the `xprof` package's, the one behind
TensorBoard's capture button: it honours tracer levels, but given several addresses at once it
captures only the first, so each server is asked on its own thread, all at the same time, and
the hosts' windows overlap. The files land in one run folder, one `<addr>_<port>.xplane.pb` each.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass, field

from tftrace.model.errors import TftraceError
from tftrace.model.layout import PROFILE_DIR

_ADDRESS = re.compile(r"^(?:grpc://)?([A-Za-z0-9_.\-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$")


class CaptureError(TftraceError):
    """Nothing could be captured from any address."""


@dataclass(frozen=True)
class RemoteCapture:
    run_dir: str
    captured: tuple[str, ...]  # addresses whose trace is in run_dir
    failed: dict = field(default_factory=dict)  # address -> why nothing came back


def parse_addresses(text: str) -> list[str]:
    """`host:port[,host:port...]`, each checked; raises CaptureError naming a bad one."""
    out = [a.strip() for a in text.split(",") if a.strip()]
    if not out:
        raise CaptureError("no address given: expected host:port[,host:port...]")
    for a in out:
        if not _ADDRESS.match(a) or not 0 < int(a.rsplit(":", 1)[1]) < 65536:
            raise CaptureError(f"{a!r} is not host:port (the address a worker's profiler server listens on)")
    return [a.removeprefix("grpc://") for a in out]


def capture(addresses: list[str], logdir: str, duration_ms: int, python_tracer: bool = False,
            host_tracer_level: int = 2) -> RemoteCapture:
    """Ask every server for a `duration_ms` trace at once; write one run under `logdir`."""
    client = _client()
    root = os.path.join(logdir, *PROFILE_DIR)
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as e:
        raise CaptureError(f"cannot write to {logdir}: {e.strerror or e}") from None
    options = {"host_tracer_level": host_tracer_level, "python_tracer_level": int(python_tracer),
               "device_tracer_level": 1}
    failed: dict[str, str] = {}
    scratch = tempfile.mkdtemp(prefix="tftrace_capture_")
    try:
        with _quiet_native_logs():
            threads = [threading.Thread(target=_ask, args=(client, a, os.path.join(scratch, str(i)), duration_ms,
                                                           options, failed), daemon=True)
                       for i, a in enumerate(addresses)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return _gather(addresses, scratch, root, failed)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _client():
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except ImportError:
        raise CaptureError("capturing needs the profiler client: pip install tensorboard-plugin-profile "
                           "(it brings xprof)") from None
    return _pywrap_profiler_plugin


def _ask(client, address: str, folder: str, duration_ms: int, options: dict, failed: dict) -> None:
    if not _reachable(address):
        failed[address] = "unreachable (nothing listens there: is the worker's profiler server started?)"
        return
    try:
        # Dataset ops off: tracing a MultiWorkerMirroredStrategy worker through its server can
        # crash it in TF 2.21 ("double free"), more often with them; tf.data's iterator events
        # are recorded without them.
        client.trace(address, folder, "", False, int(duration_ms), 1, options)
    except Exception as e:  # the client raises RuntimeError with gRPC's status text
        failed[address] = _why(str(e))


def _reachable(address: str, timeout_s: float = 3.0) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def _why(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "no trace came back"
    if "failed to connect" in message or "Connection refused" in message:
        return "unreachable (no profiler server answers there)"
    if "no trace data" in message or "No trace event" in message:
        return "no trace came back (the worker stopped, or its server is not a TensorFlow profiler)"
    return first


def _gather(addresses: list[str], scratch: str, root: str, failed: dict) -> RemoteCapture:
    """Move every address's file into one new run folder, named after the capture's start."""
    found: dict[str, str] = {}
    for i, address in enumerate(addresses):
        files = [os.path.join(d, f) for d, _s, fs in os.walk(os.path.join(scratch, str(i)))
                 for f in fs if f.endswith(".xplane.pb")]
        if files:
            found[address] = files[0]
        elif address not in failed:
            failed[address] = "no trace came back"
    if not found:
        why = "; ".join(f"{a}: {w}" for a, w in failed.items())
        raise CaptureError(f"nothing captured from {len(addresses)} address(es): {why}")
    run_dir = _new_run_dir(root, os.path.basename(os.path.dirname(next(iter(found.values())))))
    for path in found.values():
        shutil.move(path, os.path.join(run_dir, os.path.basename(path)))
    return RemoteCapture(run_dir, tuple(found), dict(failed))


def _new_run_dir(root: str, name: str) -> str:
    path, n = os.path.join(root, name), 2
    while os.path.exists(path):
        path, n = os.path.join(root, f"{name}_{n}"), n + 1
    os.makedirs(path)
    return path


@contextlib.contextmanager
def _quiet_native_logs():
    """The client's C++ side logs every gRPC step to the process's stdout and stderr; keep them
    out of the user's terminal (failures are reported from the call's own error)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as sink:
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
