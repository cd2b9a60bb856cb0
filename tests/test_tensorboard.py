"""TensorBoard summaries: the record format, what a real TensorBoard shows, and what is never touched."""

from __future__ import annotations

import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import types

import pytest

from conftest import ROOT, run_cli, sample
from tbserver import _get, _stop, _wait_until, free_port as _free_port
from tftrace.tensorboard import serve as tb_serve, summaries as tb
from tftrace.model.report import Report, RunReport, StepRow, StepsSummary, Verdict

SAMPLE = sample("augment", "flatten")  # a logdir: plugins/profile/run/sample.xplane.pb


# --- helpers ----------------------------------------------------------------------------------

def _tiny_report(numbers=(3, 4, 5)) -> Report:
    """A hand-built report: enough for the writer, no trace needed."""
    ms = 1_000_000_000
    rows = tuple(StepRow(n, i * 30 * ms, (20 + i) * ms, 10 * ms, 8 * ms, (2 + i) * ms, 0)
                 for i, n in enumerate(numbers))
    run = RunReport(path="/logs/train/plugins/profile/r1", name="train/plugins/profile/r1", mode="train",
                    steps=StepsSummary(len(rows), "marker 'train'", 21 * ms, 21 * ms, steps=rows),
                    verdict=Verdict("input", "Input-bound: the model waits on the input pipeline."))
    return Report((run,), "test")


def _records(path: str) -> list[bytes]:
    """The file's records, read by TensorBoard's own reader, which checks both CRCs."""
    from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
    reader = pywrap_tensorflow.PyRecordReader_New(path.encode(), 0, b"", None)
    out = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return out
        out.append(reader.record())


def _events(path: str) -> list:
    from tensorboard.compat.proto import event_pb2
    return [event_pb2.Event.FromString(r) for r in _records(path)]


def _own_files(logdir: str) -> list[str]:
    folder = os.path.join(logdir, tb.RUN_DIR)
    return sorted(f for f in os.listdir(folder) if tb.is_own_event_file(f)) if os.path.isdir(folder) else []


