"""Runs of several hosts analysed host by host: the same JSON serially, in worker processes and
on a Dask LocalCluster of worker processes; one-line errors for a missing or unreachable Dask."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import BROKEN, run_cli, sample_file
from tftrace.api import analyze
from tftrace.model.errors import TftraceError
from tftrace.hostmap import dask_client
from tftrace.render import render

HOSTS = [("stock", "fit_tensorboard"), ("augment", "gap"), ("zoo", "heavy_layer")]


@pytest.fixture(scope="module")
def pod(tmp_path_factory) -> str:
    """A run of three hosts (different samples, so one is the straggler) and a broken fourth."""
    logdir = tmp_path_factory.mktemp("pod")
    run = logdir / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    for i, (scenario, variant) in enumerate(HOSTS):
        shutil.copy(sample_file(scenario, variant), run / f"worker-{i}.xplane.pb")
    shutil.copy(BROKEN, run / "worker-9.xplane.pb")
    return str(logdir)


@pytest.fixture(scope="module")
def serial(pod) -> str:
    return render(analyze(pod, workers=1), "json")


def test_workers_give_the_serial_report(pod, serial):
    assert render(analyze(pod, workers=2), "json") == serial
    run = json.loads(serial)["runs"][0]
    assert run["hosts"] == ["worker-0", "worker-1", "worker-2"]
    assert any("worker-9.xplane.pb" in n and "unreadable" in n for n in run["notes"])


def test_a_dask_local_cluster_gives_the_serial_report(pod, serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        assert render(analyze(pod, client=client), "json") == serial
        # The command, given the scheduler's address, says the same.
        proc = run_cli("analyze", pod, "--format", "json", "--no-tensorboard", "--dask", cluster.scheduler_address)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == serial


def test_the_command_with_workers_prints_the_serial_report(pod, serial):
    one = run_cli("analyze", pod, "--format", "json", "--no-tensorboard", "--workers", "1", check=True).stdout
    two = run_cli("analyze", pod, "--format", "json", "--no-tensorboard", "--workers", "2", check=True).stdout
    assert one == two == serial


def test_an_unreachable_scheduler_is_one_line():
    pytest.importorskip("distributed")
    with pytest.raises(TftraceError, match="cannot reach the Dask scheduler"):
        dask_client("tcp://127.0.0.1:9")


def test_each_host_is_read_once_and_nothing_is_kept_after(pod, serial, monkeypatch):
    import tftrace.hostmap as hostmap
    read = []
    real = hostmap.load_host
    monkeypatch.setattr(hostmap, "load_host", lambda run, path, **kw: read.append(path) or real(run, path, **kw))
    assert render(analyze(pod, workers=1), "json") == serial
    assert sorted(read) == sorted(set(read)) and len(read) == 4  # the slowest host not read again
    assert hostmap._kept == []
