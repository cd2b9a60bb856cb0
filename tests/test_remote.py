"""Logdirs in cloud storage: fsspec's memory filesystem through the API and the command, and s3
through s3fs against a moto server on 127.0.0.1; the same JSON as a local copy, one-line errors."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BROKEN, PUBLIC, ROOT, sample, sample_file
from tftrace.api import analyze, diff
from tftrace.cli import run
from tftrace.model.errors import TraceReadError
from tftrace.render import render
from tftrace.render.diff import render_diff

fsspec = pytest.importorskip("fsspec")

JSON_RUN = os.path.join(PUBLIC, "awslabs__sagemaker-debugger", "tests", "profiler", "resources",
                        "tfprofiler_local_missing_metadata")
SAMPLES = {"interval_s": 0.01, "frames": [["/home/me/train.py", 12, "load_image"]], "stacks": [[0]],
           "threads": {}, "roots": {}, "ticks": [0, 10_000_000], "samples": [[0, 1, 0, 0], [1, 1, 0, 0]]}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> str:
    """Two one-host runs (one with Python samples and an experiment's figures beside it), a run of
    two hosts and a broken third, and a legacy trace.json.gz run."""
    root = tmp_path_factory.mktemp("logdir")
    shutil.copytree(sample("augment"), root / "augment")
    beside = root / "augment" / "gap" / "plugins" / "profile" / "run"
    with gzip.open(beside / "tftrace_python.json.gz", "wt") as f:
        json.dump(SAMPLES, f)
    (beside / "tftrace_experiment.json").write_text(json.dumps({"kind": "fit", "step_alone_ms": 1.5}))
    pod = root / "pod" / "plugins" / "profile" / "run"
    pod.mkdir(parents=True)
    shutil.copy(sample_file("stock", "fit_tensorboard"), pod / "worker-0.xplane.pb")
    shutil.copy(sample_file("zoo", "heavy_layer"), pod / "worker-1.xplane.pb")
    shutil.copy(BROKEN, pod / "worker-2.xplane.pb")
    shutil.copytree(JSON_RUN, root / "legacy")
    return str(root)


@pytest.fixture(scope="module")
def local_json(logdir) -> str:
    return render(analyze(logdir, workers=1), "json")


def _as_remote(text: str, logdir: str, url: str) -> str:
    return text.replace(logdir, url)


@pytest.fixture(scope="module")
def memory(logdir) -> str:
    url = "memory://tftrace-tests/logdir"
    fsspec.filesystem("memory").put(logdir, url, recursive=True)
    return url


def test_a_memory_logdir_gives_the_local_report(logdir, local_json, memory):
    report = json.loads(_as_remote(local_json, logdir, memory))
    assert [r["name"] for r in report["runs"]] == ["augment/flatten/plugins/profile/run",
                                                   "augment/gap/plugins/profile/run", "legacy/" + _legacy_run(logdir),
                                                   "pod/plugins/profile/run"]
    assert render(analyze(memory, workers=1), "json") == _as_remote(local_json, logdir, memory)
    # Worker processes read the hosts themselves (forked: they see this process's memory filesystem).
    assert render(analyze(memory, workers=2), "json") == _as_remote(local_json, logdir, memory)


def _legacy_run(logdir: str) -> str:
    for folder, _dirs, files in os.walk(os.path.join(logdir, "legacy")):
        if any(f.endswith(".trace.json.gz") for f in files):
            return os.path.relpath(folder, os.path.join(logdir, "legacy"))
    raise AssertionError("no legacy run")


def test_the_files_beside_a_remote_run_are_read(logdir, memory):
    gap = json.loads(render(analyze(f"{memory}/augment/gap"), "json"))["runs"][0]
    local = json.loads(render(analyze(os.path.join(logdir, "augment", "gap")), "json"))["runs"][0]
    assert gap["python"]["rows"][0]["function"] == "load_image"  # the samples
    assert gap["experiment"]["step_alone_ms"] == 1.5  # the experiment's figures
    assert gap["mode"] == local["mode"] != ""  # the sidecar's
    assert {k: v for k, v in gap.items() if k != "path"} == {k: v for k, v in local.items() if k != "path"}


def test_progress_is_heard_while_a_remote_file_is_read(memory):
    heard = []
    analyze(f"{memory}/augment/flatten/plugins/profile/run/sample.xplane.pb", progress=lambda *a: heard.append(a))
    assert heard and heard[-1][1] == heard[-1][2] > 0
    assert heard[-1][0].startswith("memory://")


def test_the_command_analyses_and_diffs_a_memory_logdir_and_writes_summaries_there(logdir, memory, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert run(["analyze", memory, "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(render(analyze(memory), "json"))
    fs = fsspec.filesystem("memory")
    events = fs.ls(f"{memory}/tftrace", detail=False)
    assert len(events) == 1 and events[0].endswith(".tftrace")
    assert f"TensorBoard summaries in {memory}/tftrace" in capsys.readouterr().err
    a, b = f"{memory}/augment/flatten", f"{memory}/augment/gap"
    assert run(["diff", a, b, "--format", "json", "-o", str(out)]) == 0
    local = render_diff(diff(os.path.join(logdir, "augment", "flatten"), os.path.join(logdir, "augment", "gap")), "json")
    assert out.read_text() == _as_remote(local, logdir, memory)


@pytest.mark.parametrize("url, says", [
    ("memory://tftrace-tests/nothing-here", "no such file, folder or bucket"),
    ("nosuchscheme://bucket/logdir", "no fsspec filesystem for nosuchscheme://"),
    ("memory://tftrace-tests/logdir/augment/gap/plugins/profile/run/tftrace_run.json", "not a trace file"),
])
def test_a_bad_remote_path_is_one_line(memory, url, says, capsys):
    assert run(["analyze", url]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and err.startswith("tftrace: error: ")


def _without(module: str, *args: str) -> subprocess.CompletedProcess:
    """The command in a process where `module` cannot be imported, as when it is not installed."""
    code = f"import sys; sys.modules[{module!r}] = None; from tftrace.cli import run; sys.exit(run(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("module, url, extra", [("gcsfs", "gs://bucket/logdir", "tftrace[gcs]"),
                                                ("fsspec", "s3://bucket/logdir", "tftrace[s3]"),
                                                ("s3fs", "s3://bucket/logdir", "tftrace[s3]")])
def test_a_missing_backend_names_the_extra(module, url, extra):
    proc = _without(module, "analyze", url)
    assert proc.returncode == 2
    assert f'pip install "{extra}"' in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_local_paths_do_not_import_fsspec():
    code = ("import sys; from tftrace.cli import run; code = run(sys.argv[1:]); "
            "sys.exit(3 if 'fsspec' in sys.modules else code)")
    proc = subprocess.run([sys.executable, "-c", code, "analyze", sample("augment"), "--no-tensorboard"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_reading_a_missing_remote_host_file_is_a_read_error(memory):
    with pytest.raises(TraceReadError, match="no such file"):
        analyze(f"{memory}/missing.xplane.pb")
