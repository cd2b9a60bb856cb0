"""Stalls: a few steps far longer than the rest (periodic checkpoints, evaluation, logging),
and what runs in them that does not run in the others."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact
from tftrace.analysis.hooks import hooks
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.overhead import ITERATOR_BUILDS
from tftrace.analysis.steps.ran_ahead import device_pace

OUTLIER = 3.0  # a step this many times the median (with its gap) is a stall
_SAVING = ("SaveV2", "MergeV2Checkpoints", "SaveSlices", "Save", "WriteFile", "ShardedFilename")
_SAVE_CALLBACKS = ("ModelCheckpoint", "BackupAndRestore")


def detect(ctx: Context) -> list[Finding]:
    full = ctx.tl.iterations
    if len(full) < 4:
        return []
    median = float(np.median(full))
    if median <= 0:  # zero-length steps: nothing to compare against
        return []
    out = np.flatnonzero(full > OUTLIER * median)
    if not len(out) or len(out) > len(full) // 2:
        return []
    if ctx.jax and device_pace(ctx.tl) is not None:  # the slow steps pay for queued device work: no stall
        return []
    excess = int((full[out] - median).sum())
    numbers = [ctx.steps.numbers[i] for i in out]
    facts = [fact("the slow steps (by number)", ", ".join(map(str, numbers[:12])) + (" ..." if len(numbers) > 12 else "")),
             ms_fact("their mean time", full[out].mean()), ms_fact("median step", median),
             fact("times the median", round(float(full[out].mean()) / median, 1))]
    if len(out) >= 2 and len(set(np.diff(numbers).tolist())) == 1:
        facts.append(fact("how often", f"every {numbers[1] - numbers[0]} steps"))
    what, cause, names = _what_runs(ctx, out)
    facts += what
    title = f"Stalls: {len(out)} of {len(full)} steps take {full[out].mean() / median:.0f}x the median"
    title += f" ({cause})" if cause else ""
    why = names.pop("why")
    if why == "startup":  # paid once per call: per step it depends on how many steps the calls run
        p = projection.unknown(ctx, f"a call's start-up is paid once per call: it saves {ms(excess)} per call, "
                                    f"over the {ctx.n} steps of this window {ms(excess / ctx.n)} each, and less the "
                                    "more steps each call runs")
    else:
        p = projection.removed(ctx, excess, "the slow steps' time over the median step")
    return [Finding("stall", title, excess / ctx.wall_ps, tuple(facts), fix_for("stall", why, **names),
                    p.step_ps, "host_overhead", subject=names.get("cb") and f"{why} {names['cb']}" or why, **p.fields())]


def _what_runs(ctx: Context, slow: np.ndarray):
    """Evidence of what the slow steps do that the others do not, the cause in words, and the
    fix's key and names."""
    facts = []
    spiky = sorted(((h.per_step[slow].sum() - np.median(h.per_step) * len(slow), h) for h in ctx.once(hooks)),
                   key=lambda kv: -kv[0])
    if spiky and spiky[0][0] > 0:
        extra, h = spiky[0]
        facts.append(ms_fact(f"{h.callback}.{h.hook} in each slow step", h.per_step[slow].mean()))
        key = "checkpoint" if h.callback in _SAVE_CALLBACKS else "callback"
        cause = f"{h.callback}.{h.hook}" + (" saving the model" if key == "checkpoint" else "")
        return facts, cause, {"why": key, "cb": h.callback, "hook": h.hook}
    ops = _extra_ops(ctx, slow)
    if ops:
        facts.append(fact("ops only in the slow steps", ", ".join(f"{t} x{c}" for t, c in ops[:5])))
        if any(t in _SAVING for t, _ in ops):
            return facts, "writing a checkpoint", {"why": "checkpoint"}
        if any(t in ITERATOR_BUILDS for t, _ in ops) and len(slow) <= 2:
            return facts, "a call's start-up: building its input iterator", {"why": "startup"}
    if any(n.lower() in ("test", "evaluate") for n in ctx.steps.names):
        return facts, "evaluation", {"why": "evaluation"}
    owners = _owners_more(ctx, slow)
    if owners:
        facts.append(fact("what the slow steps hold more of than the median step",
                          ", ".join(f"{label} +{ps / 1e9:.2f} ms" for label, ps in owners)))
        return facts, f"{owners[0][0]} takes longer in them", {"why": "other"}
    return facts, "", {"why": "other"}


def _owners_more(ctx: Context, slow: np.ndarray, top: int = 3) -> list[tuple[str, float]]:
    """The owners whose time in the slow steps most exceeds their time in a median step."""
    o = ctx.owners
    if not len(o.keys) or o.wall.shape[0] <= int(slow.max()):
        return []
    extra = o.wall[slow].mean(axis=0) - np.median(o.wall, axis=0)
    total = extra[extra > 0].sum()
    order = [k for k in np.argsort(-extra).tolist() if extra[k] > 0.1 * total][:top]
    labels = {(r.kind, r.name, r.phase): r.label for r in o.rows}
    return [(labels.get(tuple(o.keys[k]), o.keys[k].name), float(extra[k])) for k in order]


def _extra_ops(ctx: Context, slow: np.ndarray) -> list[tuple[str, int]]:
    """Op types that run in the slow steps but in none of the others."""
    ev = ctx.trace.events
    ops = np.flatnonzero(ctx.trace.named(ctx.trace.ops))
    step = ctx.inside(ev["start_ps"][ops])
    is_slow = np.isin(step, slow)
    size = len(ctx.trace.names) + 1

    def types(rows) -> Counter:  # counted per name code first: few names, many events
        counts = np.bincount(ev["name"][rows], minlength=size)
        out: Counter = Counter()
        for code in np.flatnonzero(counts).tolist():
            out[ctx.trace.ops[code].type] += int(counts[code])
        return out

    normal = types(ops[(step >= 0) & ~is_slow])
    return sorted(((t, c) for t, c in types(ops[is_slow]).items() if t not in normal), key=lambda kv: (-kv[1], kv[0]))
