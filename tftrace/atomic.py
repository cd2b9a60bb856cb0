"""Write a file whole or not at all: a temporary name in the same folder, renamed when complete."""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import IO, Iterator


@contextlib.contextmanager
def replacing(path: str, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write `path`'s new content into. It takes `path`'s place only when the
    block ends normally; on any exception (a full disk, Ctrl-C) it is removed and whatever was at
    `path` before is left as it was."""
    target = os.path.realpath(path)  # a symlink keeps pointing where it did; its target is replaced
    folder = os.path.dirname(target)
    tmp, fd = _create_temporary(folder, os.path.basename(target))
    try:
        with os.fdopen(fd, "w", encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())  # the rename must not reach the disk before the data does
        _keep_mode(target, tmp)
        os.replace(tmp, target)  # atomic on POSIX and Windows within one file system
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str, text: str, encoding: str = "utf-8") -> None:
    """Replace `path` by `text`, atomically."""
    with replacing(path, encoding) as f:
        f.write(text)


def _create_temporary(folder: str, name: str) -> tuple[str, int]:
    """A new hidden file beside the target. Mode 0o666 less the umask, as open() would create
    the target itself (mkstemp's 0o600 would leave a report unreadable to the group)."""
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _keep_mode(target: str, tmp: str) -> None:
    """An existing file keeps its permissions when its content is replaced."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    os.chmod(tmp, mode & 0o7777)
