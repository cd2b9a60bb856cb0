"""Shared paths and once-per-session captures for the tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_traces")
PUBLIC = os.path.join(ROOT, "tests", "data", "public")  # public traces, with their licenses
BROKEN = os.path.join(PUBLIC, "openxla__xprof", "_corrupt_at_bfd424c", "xprof", "convert", "test_xplanes",
                      "tpu_inference_2.xplane.pb")

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def sample(*parts: str) -> str:
    return os.path.join(SAMPLES, *parts)


def sample_file(scenario: str, variant: str) -> str:
    return sample(scenario, variant, "plugins", "profile", "run", "sample.xplane.pb")


SAMPLE_RUNS = [("augment", "flatten"), ("augment", "gap"), ("predict_loop", "light"), ("predict_loop", "heavy"),
               ("dropout", "plain"), ("dropout", "dropout"), ("stock", "predict_light"), ("stock", "predict_heavy"),
               ("stock", "trace_nosteps"), ("stock", "fit_tensorboard")]


def public_traces() -> list[str]:
    """Every trace file in tests/data/public (the public traces tests must read)."""
    out = []
    for folder, _dirs, files in os.walk(PUBLIC):
        # `.json.gz`: PyTorch traces saved under other names (`*_kineto.json.gz`) too.
        out += [os.path.join(folder, f) for f in files if f.endswith((".xplane.pb", ".json.gz", ".trace.json"))]
    return sorted(out)


def run_cli(*args: str, check: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m tftrace ...` as a user would, in a fresh process."""
    proc = subprocess.run([sys.executable, "-m", "tftrace", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **(env or {})}, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"tftrace {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def child_results(proc: subprocess.CompletedProcess, out: str) -> dict:
    """The results.json a capture script run in a child process wrote into `out`, each part checked
    to have run without an error."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    for part, result in results.items():
        assert not (isinstance(result, dict) and "error" in result), f"{part}: {result['error']}"
    return results


@pytest.fixture
def copy_of(tmp_path):
    """A private copy of a sample folder, for tests that write into a logdir."""
    def _copy(src: str) -> str:
        dst = tmp_path / os.path.basename(src.rstrip("/"))
        shutil.copytree(src, dst)
        return str(dst)
    return _copy
