"""s3:// logdirs through s3fs against a moto server on 127.0.0.1 (as s3fs's own tests do): the runs
listed and analysed as a local copy is, summaries written there, one-line errors for a missing
bucket, missing credentials and bad credentials."""

from __future__ import annotations

import json
import logging
import urllib.request

import pytest

from conftest import run_cli
from test_remote import local_json, logdir  # noqa: F401 - the same logdir, analysed locally
from tftrace.api import analyze
from tftrace.read import storage
from tftrace.render import render

s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def endpoint():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def env(endpoint) -> dict:
    """What a user sets to reach their bucket: keys and, for a non-AWS store, its endpoint."""
    return {**KEYS, "AWS_ENDPOINT_URL": endpoint}


@pytest.fixture(scope="module")
def bucket(logdir, env) -> str:  # noqa: F811
    fs = s3fs.S3FileSystem(key=KEYS["AWS_ACCESS_KEY_ID"], secret=KEYS["AWS_SECRET_ACCESS_KEY"],
                           client_kwargs={"endpoint_url": env["AWS_ENDPOINT_URL"]})
    fs.mkdir("bucket")
    fs.put(logdir, "bucket/logdir", recursive=True)
    return "s3://bucket/logdir"


def test_the_command_lists_and_analyses_an_s3_logdir_as_a_local_copy(logdir, local_json, bucket, env):  # noqa: F811
    proc = run_cli("analyze", bucket, "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == local_json.replace(logdir, bucket)
    assert f"TensorBoard summaries in {bucket}/tftrace" in proc.stderr
    two = run_cli("analyze", bucket, "--format", "json", "--workers", "2", "--no-tensorboard", env=env)
    assert two.stdout == proc.stdout, two.stderr


def test_reading_in_small_blocks_gives_the_same_report(logdir, local_json, bucket, env, monkeypatch):  # noqa: F811
    """Blocks far smaller than a plane: each line is found and read across block edges."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(storage, "_BLOCK_SIZE", 1 << 16)
    monkeypatch.setattr(storage, "_BLOCKS", 2)
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        assert render(analyze(f"{bucket}/pod", workers=1), "json") == render(
            analyze(f"{logdir}/pod", workers=1), "json").replace(logdir, bucket)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()


def _auth(endpoint: str, count: str) -> None:
    """moto's switch for checking keys: from request `count` on (inf: never)."""
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=count.encode(),
                                                  method="POST", headers={"Content-Type": "text/plain"}))


NO_KEYS = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_CONFIG_FILE": "/nonexistent",
           "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.mark.parametrize("url, change, says", [
    ("s3://no-such-bucket/logdir", {}, "s3://no-such-bucket/logdir: no such file, folder or bucket"),
    ("s3://bucket/logdir", NO_KEYS, "s3://bucket/logdir: cannot read: NoCredentialsError: Unable to locate credentials"),
    ("s3://bucket/logdir", {"AWS_ACCESS_KEY_ID": "wrong", "AWS_SECRET_ACCESS_KEY": "wrong"},
     "s3://bucket/logdir: access denied"),
])
def test_s3_problems_are_one_line(bucket, env, endpoint, url, change, says):
    checked = change.get("AWS_ACCESS_KEY_ID") == "wrong"
    if checked:
        _auth(endpoint, "0")  # keys checked from now on: unknown ones are refused
    try:
        proc = run_cli("analyze", url, env={**env, **change})
    finally:
        if checked:
            _auth(endpoint, "inf")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"tftrace: error: {says}") and proc.stderr.count("\n") == 1, proc.stderr


def test_summaries_replace_the_earlier_ones(bucket, env):
    fs = s3fs.S3FileSystem(key="testing", secret="testing", client_kwargs={"endpoint_url": env["AWS_ENDPOINT_URL"]})
    older, other = (f"{bucket}/augment/tftrace/events.out.tfevents.0000000001.{who}" for who in ("old.tftrace", "user"))
    fs.pipe(older, b"")
    fs.pipe(other, b"")
    assert run_cli("analyze", f"{bucket}/augment", "--format", "json", env=env).returncode == 0
    names = fs.ls(f"{bucket}/augment/tftrace", detail=False)
    assert len(names) == 2 and other.removeprefix("s3://") in names and older.removeprefix("s3://") not in names
    assert json.loads(run_cli("analyze", f"{bucket}/augment", "-f", "json", "--no-tensorboard", env=env).stdout)["runs"]
