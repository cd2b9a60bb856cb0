"""Wall-clock timing for experiments: batches of an iterator, and repeated calls."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Timed:
    ms: float | None  # per batch or per call; None when nothing could be timed
    count: int  # how many batches or calls the figure is over


def sync(value) -> None:
    """Wait until `value` is computed: a JAX array's `block_until_ready()`, a tensor's `.numpy()`
    (a call returns once its work is queued: JAX always dispatches so, TF on a GPU)."""
    leaves = _leaves(value)
    if leaves and hasattr(leaves[-1], "block_until_ready"):
        leaves[-1].block_until_ready()
    elif leaves and hasattr(leaves[-1], "numpy"):
        leaves[-1].numpy()


def _leaves(value) -> list:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def time_batches(iterator, n: int, each=None) -> tuple[Timed, object]:
    """(ms per batch over `n` batches, the first batch); `each(batch)`, if given, runs on every
    batch (a step: the loop of both is timed). The first batch (iterator start-up, buffers
    filling, tracing) is not timed, nor the next n // 2: a prefetch buffer filled meanwhile
    would hand them out for free, so the timed ones come at the rate the pipeline makes them."""
    each = each or (lambda batch: batch)
    try:
        first = next(iterator)
    except StopIteration:
        return Timed(None, 0), None
    out = each(first)
    sync(out)
    got, start = 0, time.perf_counter()
    try:
        for _ in range(n // 2):
            each(next(iterator))
        start = time.perf_counter()
        for _ in range(n):
            out = each(next(iterator))
            got += 1
    except StopIteration:
        pass
    sync(out)
    elapsed = time.perf_counter() - start if got else 0.0
    return Timed(elapsed / got * 1e3 if got else None, got), first


def time_each(fn, n: int, warmup: int = 1, min_s: float = 0.0, max_calls: int = 1000) -> tuple[Timed, object]:
    """(median ms per call of `fn()`, each waited for, after `warmup` untimed ones; the last
    result). At least `n` calls, and more until `min_s` seconds have passed (at most
    `max_calls`): the median of a handful of millisecond calls is mostly scheduling noise. The
    median: one slow call (a collection, another process) does not decide."""
    out = None
    for _ in range(warmup):
        out = fn()
        sync(out)
    times: list[float] = []
    while len(times) < n or (sum(times) < min_s and len(times) < max_calls):
        start = time.perf_counter()
        out = fn()
        sync(out)
        times.append(time.perf_counter() - start)
    return Timed(statistics.median(times) * 1e3, len(times)), out


class StepClock:
    """When each batch of a running Keras call began. The gaps between batches no profiler
    traced are the call's own steps, input and callbacks included, at full speed: the profiler
    slows a step of a few ms by 1.2-2x here, which a step timed alone is not.

    `ahead`: the host may run ahead of the device (JAX dispatches asynchronously, and Keras 3 never
    waits while its callbacks' end hooks run on a worker thread), so a gap times a dispatch (0.5 ms
    for a 19 ms step here). Then only runs of untraced batches that end where the call has done all
    its work count (`end()`): their time over their steps."""

    WARMUP = 2  # an epoch's first steps hold the iterator's start-up (and, once, tracing)
    KEPT = 10_000  # gaps kept: a median needs no more, and a long fit must not grow a list

    def __init__(self, ahead: bool = False) -> None:
        self.ahead = ahead
        self.gaps: list[float] = []  # ms per step
        self.spans: list[tuple[float, int]] = []  # (ms, steps) of untraced runs that ended with the call's work
        self._last: tuple[int, float, bool] | None = None  # (batch, when, traced)
        self._run: tuple[int, float] | None = None  # (batch, when) the current untraced run began

    def new_epoch(self) -> None:
        self._last = self._run = None

    def tick(self, batch: int, traced: bool) -> None:
        """Batch `batch` begins; `traced`: a profiler window is open (its gaps are left out, and
        so are the gaps into and out of it, which hold the profiler's start and save)."""
        now = time.perf_counter()
        if self._last is not None:
            before, then, was_traced = self._last
            if batch > before >= self.WARMUP and not (traced or was_traced) and len(self.gaps) < self.KEPT:
                self.gaps.append((now - then) * 1e3 / (batch - before))  # a call may run several steps
        if traced:
            self._run = None  # a run into a window ends where the host is, not the device: left out
        elif self._run is None and batch >= self.WARMUP:
            self._run = (batch, now)
        self._last = (batch, now, traced)

    def end(self) -> None:
        """The epoch or call has ended and its work is done (the caller waited for it): the
        untraced run up to here is timed, through the last batch ticked."""
        if self._run is not None and self._last is not None and not self._last[2]:
            first, began = self._run
            steps = self._last[0] - first + 1
            if steps > 0:
                self.spans.append(((time.perf_counter() - began) * 1e3, steps))
        self._last = self._run = None

    @property
    def count(self) -> int:
        """How many untraced steps the figure is over."""
        return sum(n for _, n in self.spans) if self.ahead else len(self.gaps)

    def median_ms(self, least: int = 2) -> float | None:
        """The median untraced step (when the host may run ahead: the mean over the timed runs),
        given at least `least` of them (a fit of 10 steps with the default window 2-6 leaves two:
        7 and 8)."""
        if self.ahead:
            return sum(ms for ms, _ in self.spans) / self.count if self.count >= least else None
        return statistics.median(self.gaps) if len(self.gaps) >= least else None