def _hashes(logdir: str) -> dict[str, str]:
    """Every file outside tftrace's own folder, by content."""
    out = {}
    for folder, dirs, files in os.walk(logdir):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) != os.path.join(logdir, tb.RUN_DIR)]
        for f in files:
            path = os.path.join(folder, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, logdir)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _plain(markup: str) -> str:
    """Rendered HTML as the words a reader sees."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


# --- a real TensorBoard on a logdir analysed twice --------------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("tensorboard") / "logdir")
    shutil.copytree(SAMPLE, logdir)
    before = _hashes(logdir)
    run_cli("analyze", logdir, "--format", "json", check=True)
    second = run_cli("analyze", logdir, "--format", "json", check=True)  # must replace, not add
    after = _hashes(logdir)
    port = _free_port()
    log_path = os.path.join(os.path.dirname(logdir), "tensorboard.log")
    with open(log_path, "w") as log:
        # Through `tftrace tensorboard`, so serve() is what starts the real server.
        proc = subprocess.Popen([sys.executable, "-m", "tftrace", "tensorboard", logdir, "--port", str(port)],
                                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    try:
        _wait_until(lambda: tb.RUN_DIR in _get(port, "/data/plugin/scalars/tags"), proc, log_path,
                    "tftrace run in the scalars plugin")
        yield types.SimpleNamespace(logdir=logdir, port=port, report=json.loads(second.stdout),
                                    before=before, after=after, proc=proc, log_path=log_path)
    finally:
        _stop(proc)


def test_text_plugin_shows_the_report_with_each_verdict(served):
    tags = _get(served.port, "/data/plugin/text/tags")
    assert tags.get(tb.RUN_DIR) == [tb.TEXT_TAG]
    entries = _get(served.port, f"/data/plugin/text/text?run={tb.RUN_DIR}&tag={tb.TEXT_TAG}")
    assert len(entries) == 1  # the second analyze replaced the first one's report
    text = _plain(entries[0]["text"])
    assert "tftrace report" in text
    for run in served.report["runs"]:
        assert run["verdict"]["text"]
        assert _plain(run["verdict"]["text"]) in text


def test_scalars_plugin_shows_each_step(served):
    tags = _get(served.port, "/data/plugin/scalars/tags")[tb.RUN_DIR]
    (run,) = served.report["runs"]
    steps = run["steps"]["steps"]
    assert run["steps"]["count"] == len(steps) > 1
    for name, field, _what in tb.STEP_SCALARS:
        tag = f"{tb.RUN_DIR}/run/{name}"  # run label as the Profile tab names it
        assert tag in tags
        series = _get(served.port, f"/data/plugin/scalars/scalars?run={tb.RUN_DIR}&tag={tag}")
        assert [step for _wall, step, _value in series] == [s["number"] for s in steps]
        expected = [s[field[:-3] + "_ms"] for s in steps]
        assert [value for _wall, _step, value in series] == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_profile_plugin_still_lists_the_profiled_run(served):
    assert _get(served.port, "/data/plugin/profile/runs") == ["run"]


def test_analyze_twice_leaves_one_event_file_and_profiled_files_untouched(served):
    assert len(_own_files(served.logdir)) == 1
    assert os.listdir(os.path.join(served.logdir, tb.RUN_DIR)) == _own_files(served.logdir)  # no temp file left
    assert served.before == served.after
    assert served.before == _hashes(served.logdir)


def test_tftrace_tensorboard_serves_on_localhost(served):
    with open(served.log_path) as f:
        log = f.read()
    assert f"http://127.0.0.1:{served.port}/" in log
    assert f"open http://127.0.0.1:{served.port}/#tftrace " in log  # on tftrace's tab
    assert tb_serve.serve_command("logs", 1)[-4:] == ["--host", "127.0.0.1", "--port", "1"]


# --- the writer, without a server -------------------------------------------------------------

def test_records_are_framed_as_tensorboard_frames_them(tmp_path):
    from tensorboard.summary.writer.record_writer import RecordWriter
    path = os.path.join(tb.write_report(str(tmp_path), _tiny_report()), _own_files(str(tmp_path))[0])
    records = _records(path)
    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    for record in records:
        writer.write(record)
    with open(path, "rb") as f:
        assert f.read() == buffer.getvalue()


def test_summaries_match_tensorboards_own_summary_ops(tmp_path):
    from tensorboard.plugins.scalar.summary_v2 import scalar_pb
    from tensorboard.plugins.text.summary_v2 import text_pb
    report = _tiny_report()
    path = os.path.join(tb.write_report(str(tmp_path), report), _own_files(str(tmp_path))[0])
    events = _events(path)
    assert events[0].file_version == "brain.Event:2"
    values = {(e.step, v.tag): v for e in events for v in e.summary.value}
    text = values[(0, tb.TEXT_TAG)]
    expected = text_pb(tb.TEXT_TAG, "x").value[0]
    assert text.metadata.plugin_data == expected.metadata.plugin_data
    assert text.tensor.dtype == expected.tensor.dtype and text.tensor.tensor_shape == expected.tensor.tensor_shape
    assert report.runs[0].verdict.text in text.tensor.string_val[0].decode()
    for row in report.runs[0].steps.steps:
        value = values[(row.number, "tftrace/train/r1/step_time_ms")]
        expected = scalar_pb("t", row.dur_ps / 1e9).value[0]
        assert value.tensor == expected.tensor
        assert value.metadata.plugin_data == expected.metadata.plugin_data


def test_repeated_step_numbers_fall_back_to_positions(tmp_path):
    path = os.path.join(tb.write_report(str(tmp_path), _tiny_report((1, 1, 2))), _own_files(str(tmp_path))[0])
    steps = [e.step for e in _events(path) if any(v.tag.endswith("/step_time_ms") for v in e.summary.value)]
    assert steps == [0, 1, 2]


def test_rewrite_removes_only_tftraces_own_files(tmp_path):
    folder = tmp_path / tb.RUN_DIR
    folder.mkdir()
    old = folder / "events.out.tfevents.0000000001.otherhost.tftrace"
    foreign = [folder / "events.out.tfevents.0000000001.otherhost.v2", folder / "notes.txt"]
    for f in [old, *foreign]:
        f.write_bytes(b"x")
    tb.write_report(str(tmp_path), _tiny_report())
    assert not old.exists()
    assert all(f.read_bytes() == b"x" for f in foreign)
    assert len(_own_files(str(tmp_path))) == 1


def test_a_run_folder_gets_its_summaries_beside_the_profile_not_inside(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(SAMPLE, logdir)
    run_dir = logdir / "plugins" / "profile" / "run"
    files = sorted(os.listdir(run_dir))
    assert tb.write_report(str(run_dir), _tiny_report()) == str(logdir / tb.RUN_DIR)
    assert sorted(os.listdir(run_dir)) == files
    assert len(_own_files(str(logdir))) == 1


def test_writing_does_not_import_tensorflow(tmp_path):
    logdir = str(tmp_path / "logdir")
    shutil.copytree(SAMPLE, logdir)
    code = ("import sys\n"
            "from tftrace.api import analyze\n"
            "from tftrace.tensorboard.summaries import write_report\n"
            f"write_report({logdir!r}, analyze({logdir!r}))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert len(_own_files(logdir)) == 1


def test_unwritable_summary_folder_is_a_warning_not_a_traceback(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(SAMPLE, logdir)
    (logdir / tb.RUN_DIR).write_text("not a folder")  # makes the folder impossible to create, even as root
    with pytest.raises(tb.TensorBoardError) as err:
        tb.write_report(str(logdir), _tiny_report())
    assert "cannot write TensorBoard summaries" in str(err.value) and "\n" not in str(err.value)
    proc = run_cli("analyze", str(logdir), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["runs"]
    assert "warning: TensorBoard summaries not written" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_without_tensorboard_says_how_to_install(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(tb.TensorBoardError, match="pip install tensorboard"):
        tb_serve.serve("logs", 6006)
