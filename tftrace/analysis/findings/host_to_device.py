"""Host-to-device copies: on TF device runs the part of each step the device only copies input
in; on JAX (CPU and GPU) the time each step spends moving host data to the device while the
model computes nothing: `jnp.asarray(batch)`, `jax.device_put`, numpy passed straight into a
jitted call, and PJRT's own copy work (`H2D Dispatch` on its worker threads, `MemcpyH2D`)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tftrace.analysis.classify import category_of_type
from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.intervals import covered, merge, overlap

MIN_SHARE = 0.05  # of wall time
_PUT = "BufferFromHostBuffer("  # PJRT making a device buffer from host memory; the name holds its shape
_H2D = "MemcpyH2D"
# What moving host data to the device records: PJRT's copy work and its puts, JAX's staging jit
# (`jnp.asarray`), and the Python calls that ask for them.
_RUNTIME = ("H2D Dispatch", "DevicePut", "DevicePutWithSharding", "PjitFunction(stage)")
_PYTHON = (" device_put", "array_constructors.py:")  # jax.device_put; jnp.asarray / jnp.array


def host_to_device(ctx: Context) -> Finding:
    """TF and JAX device runs: the device's input part (copies no kernel overlaps)."""
    b, tl = ctx.breakdown, ctx.tl
    facts = [pct_fact("share of step time the device only copies input in", b.input),
             ms_fact("per step", tl.input.sum() / ctx.n), *_counts(ctx)]
    copies = next((f.value for f in facts if f.label == "host-to-device copies per step"), 0)
    title = "Host-to-device copies" + (f": {round(copies)} per step" if copies >= 1 else "")
    p = hidden(ctx, tl.input.sum(), "input copies the device waits for")
    return Finding("input", title, b.input, tuple(facts), fix_for("h2d", _loop(ctx)), p.step_ps,
                   "input", subject="host-to-device", **p.fields())


def detect(ctx: Context) -> list[Finding]:
    """JAX runs: the steps' time moving data to the device while none of the model's ops run."""
    if not ctx.jax or not len(ctx.tl.dur) or ctx.steps.kind == "window":
        return []
    rows = ctx.rows_named(_is_transfer)
    if not len(rows):
        return []
    ev = ctx.trace.events
    lo, hi = ctx.tl.start, ctx.tl.start + ctx.tl.dur
    moving = merge(ev["start_ps"][rows], ev["start_ps"][rows] + ev["dur_ps"][rows])
    # Moving data while no op of the model runs.
    alone = covered(*moving, lo, hi) - overlap(moving, _model_compute(ctx), lo, hi)
    share = float(alone.sum()) / ctx.wall_ps
    if share < MIN_SHARE:
        return []
    facts = (ms_fact("moving data to the device per step, the model idle", alone.sum() / ctx.n),
             pct_fact("share of wall time", share), fact("how", _how(ctx)), *_counts(ctx))
    title = f"Host-to-device copies every step ({_how(ctx)}): {alone.sum() / ctx.n / 1e9:.2f} ms per step"
    # The fix's first way puts the data on the device once, before the loop: the copies go.
    p = projection.removed(ctx, float(alone.sum()), "moving data to the device while the model idles")
    return [Finding("host_to_device", title, share, facts, fix_for("h2d", _loop(ctx)),
                    p.step_ps, "host_overhead", subject="host-to-device", **p.fields())]


def hidden(ctx: Context, alone_ps: float, what: str) -> projection.Projection:
    """Copies moved off the step's path (prefetched while the step before computes): the step
    loses the time they run alone, and cannot go below the copies themselves."""
    per = alone_ps / ctx.n
    step = ctx.projected(alone_ps)
    return projection.Projection(max(step, round(per)), "overlap",
                                 f"the step less {what} ({per / 1e9:.3g} ms per step), which then runs while the "
                                 "step before computes; never below the copies themselves", round(per))


def _is_transfer(name: str) -> bool:
    """PJRT's own copy work and puts (the Python asking for them is left out: under JAX's tracer
    its time is mostly the tracer's, and a tiny array's put is Python, not a copy)."""
    return name in _RUNTIME or _PUT in name or name.endswith(_H2D)


def _model_compute(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """The model's own ops (copies left out) as merged intervals."""
    ops = [c for c, op in ctx.trace.ops.items() if category_of_type(op.type) != "transfer"
           and op.kind in ("device", "xla")]
    if not ops:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.flatnonzero(ctx.trace.named(ops))
    ev = ctx.trace.events
    return merge(ev["start_ps"][rows], ev["start_ps"][rows] + ev["dur_ps"][rows])


def _how(ctx: Context) -> str:
    """Which call moves the data, as the user wrote it."""
    names = ctx.trace.names
    if "PjitFunction(stage)" in names:
        return "jnp.asarray of host data"
    if any(n.startswith("$") and n.endswith(_PYTHON[0]) for n in names):
        return "jax.device_put"
    if ctx.keras_jax:
        return "Keras copying each batch"
    return "numpy arrays passed to a jitted call"


def _counts(ctx: Context) -> list:
    """Copies per step (device copies where a device recorded them, else PJRT's copy work) and,
    where PJRT names them, the arrays put on the device per step."""
    out = []
    copies = _per_step(ctx, lambda name: name.endswith(_H2D) and name.startswith(("kernel:", _H2D)), device=True) or \
        _per_step(ctx, lambda name: name == "H2D Dispatch", device=False)
    if copies:
        out.append(fact("host-to-device copies per step", round(copies, 1)))
    arrays = _arrays(ctx)
    if arrays:
        out.append(fact("arrays put on the device per step", arrays))
    return out


def _loop(ctx: Context) -> str:
    return "torch" if ctx.torch else "keras_jax" if ctx.keras_jax else "jax" if ctx.jax else "any"


def _per_step(ctx: Context, predicate, device: bool) -> float:
    """Events whose name satisfies `predicate`, from the first step's start to the last one's
    end, per step (on device lines, or the host's): a batch is often put on the device just
    before its step's call, in the gap between steps."""
    rows = ctx.rows_named(predicate)
    if not len(rows):
        return 0.0
    rows = rows[ctx.trace.on_lines(lambda ln: ln.on_device == device)[rows]]
    return float(_in_window(ctx, ctx.trace.events["start_ps"][rows]).sum()) / ctx.n


def _in_window(ctx: Context, t: np.ndarray) -> np.ndarray:
    return (t >= ctx.tl.start[0]) & (t < (ctx.tl.start + ctx.tl.dur).max())


def _arrays(ctx: Context) -> str:
    """The shapes PJRT copied from the host inside steps, the most per step first."""
    rows = ctx.rows_named(lambda name: _PUT in name)
    if not len(rows):
        return ""
    rows = rows[_in_window(ctx, ctx.trace.events["start_ps"][rows])]
    names = Counter(ctx.trace.names[c].split(_PUT, 1)[1].rstrip(")") for c in ctx.trace.events["name"][rows].tolist())
    return ", ".join(f"{shape} x{count / ctx.n:g}" for shape, count in names.most_common(4))
