"""The agent skill (skills/tftrace/): Agent Skills front matter, every bash block of SKILL.md run in
order against a sample trace, its links resolving, and its reference pages as the code makes them now."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from conftest import ROOT, sample
from test_contract import assert_valid

SKILL = os.path.join(ROOT, "skills", "tftrace")
sys.path.insert(0, os.path.join(ROOT, "skills"))
import generate  # noqa: E402

# What each bash block of SKILL.md prints, in order ("" for nothing).
DOCUMENTS = ["findings", "explain", "whatif", "", "diff"]


def skill_text() -> str:
    with open(os.path.join(SKILL, "SKILL.md"), encoding="utf-8") as f:
        return f.read()


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def shim(folder) -> str:
    """A `tftrace` on PATH that runs this checkout, as `pip install -e .` would."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "tftrace").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tftrace "$@"\n')
    (bin_dir / "tftrace").chmod(0o755)
    os.symlink(sys.executable, bin_dir / "python")
    return str(bin_dir)


def test_front_matter_is_agent_skills():
    head = re.match(r"---\n(.*?)\n---\n", skill_text(), re.S)
    assert head
    fields = dict(line.split(": ", 1) for line in head.group(1).splitlines())
    assert fields["name"] == os.path.basename(SKILL) and re.fullmatch(r"[a-z0-9-]{1,64}", fields["name"])
    assert 50 < len(fields["description"]) <= 1024 and "slow" in fields["description"]


def test_every_bash_block_runs_against_a_sample_trace(tmp_path):
    code = blocks(skill_text(), "bash")
    assert len(code) == len(DOCUMENTS)
    script = "set -euo pipefail\n" + "\n".join(f"{{\n{b}}} > block{i}.out" for i, b in enumerate(code))
    run = sample("zoo", "slow_callback")
    env = {**os.environ, "PYTHONPATH": ROOT, "PATH": shim(tmp_path) + os.pathsep + os.environ["PATH"],
           "RUN": run, "NEW_RUN": run}
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for i, document in enumerate(DOCUMENTS):
        out = (tmp_path / f"block{i}.out").read_text()
        if not document:
            assert out == ""
            continue
        data = json.loads(out)
        assert_valid(document, data)
    assert json.loads((tmp_path / "block1.out").read_text())["finding"]["id"] == "callback/batchstats.on_train_batch_end"
    assert (tmp_path / "baseline.json").exists()
    diff = json.loads((tmp_path / "block4.out").read_text())
    assert diff["gate"]["failed"] is False and diff["verdict"]["findings"] == "matched"


def test_the_mcp_config_and_python_blocks_parse():
    text = skill_text()
    for block in blocks(text, "json"):
        json.loads(block)
    for block in blocks(text, "python"):
        compile(block, "SKILL.md", "exec")


def test_links_resolve():
    for folder, name in ((SKILL, "SKILL.md"),):
        text = skill_text()
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            assert os.path.exists(os.path.normpath(os.path.join(folder, target))), f"{name}: {target}"


def test_reference_pages_are_generated_from_the_code_and_not_stale():
    assert generate.stale() == [], "run python skills/generate.py"
    pages = {name: open(os.path.join(SKILL, "references", name), encoding="utf-8").read() for name in generate.PAGES}
    from tftrace.analysis.findings.fixes import fix_table
    from tftrace.analysis.owners.knowledge import KNOWN
    assert all(f"### `{cause}`" in pages["findings.md"] for cause in fix_table())
    assert all(f"## `{k.key}`" in pages["knowledge.md"] for k in KNOWN)
    assert "`projection_basis`" in pages["json.md"] and "## whatif" in pages["json.md"]


def test_a_changed_table_makes_the_pages_stale(monkeypatch):
    from tftrace.analysis.findings import fixes
    monkeypatch.setitem(fixes._FIXES, "callback", {"any": "A different fix."})
    assert generate.stale() == ["findings.md"]
