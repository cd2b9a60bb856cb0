"""The host waits for the device every step: a value read back (`float(loss)`, `np.asarray(x)`,
`.item()`, `block_until_ready()`, Keras reading a batch's logs) stops JAX's asynchronous dispatch,
so the host's own work of the next step (making a batch, Python) can no longer run while the
device computes.

The waits are on the main thread: the Python tracer's calls that read a device value, JAX's own
`np.asarray(jax.Array)` and `ToLiteral` events, and the `CommonPjRtBuffer::Await` pair that
PJRT records around a blocking wait on the CPU (the only trace a bare `block_until_ready()`
leaves there). What a wait costs is the overlap it prevents: per step, the least of the device
work it waited for and the host's other work in that iteration.
"""

from __future__ import annotations

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.intervals import covered, merge, overlap
from tftrace.model.names import JIT_CALL

MIN_SHARE = 0.05  # of wall time
# Functions whose call reads a device value back (the Python tracer's `$file:line name`), with
# how the fix names the read.
_READS = {"__float__": "float(x)", "__int__": "int(x)", "__bool__": "bool(x)", "__index__": "int(x)",
          "_item": ".item()", "item": ".item()", "tolist": ".tolist()", "__array__": "np.asarray(x)",
          "_value": "np.asarray(x)", "block_until_ready": "block_until_ready()", "device_get": "jax.device_get()",
          "numpy asarray": "np.asarray(x)", "numpy array": "np.array(x)"}
_RUNTIME_READS = ("np.asarray(jax.Array)", "CommonPjRtBuffer::ToLiteral")
_AWAIT = "CommonPjRtBuffer::Await"  # zero-length, in pairs: where a blocking wait starts and ends
_KERAS_LOGS = (" pythonify_logs",)  # Keras turning a batch's logs into numbers


def detect(ctx: Context) -> list[Finding]:
    if not ctx.jax or ctx.steps.kind == "window" or not len(ctx.tl.dur):
        return []
    waits = _waits(ctx)
    if waits is None:
        return []
    w_start, w_end = merge(*waits[:2])
    lo, hi = ctx.tl.start, ctx.tl.start + ctx.tl.dur
    waited = covered(w_start, w_end, lo, hi)
    busy = overlap((w_start, w_end), ctx.tl.busy, lo, hi)  # the device (or XLA:CPU) working while the host waits
    if np.median(busy) <= 0:  # not a wait of every step
        return []
    # The host's other work, less what JAX's Python tracer itself adds to it: untraced, that much
    # less of the device's time would be left to hide it under.
    other_host = np.maximum(ctx.tl.iterations - waited - ctx.tracer_ps, 0)
    saved = np.minimum(busy, other_host)
    share = float(saved.sum()) / ctx.wall_ps
    if share < MIN_SHARE:
        return []
    read, keras = waits[2], waits[3]
    n = ctx.n
    facts = (fact("the read", read), ms_fact("host waiting for the device per step", waited.sum() / n),
             ms_fact("device work it waited for per step", busy.sum() / n),
             ms_fact("host work it kept from overlapping per step", saved.sum() / n),
             pct_fact("steps with a wait", float((busy > 0).mean())))
    if keras:
        facts += (fact("per-batch hooks of callbacks", _batch_hooks(ctx) or "none seen"),)
        title = (f"Keras reads each batch's logs back from the device on the main thread: the host waits "
                 f"{waited.sum() / n / 1e9:.2f} ms per step")
    else:
        title = f"Device-to-host sync every step ({read}): the host waits {waited.sum() / n / 1e9:.2f} ms per step"
    fix = fix_for("device_sync", "keras" if keras else "custom", read=read)
    step = ctx.projected(float(saved.sum()))
    p = projection.Projection(step, "overlap",
                              f"the host's other work ({other_host.sum() / n / 1e9:.3g} ms per step) runs while the "
                              f"device computes ({busy.sum() / n / 1e9:.3g} ms), not after it: the step less the shorter "
                              "of the two in each step, the longer setting it", step)
    return [Finding("device_sync", title, share, facts, fix, p.step_ps, "host_overhead", subject=read, **p.fields())]


