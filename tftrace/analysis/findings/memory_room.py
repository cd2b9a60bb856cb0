"""Memory room: an allocator one step from out of memory (and what holds it), fragmentation that
matters, and headroom a larger batch could use when steps are overhead-bound. Findings about an
allocator's memory, not step time: the report lists them with its memory (registry.MEMORY)."""

from __future__ import annotations

from tftrace.analysis.findings.base import Fact, Finding
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for
from tftrace.model.memory import AllocatorRow, HeldRow, size

NEAR_CAPACITY = 0.9  # the line: above it, the next larger tensor or batch fails to allocate
FRAGMENTED = 0.3  # allocator-reported fragmentation worth a word ...
TIGHT = 0.75  # ... when the peak leaves this little room
ROOMY = 0.5  # below this share of capacity a larger batch fits
SAFE_FILL = 0.85  # plan a larger batch up to this share of capacity, not to the brim
MAX_FACTOR = 8  # one window's memory does not support a bolder projection
# What scales with the batch: values computed per batch, kept for the backward pass.
_PER_BATCH = ("activation", "gradient")


def detect(ctx: Context) -> list[Finding]:
    """`ctx.memory`: the run's allocators, largest peak first; `ctx.bound`: the verdict's (a larger
    batch amortises per-step overhead only, not input work done per sample)."""
    rows = ctx.memory
    out = [f for r in rows for f in (_near_capacity(r), _fragmented(r)) if f]
    if rows and ctx.bound == "host_overhead":
        out += [f for f in (_headroom(rows[0], ctx.mode),) if f]
    return out


def _finding(kind: str, r: AllocatorRow, title: str, facts: tuple[Fact, ...], fix: str) -> Finding:
    # Sizes read in decimal units (size()), as XProf and nvidia-smi print them: the evidence is written here.
    return Finding(kind, title, 0.0, facts, fix, 0, evidence=_evidence(facts), subject=r.name)


def _near_capacity(r: AllocatorRow) -> Finding | None:
    if r.peak_share <= NEAR_CAPACITY:
        return None
    holders = [h for h in r.at_peak if h.kind != "rest"][:3]
    facts = (Fact("peak in use", r.peak_bytes, "bytes"), Fact("capacity", r.capacity_bytes, "bytes"),
             Fact("peak share of capacity", round(r.peak_share * 100, 1), "%"), *_when(r),
             *(Fact(f"held by {_holder(h)}", round(h.share * 100, 1), "%") for h in holders))
    return _finding(
        "near_capacity", r,
        f"{r.name} peaks at {size(r.peak_bytes)} of {size(r.capacity_bytes)} ({r.peak_share:.1%}): one step from "
        "out of memory", facts, _cut(r.at_peak))


def _fragmented(r: AllocatorRow) -> Finding | None:
    if r.fragmentation < FRAGMENTED or r.peak_share < TIGHT:
        return None
    facts = (Fact("fragmentation at the peak", round(r.fragmentation * 100, 1), "%"),
             Fact("peak share of capacity", round(r.peak_share * 100, 1), "%"))
    return _finding("fragmentation", r, f"{r.name} is {r.fragmentation:.0%} fragmented at its peak", facts,
                    fix_for("fragmentation"))


def _headroom(r: AllocatorRow, mode: str) -> Finding | None:
    per_batch = sum(h.bytes for h in r.at_peak if h.kind in _PER_BATCH)
    if not r.capacity_bytes or r.peak_share >= ROOMY or per_batch <= 0:
        return None
    fixed = r.peak_bytes - per_batch
    factor = int((SAFE_FILL * r.capacity_bytes - fixed) // per_batch)
    if factor < 2:
        return None
    shown = f"{min(factor, MAX_FACTOR)}x" + (" or more" if factor > MAX_FACTOR else "")
    facts = (Fact("peak in use", r.peak_bytes, "bytes"), Fact("capacity", r.capacity_bytes, "bytes"),
             Fact("peak share of capacity", round(r.peak_share * 100, 1), "%"),
             Fact("activations and gradients at the peak (scale with the batch)", per_batch, "bytes"))
    return _finding(
        "headroom", r, f"{r.name} peaks at {_share(r.peak_share)} of its capacity: a batch about {shown} larger would fit",
        facts, fix_for("headroom", "train" if mode == "train" else "any", shown=shown, fill=f"{SAFE_FILL:.0%}"))


def _share(fraction: float) -> str:
    return f"{fraction:.0%}" if fraction >= 0.01 else "under 1%"


def _when(r: AllocatorRow) -> tuple[Fact, ...]:
    out = (Fact("at step", r.peak_step),) if r.peak_step >= 0 else ()
    return out + ((Fact("allocated by op", r.peak_op),) if r.peak_op else ())


def _holder(h: HeldRow) -> str:
    detail = ", ".join(x for x in (h.kind, h.layer and f"layer {h.layer}", h.shape, h.dtype) if x)
    return f"{h.op or '(unnamed)'} ({detail})" + (f" x{h.count}" if h.count > 1 else "")


def _evidence(facts) -> str:
    return "; ".join(f"{f.label}: {size(f.value) if f.unit == 'bytes' else f'{f.value}{f.unit}'}" for f in facts)


def _cut(held: tuple[HeldRow, ...]) -> str:
    """What to cut, from what holds the most at the peak."""
    by_kind: dict[str, int] = {}
    for h in held:
        by_kind[h.kind] = by_kind.get(h.kind, 0) + h.bytes
    top = max(by_kind, key=by_kind.get) if by_kind else ""
    if top in _PER_BATCH:
        return fix_for("near_capacity", "activations")
    if top in ("weights", "optimizer", "before window"):
        layer = next((h.layer for h in held if h.layer), "")
        return fix_for("near_capacity", "long_lived", layer=f" (`{layer}` holds the most)" if layer else "")
    return fix_for("near_capacity")
