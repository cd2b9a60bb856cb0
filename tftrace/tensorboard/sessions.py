"""The profiled runs of a logdir, found and named as TensorBoard's Profile tab finds and names them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from tftrace.model.errors import NoTracesError, TftraceError
from tftrace.api import Run, find_runs

QUIET_S = 3.0  # a trace file changed more recently than this may still be being written


class BadRunName(TftraceError):
    """A requested run name is malformed or points outside the logdir (HTTP 400)."""


class UnknownRun(TftraceError):
    """No profiled run of that name in the logdir (HTTP 404)."""


@dataclass(frozen=True)
class Session:
    """One profiling session: `<logdir>/<tb run>/plugins/profile/<session>/`."""

    name: str  # "<tb run>/<session>", or "<session>" at the logdir's root, as the Profile tab lists it
    path: str


def _real_root(logdir: str) -> str | None:
    """The logdir as a real local folder, or None (remote paths and logdir specs are not walked)."""
    if not logdir or "://" in logdir:
        return None
    root = os.path.realpath(os.path.expanduser(logdir))
    return root if os.path.isdir(root) else None


def _inside(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([root, real]) == root


def find_sessions(logdir: str) -> dict[str, Session]:
    """Every session folder under the logdir, by name (sorted); symlinks out of the logdir are left out."""
    root = _real_root(logdir)
    if root is None:
        return {}
    found = {}
    for folder, dirs, _files in os.walk(root):  # symlinked folders are listed, never entered
        dirs.sort()
        parent, base = os.path.split(folder)
        if base != "profile" or os.path.basename(parent) != "plugins":
            continue
        tb_run = os.path.relpath(os.path.dirname(parent), root).replace(os.sep, "/")
        for session in dirs:
            path = os.path.join(folder, session)
            if _inside(root, path):
                name = session if tb_run == "." else f"{tb_run}/{session}"
                found[name] = Session(name, path)
        dirs[:] = []  # nothing below a session is another session
    return dict(sorted(found.items()))


def has_sessions(logdir: str) -> bool:
    """Whether the logdir holds at least one session folder; stops at the first."""
    root = _real_root(logdir)
    if root is None:
        return False
    for folder, dirs, _files in os.walk(root):
        if os.path.basename(folder) == "profile" and os.path.basename(os.path.dirname(folder)) == "plugins" and dirs:
            return True
    return False


def check_name(name: str | None) -> str:
    """A run name as the routes accept it: relative, `/`-separated, no `..`; else BadRunName."""
    if not name:
        raise BadRunName("no run given: add ?run=NAME (one of the names /data/plugin/tftrace/runs lists)")
    parts = name.split("/")
    if ("\0" in name or "\\" in name or name.startswith("/") or os.path.isabs(name)
            or any(p in ("", ".", "..") for p in parts)):
        raise BadRunName(f"{name!r} is not a run name: run names are relative, without '.' or '..' parts")
    return name


def lookup(logdir: str, name: str | None) -> Session:
    """The session of that name, freshly looked up (so a new run is found and a removed one is not)."""
    name = check_name(name)
    session = find_sessions(logdir).get(name)
    if session is None:
        raise UnknownRun(f"no profiled run named {name!r} in this logdir")
    return session


def fingerprint(session: Session) -> tuple:
    """Name, size and modification time of each file in the session: any change makes a new analysis."""
    out = []
    for entry in sorted(os.scandir(session.path), key=lambda e: e.name):
        if entry.is_file():
            st = entry.stat()
            out.append((entry.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def as_run(session: Session) -> Run:
    """The session as the analyzer reads it; NoTracesError when it holds no trace file yet."""
    for run in find_runs(session.path):
        if os.path.normpath(run.path) == os.path.normpath(session.path):
            return Run(run.path, session.name, run.files)
    raise NoTracesError(f"{session.path}: no trace file in this session folder yet")


def still_writing(session: Session, now: float | None = None) -> str | None:
    """Why the session looks like a capture still in progress, or None when it looks complete."""
    try:
        run = as_run(session)
    except NoTracesError:
        return "the profiler has not written its trace file yet"
    newest = max(os.stat(f).st_mtime for f in run.files)
    age = (time.time() if now is None else now) - newest
    if age < QUIET_S:
        return f"its trace file changed {max(age, 0):.1f} s ago"
    return None
