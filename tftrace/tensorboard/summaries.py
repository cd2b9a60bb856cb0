"""Write tftrace's results into a logdir as a TensorBoard run: the report as text, step times as scalars."""

from __future__ import annotations

import io
import os
import socket
import time
import types

from tftrace.model.errors import TftraceError

RUN_DIR = "tftrace"  # the TensorBoard run beside the profiled ones: <logdir>/tftrace/
TEXT_TAG = "tftrace/report"
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
    from tftrace import api
    sep = "/" if api.is_url(logdir) else os.sep
    parts = (logdir.rstrip("/") if sep == "/" else os.path.abspath(logdir)).split(sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i:i + 2] == ["plugins", "profile"]:
            return api.join(sep.join(parts[:i]) or sep, RUN_DIR)
    return api.join(logdir, RUN_DIR)


def is_own_event_file(name: str) -> bool:
    return name.startswith(_EVENTS_PREFIX) and name.endswith(_EVENTS_SUFFIX)


def write_report(logdir: str, report) -> str:
    """Write the report (text) and per-step times (scalars) as the TensorBoard run <logdir>/tftrace,
    replacing what an earlier call wrote there; return that folder."""
    wall_time = time.time()
    data = encode_events(report, wall_time)
    where = summary_dir(logdir)
    from tftrace import api
    if api.is_url(where):
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
    from tftrace.model.errors import TraceReadError
    from tftrace import api
    name = _event_file_name(wall_time)
    try:
        api.write_bytes(api.join(where, name), data)
        for old in api.listdir(where):
            if is_own_event_file(old) and old != name:
                api.remove(api.join(where, old))
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