def _waits(ctx: Context):
    """(starts, ends, how the read is written, whether Keras' logs conversion made it) of the
    main thread's reads inside steps; None if there are none."""
    trace, ev = ctx.trace, ctx.trace.events
    read_of = {}
    for code, name in enumerate(trace.names):
        if name.startswith("$"):
            function = name.rsplit(" ", 1)[-1] if not name.startswith("$numpy ") else name[1:]
            if function in _READS:
                read_of[code] = _READS[function]
        elif name in _RUNTIME_READS:
            read_of[code] = "np.asarray(x)"
    starts, ends, labels = [], [], []
    if read_of:
        rows = np.flatnonzero(trace.named(list(read_of)) & _loop_thread(ctx))
        rows = rows[ctx.inside(ev["start_ps"][rows]) >= 0]
        starts.append(ev["start_ps"][rows])
        ends.append(ev["start_ps"][rows] + ev["dur_ps"][rows])
        labels = [read_of[c] for c in ev["name"][rows].tolist()]
    pairs = _await_pairs(ctx)
    starts.append(pairs[0])
    ends.append(pairs[1])
    s, e = np.concatenate(starts), np.concatenate(ends)
    if not len(s):
        return None
    label = _outermost_label(s, e, labels) if labels else "block_until_ready()"
    keras = ctx.keras_jax and any(name.endswith(_KERAS_LOGS) for name in trace.names if name.startswith("$"))
    return s, e, label, keras


def _loop_thread(ctx: Context) -> np.ndarray:
    """Per event: on the thread that runs the loop. JAX names every Python thread's line
    `python`; Keras' worker threads, which read the logs when callbacks allow it, wait there
    without holding the loop back. The loop's thread is the one that dispatches the jitted calls."""
    main = ctx.main_thread
    calls = ctx.rows_named(lambda name: name.startswith(JIT_CALL))
    calls = calls[main[calls]]
    if not len(calls):
        return main
    line = np.bincount(ctx.trace.events["line"][calls]).argmax()
    return main & (ctx.trace.events["line"] == line)


def _await_pairs(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """PJRT's Await events on the main thread inside steps, paired in time order: one where a
    blocking wait starts, one where it ends. A capture may begin inside a wait (its first event
    ends one): of the two ways to pair, the one whose spans the device works through is taken."""
    if _AWAIT not in ctx.trace.names:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ev = ctx.trace.events
    rows = np.flatnonzero(ctx.trace.named([ctx.trace.names.index(_AWAIT)]) & _loop_thread(ctx))
    t = np.sort(ev["start_ps"][rows])
    best = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    most = -1
    for skip in (0, 1):
        u = t[skip:]
        u = u[: len(u) // 2 * 2]
        keep = ctx.inside(u[0::2]) >= 0
        s, e = u[0::2][keep], u[1::2][keep]
        on_device = int(covered(*ctx.tl.busy, s, e).sum()) if len(s) else 0
        if on_device > most:
            best, most = (s, e), on_device
    return best


def _outermost_label(starts: np.ndarray, ends: np.ndarray, labels: list[str]) -> str:
    """How the longest read is written (the outermost call of its nest holds the whole wait)."""
    k = int(np.argmax(ends[:len(labels)] - starts[:len(labels)]))
    return labels[k]


def _batch_hooks(ctx: Context) -> str:
    """The callbacks' own per-batch hooks the Python tracer saw (Keras' defaults left out): one
    of them is what makes Keras read the logs on the main thread."""
    hooks = sorted({name[1:] for name in ctx.trace.names if name.startswith("$") and name.endswith(_HOOKS)
                    and not name.startswith(("$callback_list.py:", "$callback.py:"))})
    return ", ".join(hooks[:4])


_HOOKS = (" on_batch_end", " on_train_batch_end", " on_test_batch_end", " on_predict_batch_end")
