"""Files in a local folder or in cloud storage (gs://, s3://, any fsspec URL), behind the few calls tftrace makes."""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from typing import BinaryIO, Iterator

from tftrace.model.errors import TraceReadError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# The extra that installs each common backend (pyproject.toml); fsspec itself comes with them.
_EXTRAS = {"gs": "gcs", "gcs": "gcs", "s3": "s3", "s3a": "s3"}
# Remote host files are read a block at a time: the XSpace reader scans a plane's line headers,
# then reads the lines, so blocks are kept (at most _BLOCKS of them) for the second pass.
_BLOCK_SIZE = 4 << 20
_BLOCKS = 16


def is_url(path: str) -> bool:
    """A path with a scheme (`gs://`, `s3://`, `memory://`): read through fsspec."""
    return bool(_URL.match(path))


def filesystem(url: str):
    """The fsspec filesystem for `url`; a one-line TraceReadError naming the extra to install
    when fsspec or the backend is missing."""
    scheme = _URL.match(url).group(1).lower()
    try:
        import fsspec
        _quiet_backends()
        return fsspec.core.url_to_fs(url)[0]
    except ImportError as e:
        raise TraceReadError(f"{url}: reading {scheme}:// needs {_install(scheme, e)}") from None
    except ValueError as e:  # fsspec: "Protocol not known: ..."
        raise TraceReadError(f"{url}: no fsspec filesystem for {scheme}:// ({_line(e)})") from None
    except Exception as e:  # noqa: BLE001 - a backend's own start-up errors (bad options, no auth library)
        raise TraceReadError(f"{url}: cannot open {scheme}:// storage: {_line(e)}") from None


def _quiet_backends() -> None:
    """Backends log each retry with its traceback; with no logging set up Python would print them
    on stderr, around the one-line error the command ends with. A NullHandler stops only that."""
    import logging
    for name in ("fsspec", "s3fs", "gcsfs", "aiobotocore", "botocore"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


def _install(scheme: str, e: ImportError) -> str:
    if scheme in _EXTRAS:
        return f'pip install "tftrace[{_EXTRAS[scheme]}]"'
    return f"fsspec and its {scheme}:// backend installed ({_line(e)})"


def _line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@contextlib.contextmanager
def _remote(url: str) -> Iterator[None]:
    """Backend errors as one TraceReadError: backends raise OSError subclasses, but also their own
    (botocore's NoCredentialsError, google-auth's DefaultCredentialsError, aiohttp's errors)."""
    try:
        yield
    except TraceReadError:
        raise
    except FileNotFoundError:
        raise TraceReadError(f"{url}: no such file, folder or bucket") from None
    except PermissionError as e:
        raise TraceReadError(f"{url}: access denied ({_line(e)}); check the credentials") from None
    except Exception as e:  # noqa: BLE001 - see above
        raise TraceReadError(f"{url}: cannot read: {type(e).__name__}: {_line(e)}") from None


def kind(path: str) -> str:
    """"file" or "directory"; TraceReadError when there is nothing at `path` or it cannot be reached."""
    if not is_url(path):
        if os.path.isfile(path):
            return "file"
        if os.path.isdir(path):
            return "directory"
        raise TraceReadError(f"{path}: no such file or folder")
    fs = filesystem(path)
    with _remote(path):
        # info() raises the backend's real error (no bucket, no credentials), where isdir() says False.
        return "directory" if fs.info(path)["type"] == "directory" else "file"


def walk(path: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """(folder, subfolders, files) under `path` as os.walk gives them, folders spelled as `path` is;
    sorting `subfolders` in place orders the walk."""
    if not is_url(path):
        yield from os.walk(path)
        return
    fs = filesystem(path)
    root = fs._strip_protocol(path).rstrip("/")
    with _remote(path):
        for folder, dirs, files in fs.walk(path):
            yield path.rstrip("/") + folder.rstrip("/")[len(root):], dirs, files


def isfile(path: str) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    with _remote(path):
        return filesystem(path).isfile(path)


def isdir(path: str) -> bool:
    if not is_url(path):
        return os.path.isdir(path)
    with _remote(path):
        return filesystem(path).isdir(path)


def size(path: str) -> int:
    if not is_url(path):
        return os.path.getsize(path)
    with _remote(path):
        return filesystem(path).size(path)


def join(folder: str, *names: str) -> str:
    return posixpath.join(folder, *names) if is_url(folder) else os.path.join(folder, *names)


def dirname(path: str) -> str:
    return posixpath.dirname(path) if is_url(path) else os.path.dirname(path)


def relative(folder: str, root: str) -> str:
    """`folder` relative to `root` ("." for the root itself)."""
    if not is_url(folder):
        return os.path.relpath(folder, root)
    return folder[len(root.rstrip("/")):].strip("/") or "."


@contextlib.contextmanager
def open_binary(path: str) -> Iterator[BinaryIO]:
    """The file for reading bytes; a remote file's read errors come out as TraceReadError."""
    if not is_url(path):
        with open(path, "rb") as f:
            yield f
        return
    fs = filesystem(path)
    with _remote(path):
        f = fs.open(path, "rb", block_size=_BLOCK_SIZE, cache_type="blockcache", cache_options={"maxblocks": _BLOCKS})
    try:
        yield _Checked(f, path)
    finally:
        with contextlib.suppress(Exception):  # closing a file only read from: nothing to lose
            f.close()


class _Checked:
    """A remote file whose reads raise TraceReadError (only its own errors: not the reader's)."""

    def __init__(self, f, url: str):
        self._f, self._url = f, url

    def read(self, n: int = -1) -> bytes:
        with _remote(self._url):
            return self._f.read(n)

    def seek(self, pos: int, whence: int = 0) -> int:
        with _remote(self._url):
            return self._f.seek(pos, whence)

    def tell(self) -> int:
        return self._f.tell()

    def readable(self) -> bool:
        return True


def read_bytes(path: str) -> bytes:
    """A small file whole (a sidecar, an experiment's figures)."""
    with open_binary(path) as f:
        return f.read()


def write_bytes(path: str, data: bytes) -> None:
    """A whole object written at once (object stores replace an object atomically)."""
    fs = filesystem(path)
    with _remote(path):
        fs.pipe_file(path, data)


def listdir(folder: str) -> list[str]:
    """The names in a remote folder (none when it does not exist yet)."""
    fs = filesystem(folder)
    with _remote(folder):
        if not fs.isdir(folder):
            return []
        return sorted(posixpath.basename(p.rstrip("/")) for p in fs.ls(folder, detail=False))


def remove(path: str) -> None:
    fs = filesystem(path)
    with _remote(path):
        fs.rm_file(path)
