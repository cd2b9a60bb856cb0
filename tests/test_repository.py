"""The repository stands on its own: its test data is inside it, licensed, and not shipped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import BROKEN, PUBLIC, ROOT, public_traces

# A path that leaves the repository: a parent-folder hop to a sibling, or this machine's
# workplace folders. (Spelled in pieces so this file does not match itself.)
_OUTSIDE = re.compile("|".join([r"\.\." + r"[/\\]+shared", r"[\"']\.\." + r"[\"'],\s*[\"']shared",
                                "/" + r"work/", r"os\.pardir"]))
_TEXT = (".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".sh", ".json", ".yml", ".yaml", "run")


def _project_files() -> list[str]:
    out = []
    for folder, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT)
        dirs[:] = [d for d in dirs if not d.startswith(".") or d == ".ci"]
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "build", "dist") and not d.endswith(".egg-info")]
        if rel.startswith(os.path.join("tests", "data")):
            continue
        out += [os.path.join(folder, f) for f in files if f.endswith(_TEXT)]
    return out


def test_nothing_refers_to_a_path_outside_the_repository():
    offenders = []
    for path in _project_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if _OUTSIDE.search(line):
                    offenders.append(f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()[:100]}")
    assert not offenders, "paths outside the repository:\n" + "\n".join(offenders)


def test_the_outside_path_check_can_fail():
    dots = "." * 2
    for bad in (f"x = '{dots}/shared/traces'", f'os.path.join(ROOT, "{dots}", "shared")', "open('/" "work/main/x')"):
        assert _OUTSIDE.search(bad), bad


def test_public_traces_carry_their_license_and_origin():
    with open(os.path.join(PUBLIC, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    sources = sorted(d for d in os.listdir(PUBLIC) if os.path.isdir(os.path.join(PUBLIC, d)))
    assert len(sources) >= 5
    for source in sources:
        assert os.path.isfile(os.path.join(PUBLIC, source, "LICENSE")), f"{source} has no LICENSE"
        repo = source.replace("__", "/", 1)
        assert re.search(re.escape(repo) + r" @ [0-9a-f]{40}", readme), f"{repo}: no commit in README.md"
    traces = public_traces()
    assert BROKEN in traces and len(traces) >= 12


def test_the_wheel_ships_no_test_data(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), ROOT], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed: {proc.stderr[-2000:]}")
    wheel = next(p for p in os.listdir(tmp_path) if p.endswith(".whl"))
    names = zipfile.ZipFile(tmp_path / wheel).namelist()
    assert any(n.startswith("tftrace/") for n in names)
    shipped = [n for n in names if n.endswith((".pb", ".gz", ".trace.json")) or n.startswith(("tests/", "sample_traces/"))]
    assert not shipped, shipped
    # ...but it does ship the TensorBoard tab's front end, and registers the tab.
    assert {"tftrace/tensorboard/static/index.js", "tftrace/tensorboard/static/style.css"} <= set(names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "[tensorboard_plugins]\ntftrace = tftrace.tensorboard.plugin:TftracePlugin" in \
        zipfile.ZipFile(tmp_path / wheel).read(entry_points).decode()
