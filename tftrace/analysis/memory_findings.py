"""Memory findings: an allocator one step from out of memory (and what holds it), fragmentation
that matters, and headroom a larger batch could use when steps are overhead-bound."""

from __future__ import annotations

from tftrace.facts import Fact
from tftrace.memory_report import AllocatorRow, HeldRow, MemoryFinding, size

NEAR_CAPACITY = 0.9  # the line: above it, the next larger tensor or batch fails to allocate
FRAGMENTED = 0.3  # allocator-reported fragmentation worth a word ...
TIGHT = 0.75  # ... when the peak leaves this little room
ROOMY = 0.5  # below this share of capacity a larger batch fits
SAFE_FILL = 0.85  # plan a larger batch up to this share of capacity, not to the brim
MAX_FACTOR = 8  # one window's memory does not support a bolder projection
# What scales with the batch: values computed per batch, kept for the backward pass.
_PER_BATCH = ("activation", "gradient")


def memory_findings(rows: tuple[AllocatorRow, ...], bound: str, mode: str) -> tuple[MemoryFinding, ...]:
    """`bound`: the run's verdict (input, compute, host_overhead, idle, unknown); `mode`: train,
    predict... A larger batch amortises per-step overhead only, not input work done per sample."""
    out = [f for r in rows for f in (_near_capacity(r), _fragmented(r)) if f]
    if rows and bound == "host_overhead":
        out += [f for f in (_headroom(rows[0], mode),) if f]
    return tuple(out)


def _near_capacity(r: AllocatorRow) -> MemoryFinding | None:
    if r.peak_share <= NEAR_CAPACITY:
        return None
    holders = [h for h in r.at_peak if h.kind != "rest"][:3]
    facts = (Fact("peak in use", r.peak_bytes, "bytes"), Fact("capacity", r.capacity_bytes, "bytes"),
             Fact("peak share of capacity", round(r.peak_share * 100, 1), "%"), *_when(r),
             *(Fact(f"held by {_holder(h)}", round(h.share * 100, 1), "%") for h in holders))
    return MemoryFinding(
        "near_capacity", r.name,
        f"{r.name} peaks at {size(r.peak_bytes)} of {size(r.capacity_bytes)} ({r.peak_share:.1%}): one step from "
        "out of memory", _evidence(facts), _cut(r.at_peak), facts)


def _fragmented(r: AllocatorRow) -> MemoryFinding | None:
    if r.fragmentation < FRAGMENTED or r.peak_share < TIGHT:
        return None
    facts = (Fact("fragmentation at the peak", round(r.fragmentation * 100, 1), "%"),
             Fact("peak share of capacity", round(r.peak_share * 100, 1), "%"))
    return MemoryFinding(
        "fragmentation", r.name, f"{r.name} is {r.fragmentation:.0%} fragmented at its peak",
        _evidence(facts),
        "free memory is split into pieces too small for the largest tensors, so an allocation can fail with "
        "room to spare; on GPUs try `TF_GPU_ALLOCATOR=cuda_malloc_async`, or keep tensor sizes steady across "
        "steps (fixed shapes, `drop_remainder=True` in `batch`)", facts)


def _headroom(r: AllocatorRow, mode: str) -> MemoryFinding | None:
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
    return MemoryFinding(
        "headroom", r.name,
        f"{r.name} peaks at {_share(r.peak_share)} of its capacity: a batch about {shown} larger would fit",
        _evidence(facts),
        f"steps are bound by per-step host overhead, which a larger batch pays once for more samples: raise "
        f"`batch_size` up to about {shown} (activations and gradients grow with it, the rest does not; "
        f"{SAFE_FILL:.0%} of capacity planned)" + (", and scale the learning rate with it" if mode == "train" else ""),
        facts)


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
        return ("activations kept for the backward pass hold the most: lower `batch_size` (they scale with it), "
                "train in mixed precision (`keras.mixed_precision.set_global_policy('mixed_float16')` halves them), "
                "or recompute them in the backward pass (`tf.recompute_grad`) instead of keeping them")
    if top in ("weights", "optimizer", "before window"):
        layer = next((h.layer for h in held if h.layer), "")
        return ("long-lived tensors hold the most (weights and optimizer slots, allocated before the window "
                "where the trace cannot name them): use a smaller layer" + (f" (`{layer}` holds the most)" if layer else "")
                + ", mixed precision, or an optimizer with fewer slots (Adam keeps two per weight, SGD with momentum one)")
    return ("lower `batch_size`, train in mixed precision (`keras.mixed_precision.set_global_policy('mixed_float16')`), "
            "or shrink the largest tensors listed")
