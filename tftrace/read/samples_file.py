"""Read the Python stack samples saved beside a run (`python=True`), checked before use."""

from __future__ import annotations

import gzip
import json
import numbers

import numpy as np

from tftrace.model.errors import TraceReadError
from tftrace.read import storage
from tftrace.read.json_stream import limit_bytes


def read_samples(path: str) -> dict:
    """The samples file's data, its `ticks` and `samples` as int64 arrays (checked once, used as
    they are); TraceReadError if it cannot be read, is larger than the JSON limit once inflated,
    or does not hold what capture/sampler.py writes."""
    limit = limit_bytes()
    try:
        with storage.open_binary(path) as packed, gzip.GzipFile(fileobj=packed) as f:
            raw = f.read(limit + 1)  # bounded: a small .gz can inflate to gigabytes
        if len(raw) > limit:
            raise TraceReadError(f"{path}: Python samples hold more than {limit >> 20} MB once inflated; left out")
        data = json.loads(raw)
        data["ticks"], data["samples"] = _check(data)
    except (OSError, ValueError, EOFError, TypeError) as e:
        raise TraceReadError(f"{path}: unreadable Python samples ({e}); left out") from None
    return data


def _check(data) -> tuple[np.ndarray, np.ndarray]:
    """(ticks, samples) as arrays; ValueError unless every id in the samples points at a tick, a
    stack and frames."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    interval = data.get("interval_s")
    if not isinstance(interval, numbers.Real) or not interval > 0:
        raise ValueError("no positive interval_s")
    frames, stacks = data.get("frames"), data.get("stacks")
    if not isinstance(frames, list) or not all(_frame(f) for f in frames):
        raise ValueError("frames are not [file, line, function] lists")
    if not isinstance(stacks, list) or not all(isinstance(s, list) for s in stacks):
        raise ValueError("stacks are not lists of frame ids")
    if not isinstance(data.get("threads", {}), dict) or not isinstance(data.get("roots", {}), dict):
        raise ValueError("threads or roots are not objects")
    ids = [f for s in stacks for f in s]
    _in_range(np.asarray(ids, np.int64), len(frames), "a stack names a frame that is not there")
    ticks = np.asarray(data.get("ticks"), np.int64)
    samples = np.asarray(data.get("samples"), np.int64)
    if samples.size == 0:
        samples = samples.reshape(0, 4)  # a window too short for one sample
    if ticks.ndim != 1 or samples.ndim != 2 or samples.shape[1] != 4:
        raise ValueError("ticks or samples have the wrong shape")
    _in_range(samples[:, 0], len(ticks), "a sample's tick is not there")
    _in_range(samples[:, 2], len(stacks), "a sample's stack is not there")
    return ticks, samples


def _frame(f) -> bool:
    return (isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and isinstance(f[1], int)
            and isinstance(f[2], str))


def _in_range(ids: np.ndarray, size: int, why: str) -> None:
    if len(ids) and (ids.min() < 0 or ids.max() >= size):
        raise ValueError(why)
