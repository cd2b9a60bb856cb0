"""Write tftrace's results into a logdir as a TensorBoard run, and start TensorBoard on it."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types

from tftrace.errors import TftraceError

RUN_DIR = "tftrace"  # the TensorBoard run beside the profiled ones: <logdir>/tftrace/
TEXT_TAG = "tftrace/report"
TAB = "tftrace"  # the tab's plugin name, tftrace.tb_plugin.plugin.PLUGIN_NAME (importing it would import TensorBoard)
# (tag suffix, StepRow field, what it measures): one scalar series per part of the step time.
STEP_SCALARS = (("step_time_ms", "dur_ps", "Step time"), ("input_ms", "input_ps", "Time waiting for input"),
                ("compute_ms", "compute_ps", "Compute time"),
                ("host_overhead_ms", "host_overhead_ps", "Host (framework) overhead"),
                ("idle_ms", "idle_ps", "Idle time"))
_EVENTS_PREFIX = "events.out.tfevents."
_EVENTS_SUFFIX = ".tftrace"  # marks the event files tftrace wrote: the only ones it ever removes


class TensorBoardError(TftraceError):
    """TensorBoard summaries cannot be written, or TensorBoard cannot be started."""


# --- summaries --------------------------------------------------------------------------------

def _writer():
    """TensorBoard's own summary protos and record writer. Not its EventFileWriter: that one resolves
    `tensorboard.compat.tf`, which imports TensorFlow when it is installed (seconds), and it writes
    in place, where a running TensorBoard could read half a file."""
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb
        from tensorboard.plugins.text.summary_v2 import text_pb
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError:
        raise TensorBoardError("the tensorboard package is not installed (pip install tensorboard); "
                               "pass --no-tensorboard to skip the summaries") from None
    return types.SimpleNamespace(event=event_pb2, summary=summary_pb2, scalar=scalar_pb, text=text_pb, records=RecordWriter)


def _text_event(tb, wall_time: float, markdown: str):
    summary = tb.text(TEXT_TAG, markdown, description="tftrace's report on the profiled runs in this logdir")
    return tb.event.Event(wall_time=wall_time, step=0, summary=summary)


def run_label(run) -> str:
    """The run as TensorBoard's Profile tab names it: `train/plugins/profile/r1` -> `train/r1`."""
    parts = [p for p in run.name.replace(os.sep, "/").split("/") if p not in ("", ".")]
    for i in range(len(parts) - 1):
        if parts[i:i + 2] == ["plugins", "profile"]:
            parts = parts[:i] + parts[i + 2:]
            break
    return "/".join(parts) or os.path.basename(os.path.normpath(run.path))


def _step_events(tb, wall_time: float, run) -> list:
    """One event per step holding its times; none for windows (not steps) or unreadable runs."""
    steps = run.steps
    if run.error or not steps.count:
        return []
    numbers = [s.number for s in steps.steps]
    # The profiler's step numbers line up with the training steps users know; use them unless
    # they repeat (TensorBoard would then show one point per number).
    if len(set(numbers)) != len(numbers) or min(numbers) < 0:
        numbers = list(range(len(steps.steps)))
    label = run_label(run)
    events = []
    for number, row in zip(numbers, steps.steps):
        summary = tb.summary.Summary(value=[
            tb.scalar(f"{RUN_DIR}/{label}/{name}", getattr(row, field) / 1e9,
                      description=f"{what} of each step of profiled run '{label}', in ms (from tftrace)").value[0]
            for name, field, what in STEP_SCALARS])
        events.append(tb.event.Event(wall_time=wall_time, step=number, summary=summary))
    return events


def encode_events(report, wall_time: float) -> bytes:
    """The whole event file: file_version first (as TensorBoard's writer does), then the summaries."""
    from tftrace.render.markdown import render_markdown
    tb = _writer()
    # A session START tells a running TensorBoard to drop what it read from the file this one
    # replaces, instead of showing both.
    events = [tb.event.Event(wall_time=wall_time, file_version="brain.Event:2"),
              tb.event.Event(wall_time=wall_time, step=0,
                             session_log=tb.event.SessionLog(status=tb.event.SessionLog.START)),
              _text_event(tb, wall_time, render_markdown(report))]
    for run in report.runs:
        events += _step_events(tb, wall_time, run)
    buffer = io.BytesIO()
    records = tb.records(buffer)
    for event in events:
        records.write(event.SerializeToString())
    return buffer.getvalue()


# --- files ------------------------------------------------------------------------------------

def summary_dir(logdir: str) -> str:
    """<logdir>/tftrace; given a run folder (.../plugins/profile/<run>), the TensorBoard run that
    holds it, so nothing is ever added inside a profiled run's folder."""
    from tftrace.read import storage
    sep = "/" if storage.is_url(logdir) else os.sep
    parts = (logdir.rstrip("/") if sep == "/" else os.path.abspath(logdir)).split(sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i:i + 2] == ["plugins", "profile"]:
            return storage.join(sep.join(parts[:i]) or sep, RUN_DIR)
    return storage.join(logdir, RUN_DIR)


def is_own_event_file(name: str) -> bool:
    return name.startswith(_EVENTS_PREFIX) and name.endswith(_EVENTS_SUFFIX)


def write_report(logdir: str, report) -> str:
    """Write the report (text) and per-step times (scalars) as the TensorBoard run <logdir>/tftrace,
    replacing what an earlier call wrote there; return that folder."""
    wall_time = time.time()
    data = encode_events(report, wall_time)
    where = summary_dir(logdir)
    from tftrace.read import storage
    if storage.is_url(where):
        return _write_remote(where, data, wall_time)
    try:
        os.makedirs(where, exist_ok=True)
        path = _write_file(where, data, wall_time)
        _remove_older(where, keep=path)
    except OSError as e:
        raise TensorBoardError(f"{where}: cannot write TensorBoard summaries: {e.strerror or e}") from None
    return where


def _event_file_name(wall_time: float) -> str:
    return f"{_EVENTS_PREFIX}{int(wall_time):010d}.{socket.gethostname()}{_EVENTS_SUFFIX}"


def _write_remote(where: str, data: bytes, wall_time: float) -> str:
    """The event file as one object (a store replaces an object whole: no temporary name needed),
    then the older ones tftrace wrote removed."""
    from tftrace.errors import TraceReadError
    from tftrace.read import storage
    name = _event_file_name(wall_time)
    try:
        storage.write_bytes(storage.join(where, name), data)
        for old in storage.listdir(where):
            if is_own_event_file(old) and old != name:
                storage.remove(storage.join(where, old))
    except TraceReadError as e:
        raise TensorBoardError(f"cannot write TensorBoard summaries: {e}") from None
    return where


def _write_file(folder: str, data: bytes, wall_time: float) -> str:
    # Written under a name without "tfevents" and renamed, so a running TensorBoard never reads
    # a half-written file.
    name = _event_file_name(wall_time)
    tmp = os.path.join(folder, f".tftrace-{os.getpid()}.tmp")  # open(), not mkstemp: keep the umask's read bits
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        path = os.path.join(folder, name)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def _remove_older(folder: str, keep: str) -> None:
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if is_own_event_file(name) and path != keep and os.path.isfile(path):
            os.remove(path)


# --- serving ----------------------------------------------------------------------------------

def serve_command(logdir: str, port: int) -> list[str]:
    """TensorBoard with every installed plugin, tftrace's tab among them (see tftrace.tb_plugin.main)."""
    return [sys.executable, "-m", "tftrace.tb_plugin.main", "--logdir", logdir, "--host", "127.0.0.1",
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
