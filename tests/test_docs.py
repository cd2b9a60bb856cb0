"""The README and the pages in docs/: the README stays short and keeps CI's two set-up commands,
every tftrace command it (or the agents page) shows runs on the bundled samples, and links resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT
from test_skill import shim

# Pages other engineers add in parallel (the README links them already).
ELSEWHERE = {"docs/cost-model.md", "docs/cost-capture.md", "docs/pytorch.md"}
SHOWN = ("analyze", "diff", "schema", "findings", "explain", "whatif")


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def commands(text: str) -> list[str]:
    """The tftrace lines of a page's code blocks that use a command the README must show working."""
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            line = line.split("&& ", 1)[1] if line.startswith("pip install") and "&& tftrace" in line else line
            words = line.split()
            if len(words) > 1 and words[0] == "tftrace" and words[1] in SHOWN:
                out.append(line)
    return out


def test_the_readme_is_short_and_keeps_cis_set_up_commands():
    text = read("README.md")
    assert len(text.splitlines()) < 250
    lines = text.splitlines()
    assert "pip install -e . && tftrace analyze sample_traces/augment/flatten --no-tensorboard" in lines
    assert any(line.startswith('pip install -e ".[test]"') for line in lines)
    assert "## For agents and scripts" in text and "tftrace mcp" in text and "skills/tftrace/SKILL.md" in text


def test_every_command_shown_runs_on_the_samples(tmp_path):
    shown = commands(read("README.md")) + commands(read("docs", "agents.md"))
    for word in SHOWN:
        assert any(line.split()[1] == word for line in shown), f"the README shows no tftrace {word}"
    os.symlink(os.path.join(ROOT, "sample_traces"), tmp_path / "sample_traces")
    env = {**os.environ, "PYTHONPATH": ROOT, "PATH": shim(tmp_path) + os.pathsep + os.environ["PATH"]}
    for line in shown:  # in order: a later line may read what an earlier one wrote (report.json)
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{line}\n{proc.stderr[-2000:]}"
        assert proc.stdout or "-o " in line, line


def test_links_in_the_readme_and_docs_resolve():
    pages = ["README.md"] + [os.path.join("docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs")))
                             if f.endswith(".md")]
    for page in pages:
        folder = os.path.dirname(page)
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", read(page)):
            if "://" in target:
                continue
            path = os.path.normpath(os.path.join(folder, target))
            assert path in ELSEWHERE or os.path.exists(os.path.join(ROOT, path)), f"{page}: {target}"


def test_the_reference_moved_to_docs_keeps_what_tests_checked():
    assert "TFTRACE_MAX_JSON_MB" in read("docs", "speed.md")
    for page, heading in (("capture.md", "## JAX"), ("trace-families.md", "## PyTorch profiler traces"),
                          ("findings.md", "| `retracing` |"), ("owners.md", "| layer (and phase) |"),
                          ("json.md", "## schema_version"), ("ci.md", "--fail-if-slower")):
        assert heading in read("docs", page), (page, heading)
