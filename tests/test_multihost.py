"""Several hosts in one run: `tftrace capture` from real worker processes, per-host reports, the
straggler named with its reason, and hosts that are unreachable, die, or leave a broken file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import BROKEN, ROOT, run_cli, sample_file
from tbserver import free_port
from tftrace.api import analyze

pytest.importorskip("tensorflow")
pytest.importorskip("xprof")

# A worker: a small Keras model trained from a generator, with TensorFlow's profiler server on a
# port, started by TraceCallback(server_port=) or by hand. `delay` sleeps in the input pipeline
# (a slow disk).
WORKER = r'''
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, keras, tensorflow as tf
import tftrace
port, delay, how = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
callbacks = []
if how == "callback":  # no window of its own: it only serves the profiler
    callbacks = [tftrace.TraceCallback(sys.argv[4], fit_steps=None, evaluate_steps=None, predict_steps=None,
                                       server_port=port)]
else:
    tf.profiler.experimental.server.start(port)
x = np.random.default_rng(0).random((64, 8)).astype("float32")
y = np.random.default_rng(1).integers(0, 3, 64)
def batches():
    while True:
        for i in range(0, 64, 8):
            time.sleep(delay)
            yield x[i:i + 8], y[i:i + 8]
spec = (tf.TensorSpec((None, 8)), tf.TensorSpec((None,), tf.int64))
ds = tf.data.Dataset.from_generator(batches, output_signature=spec)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, steps_per_epoch=20, epochs=1, verbose=0, callbacks=callbacks)  # warm up: tracing
print("ready", flush=True)
model.fit(ds, steps_per_epoch=100000, epochs=1, verbose=0, callbacks=callbacks)
'''


def _start(tmp_path, name: str, delay: float, how: str = "server"):
    port = free_port()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    log = open(tmp_path / f"{name}.log", "w")
    proc = subprocess.Popen([sys.executable, str(script), str(port), str(delay), how, str(tmp_path / name)], stdout=log,
                            stderr=subprocess.STDOUT, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    return proc, port, tmp_path / f"{name}.log"


def _wait_ready(workers, timeout_s: float = 180):
    deadline = time.monotonic() + timeout_s
    for proc, _port, log in workers:
        while "ready" not in log.read_text():
            if proc.poll() is not None:
                pytest.fail(f"worker exited early:\n{log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("workers did not start in time")
            time.sleep(0.2)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Two workers (one with a slow input pipeline), a third that dies during the capture, and
    an address where nothing listens, all captured by one `tftrace capture`."""
    tmp = tmp_path_factory.mktemp("multihost")
    workers = [_start(tmp, "fast", 0.0, how="callback"), _start(tmp, "slow", 0.015), _start(tmp, "dying", 0.0)]
    try:
        _wait_ready(workers)
        addresses = ",".join(f"127.0.0.1:{port}" for _p, port, _l in workers) + f",127.0.0.1:{free_port()}"
        cli = subprocess.Popen([sys.executable, "-m", "tftrace", "capture", addresses, str(tmp / "logs"),
                                "--duration-ms", "2000"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        workers[2][0].kill()  # a worker dies while it is being traced
        out, err = cli.communicate(timeout=120)
        proc = subprocess.CompletedProcess(cli.args, cli.returncode, out, err)
    finally:
        for p, _port, _log in workers:
            p.kill()
            p.wait()
    return proc, tmp / "logs", [port for _p, port, _l in workers]


def test_capture_writes_one_run_with_a_file_per_reachable_host(captured):
    proc, logdir, (fast, slow, dying) = captured
    assert proc.returncode == 0, proc.stderr
    runs = os.listdir(logdir / "plugins" / "profile")
    assert len(runs) == 1
    files = sorted(os.listdir(logdir / "plugins" / "profile" / runs[0]))
    assert files == sorted([f"127.0.0.1_{fast}.xplane.pb", f"127.0.0.1_{slow}.xplane.pb"])
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 2 and all(w.endswith("captured the others") for w in warnings)
    assert any(f":{dying}: " in w and "no trace came back" in w for w in warnings)
    assert any("unreachable" in w for w in warnings)
    assert "Traceback" not in proc.stderr + proc.stdout


def test_the_slow_worker_is_named_the_straggler_for_its_input(captured):
    _proc, logdir, (fast, slow, _dying) = captured
    run = analyze(str(logdir)).runs[0]
    hosts = {h.host: h for h in run.per_host}
    assert {f"127.0.0.1_{fast}", f"127.0.0.1_{slow}"} <= set(hosts)
    assert hosts[f"127.0.0.1_{slow}"].mean_ps > 2 * hosts[f"127.0.0.1_{fast}"].mean_ps
    assert all(h.steps >= 5 for h in (hosts[f"127.0.0.1_{fast}"], hosts[f"127.0.0.1_{slow}"]))
    top = run.bottlenecks[0]
    assert top.kind == "straggler" and f"127.0.0.1_{slow}" in top.title and "waiting for input" in top.title
    assert run.steps.source.endswith(f"on host 127.0.0.1_{slow}, the slowest")


# A MultiWorkerMirroredStrategy worker: a custom loop whose step all-reduces the gradients
# across workers (a real collective over gRPC), steps marked the stock way
# (tf.profiler.experimental.Trace with step_num). `delay` slows its tf.data pipeline.
SYNC_WORKER = r"""
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
index, ports, prof_port, delay = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3]), float(sys.argv[4])
os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                                      "task": {"type": "worker", "index": index}})
import numpy as np, tensorflow as tf
from tensorflow.python.data.experimental.ops import testing as tfdata_testing
strategy = tf.distribute.MultiWorkerMirroredStrategy()
tf.profiler.experimental.server.start(prof_port)
x = np.random.default_rng(0).random((64, 8)).astype("float32")
y = np.random.default_rng(1).random((64, 3)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8)
if delay:
    ds = ds.apply(tfdata_testing.sleep(int(delay * 1e6)))  # a slow disk, in tf.data's threads
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
ds = ds.with_options(options)
with strategy.scope():
    w, b = tf.Variable(tf.random.normal((8, 3), seed=0)), tf.Variable(tf.zeros(3))
def replica_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.matmul(xb, w) + b - yb) ** 2)
    grads = tf.distribute.get_replica_context().all_reduce("SUM", tape.gradient(loss, [w, b]))
    w.assign_sub(0.01 * grads[0])
    b.assign_sub(0.01 * grads[1])
@tf.function
def train_step(it):
    strategy.run(replica_step, args=next(it))
it = iter(strategy.experimental_distribute_dataset(ds))
for _ in range(10):
    train_step(it)
print("ready", flush=True)
step = 0
while True:
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(it)
    step += 1
"""


@pytest.fixture(scope="module")
def synchronous(tmp_path_factory):
    """Two MultiWorkerMirroredStrategy workers on 127.0.0.1, the second with a slow input
    pipeline, captured together by `tftrace capture`.

    TensorFlow 2.21 sometimes aborts a MWMS worker while it collects a trace (heap corruption in
    tsl::profiler::ParseAnnotation, from HostTracer::CollectData; in-process capture too, with or
    without step markers): then both workers are started again, a few times at most."""
    tmp = tmp_path_factory.mktemp("sync")
    script = tmp / "sync_worker.py"
    script.write_text(SYNC_WORKER)
    crashes = []
    for attempt in range(5):
        proc, workers = _capture_synchronous(tmp, f"logs{attempt}")
        died = [log for w, _port, log in workers if w.returncode not in (None, -9)]
        if proc.returncode == 0 and not proc.stderr:
            return analyze(str(tmp / f"logs{attempt}")).runs[0], [f"127.0.0.1_{p}" for _w, p, _l in workers]
        if not died:
            pytest.fail(proc.stderr + "".join(log.read_text()[-1500:] for _w, _p, log in workers))
        crashes.append(died[0].read_text()[-300:])
    pytest.fail(f"TensorFlow aborted a traced worker {len(crashes)} times: {crashes[-1]}")


def _capture_synchronous(tmp, logs: str):
    cluster = ",".join(str(free_port()) for _ in range(2))
    workers = []
    for i, delay in enumerate((0.0, 0.03)):
        port, log = free_port(), tmp / f"{logs}-worker{i}.log"
        proc = subprocess.Popen([sys.executable, str(tmp / "sync_worker.py"), str(i), cluster, str(port), str(delay)],
                                stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        workers.append((proc, port, log))
    try:
        _wait_ready(workers)
        proc = run_cli("capture", ",".join(f"127.0.0.1:{p}" for _w, p, _l in workers), str(tmp / logs),
                       "--duration-ms", "1000")
        time.sleep(0.5)  # a worker that aborted while collecting has exited by now
        for w, _port, _log in workers:
            w.poll()
    finally:
        for w, _port, _log in workers:
            if w.returncode is None:
                w.kill()
            w.wait()
    return proc, workers


def test_in_synchronous_training_the_host_the_others_wait_for_is_the_straggler(synchronous):
    run, (fast, slow) = synchronous
    hosts = {h.host: h for h in run.per_host}
    assert set(hosts) == {fast, slow} and all(h.steps >= 10 for h in hosts.values())
    # In lockstep: the same step time on both, the fast one waiting in the all-reduce.
    assert hosts[fast].mean_ps == pytest.approx(hosts[slow].mean_ps, rel=0.15)
    assert hosts[fast].collective_ps > 2 * hosts[slow].collective_ps  # per step
    top = [b for b in run.bottlenecks if b.kind == "straggler"][0]
    assert slow in top.title and "holds the others back" in top.title and "waiting for input" in top.title
    assert "in collectives, for it" in top.evidence


def _two_machines(tmp_path) -> str:
    run = tmp_path / "logs" / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    shutil.copy(sample_file("stock", "fit_tensorboard"), run / "worker-a.xplane.pb")
    shutil.copy(sample_file("augment", "gap"), run / "worker-b.xplane.pb")
    return str(tmp_path / "logs")


def test_two_machines_files_are_reported_per_host_in_every_format(tmp_path):
    logdir = _two_machines(tmp_path)
    run = analyze(logdir).runs[0]
    assert [h.host for h in run.per_host] == ["worker-a", "worker-b"]
    straggler = [b for b in run.bottlenecks if b.kind == "straggler"]
    assert straggler and "worker-b" in straggler[0].title
    for fmt in ("text", "markdown", "html", "json"):
        out = run_cli("analyze", logdir, "--format", fmt, "--no-tensorboard", check=True).stdout
        assert "worker-a" in out and "worker-b" in out and "Straggler" in out, fmt
    data = json.loads(run_cli("analyze", logdir, "--format", "json", "--no-tensorboard").stdout)["runs"][0]
    assert {h["host"] for h in data["per_host"]} == {"worker-a", "worker-b"}
    csv = run_cli("analyze", logdir, "--format", "csv", "--table", "hosts", "--no-tensorboard", check=True).stdout
    assert csv.splitlines()[0].startswith("run,host,steps") and len(csv.splitlines()) == 3


def test_a_broken_host_file_is_named_and_the_other_hosts_kept(tmp_path):
    logdir = _two_machines(tmp_path)
    run_dir = os.path.join(logdir, "plugins", "profile", "run")
    shutil.copy(BROKEN, os.path.join(run_dir, "worker-c.xplane.pb"))
    proc = run_cli("analyze", logdir, "--format", "json", "--no-tensorboard")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)["runs"][0]
    assert data["hosts"] == ["worker-a", "worker-b"]
    assert any("worker-c.xplane.pb" in n and "unreadable" in n for n in data["notes"])


def test_capture_with_nothing_to_capture_or_a_bad_address_fails_in_one_line(tmp_path):
    for args in ((f"127.0.0.1:{free_port()}",), ("not-an-address",), ("127.0.0.1:99999",)):
        proc = run_cli("capture", *args, str(tmp_path / "logs"), "--duration-ms", "200")
        assert proc.returncode == 2 and proc.stderr.startswith("tftrace: error:"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("source,devices", [
    (("openxla__xprof", "xprof", "convert", "test_xplanes"), [f"/device:TPU:{i}" for i in range(4)]),
    (("tensorflow__profiler",), ["/device:GPU:1", "/device:GPU:4", "/device:GPU:6"]),
])
def test_each_device_gets_its_busy_time_and_idle_gaps(source, devices):
    from conftest import PUBLIC
    run = analyze(os.path.join(PUBLIC, *source)).runs[0]
    rows = {d.device: d for d in run.per_device}
    assert sorted(rows) == devices
    for d in rows.values():
        assert 0 < d.busy_ps <= d.span_ps and d.busy == pytest.approx(d.busy_ps / d.span_ps, abs=1e-6)
        assert d.idle_ps + d.busy_ps <= d.span_ps and d.longest_gap_ps <= d.idle_ps
    if "TPU:0" in devices[0]:
        assert all(d.busy > 0.8 for d in rows.values())  # the four chips run the same inference
    else:
        assert rows["/device:GPU:4"].busy_ps > 100 * rows["/device:GPU:1"].busy_ps  # GPU:1 only copies


def test_diff_compares_per_host(tmp_path):
    base = _two_machines(tmp_path / "a")
    cand = tmp_path / "b" / "logs" / "plugins" / "profile" / "run"
    cand.mkdir(parents=True)
    shutil.copy(sample_file("stock", "fit_tensorboard"), cand / "worker-a.xplane.pb")
    shutil.copy(sample_file("augment", "flatten"), cand / "worker-b.xplane.pb")
    from tftrace.api import diff
    result = diff(base, str(tmp_path / "b" / "logs"))
    hosts = {h.host: h for h in result.hosts}
    assert set(hosts) == {"worker-a", "worker-b"} and hosts["worker-a"].delta_pct == 0.0
    assert hosts["worker-b"].baseline_ps != hosts["worker-b"].candidate_ps
    for fmt in ("text", "markdown", "html", "json"):
        out = run_cli("diff", base, str(tmp_path / "b" / "logs"), "--format", fmt, check=True).stdout
        assert "worker-b" in out, fmt


def test_capture_with_the_python_tracer_gives_a_python_table(tmp_path):
    """TensorFlow's Python tracer, asked for through the profiler server (TensorFlow 2.21 ignores
    the level passed to profiler.start): the main thread's Python calls become the python table."""
    worker = _start(tmp_path, "traced", 0.0)
    try:
        _wait_ready([worker])
        proc = run_cli("capture", f"127.0.0.1:{worker[1]}", str(tmp_path / "logs"), "--duration-ms", "800",
                       "--python-tracer")
    finally:
        worker[0].kill()
        worker[0].wait()
    assert proc.returncode == 0, proc.stderr
    run = analyze(str(tmp_path / "logs"), top=None).runs[0]
    assert "tracer" in run.python.source and run.python.total_ps > 0
    calls = {(r.function, r.file) for r in run.python.rows}
    # fit's loop on the main thread: Keras' callbacks, TensorFlow running the step function
    assert {("on_train_batch_end", "callback_list.py"), ("quick_execute", "execute.py")} <= calls
    assert ("__instancecheck__", "<frozen abc>") in calls  # a file name with a space in it
    assert all(r.thread == "main" for r in run.python.rows)
