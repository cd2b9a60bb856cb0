"""Output files are whole or absent: a failure while writing leaves the older file as it was."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys

import pytest

from conftest import ROOT, sample
from tftrace.atomic import replacing, write_text

FLATTEN = sample("augment", "flatten")


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old report\n")
    with pytest.raises(KeyboardInterrupt):
        with replacing(str(target)) as f:
            f.write("half of a new rep")
            f.flush()
            assert target.read_text() == "old report\n"  # the new text goes elsewhere until done
            raise KeyboardInterrupt  # Ctrl-C in the middle of writing
    assert target.read_text() == "old report\n"
    assert os.listdir(tmp_path) == ["report.md"]


def test_a_finished_write_replaces_the_file_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    write_text(str(target), "new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert os.listdir(tmp_path) == ["report.md"]
    fresh = tmp_path / "fresh.md"
    write_text(str(fresh), "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~umask  # as open() would make it, not mkstemp's 0600


def test_a_symlinked_output_replaces_its_target(tmp_path):
    real = tmp_path / "real.md"
    real.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_text(str(link), "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def _file_size_limit(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="needs a file size limit (POSIX)")
def test_the_command_leaves_an_older_report_intact_when_the_disk_is_full(tmp_path):
    """The kernel refuses the write past 16 KB as a full disk would: before, that left a cut
    report (or a 0-byte file) where the old one was."""
    target = tmp_path / "report.html"
    target.write_text("<p>yesterday's report</p>\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "tftrace", "analyze", FLATTEN, "-f", "html", "-o", str(target),
                           "--no-tensorboard"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
                          preexec_fn=_file_size_limit(16 * 1024))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("tftrace: error: ") and "cannot write" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert target.read_text() == "<p>yesterday's report</p>\n"
    assert os.listdir(tmp_path) == ["report.html"]
    # the same command without the limit writes the whole report
    proc = subprocess.run([sys.executable, "-m", "tftrace", "analyze", FLATTEN, "-f", "html", "-o", str(target),
                           "--no-tensorboard"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0 and os.path.getsize(target) > 16 * 1024
    assert target.read_text().rstrip().endswith("</html>")
