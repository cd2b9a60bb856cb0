"""Start TensorBoard, with tftrace's tab among its plugins, on a logdir (`tftrace tensorboard`)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import signal
import subprocess
import sys
import threading

from tftrace.tensorboard.summaries import TensorBoardError

TAB = "tftrace"  # the tab's plugin name, tftrace.tensorboard.plugin.PLUGIN_NAME (importing it would import TensorBoard)


def serve_command(logdir: str, port: int) -> list[str]:
    """TensorBoard with every installed plugin, tftrace's tab among them (see tftrace.tensorboard.main)."""
    return [sys.executable, "-m", "tftrace.tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1",
            "--port", str(port)]


def tab_url(port: int) -> str:
    """TensorBoard opened on tftrace's tab."""
    return f"http://127.0.0.1:{port}/#{TAB}"


def serve(logdir: str, port: int) -> None:
    """Run TensorBoard on 127.0.0.1:<port> in the foreground until it stops (Ctrl+C)."""
    if importlib.util.find_spec("tensorboard") is None:
        raise TensorBoardError("TensorBoard is not installed: pip install tensorboard tensorboard-plugin-profile")
    print(f"tftrace: TensorBoard on {logdir}: open {tab_url(port)} (Ctrl+C to stop)", file=sys.stderr, flush=True)
    if not importlib.metadata.entry_points(group="tensorboard_plugins", name="profile"):
        print("tftrace: note: the Profile tab needs the profile plugin (pip install tensorboard-plugin-profile)",
              file=sys.stderr, flush=True)
    proc = subprocess.Popen(serve_command(logdir, port))
    try:
        with _exit_on_sigterm():
            code = proc.wait()
    finally:
        _stop(proc)  # never leave a server behind when tftrace itself is stopped
    if code > 0:  # negative: stopped by a signal, as Ctrl+C does
        raise TensorBoardError(f"TensorBoard exited with code {code} (see its message above; "
                               f"if port {port} is taken, choose another with --port)")


@contextlib.contextmanager
def _exit_on_sigterm():
    """SIGTERM would end tftrace without cleanup and orphan the server: turn it into SystemExit."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set signal handlers
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
