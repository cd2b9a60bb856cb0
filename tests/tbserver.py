"""A real TensorBoard server for tests: start, poll its HTTP API, stop."""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

SERVER_TIMEOUT_S = 120  # TensorBoard imports TensorFlow when it is installed: slow on a busy machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, route: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=10) as r:
        body = r.read()
        # The profile plugin gzips its answers whatever the request accepts.
        return json.loads(gzip.decompress(body) if r.headers.get("Content-Encoding") == "gzip" else body)


def fetch(port: int, route: str) -> tuple[int, str]:
    """(HTTP status, body as text) of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=60) as r:
            status, body, encoding = r.status, r.read(), r.headers.get("Content-Encoding")
    except urllib.error.HTTPError as e:
        status, body, encoding = e.code, e.read(), e.headers.get("Content-Encoding")
    return status, (gzip.decompress(body) if encoding == "gzip" else body).decode("utf-8")


def _wait_until(ready, proc, log_path: str, what: str):
    """Poll until `ready()` is truthy; TensorBoard answers before it has read the logdir."""
    deadline = time.monotonic() + SERVER_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"TensorBoard exited ({proc.returncode}) before {what}:\n{open(log_path).read()[-3000:]}")
        try:
            value = ready()
            if value:
                return value
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    pytest.fail(f"TensorBoard: no {what} after {SERVER_TIMEOUT_S} s:\n{open(log_path).read()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to `tftrace tensorboard` (it stops its server), then make sure its group is gone."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session this test created: the server and its data server
    except ProcessLookupError:
        pass
    proc.wait()
