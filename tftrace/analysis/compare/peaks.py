"""Compare two runs' memory: each allocator's peak bytes in use, before and after."""

from __future__ import annotations

from tftrace.model.diff_report import MemoryDelta
from tftrace.model.memory import Memory


def memory_deltas(base: Memory, cand: Memory) -> tuple[MemoryDelta, ...]:
    """Per allocator (with its host where a run has several), matched by name; largest change first."""
    b = {_key(a): a for a in base.allocators}
    c = {_key(a): a for a in cand.allocators}
    out = []
    for key in set(b) | set(c):
        x, y = b.get(key), c.get(key)
        bp, cp = (x.peak_bytes if x else 0), (y.peak_bytes if y else 0)
        status = "added" if x is None else "removed" if y is None else "changed"
        capacity = (y.capacity_bytes if y else 0) or (x.capacity_bytes if x else 0)
        out.append(MemoryDelta(key, bp, cp, cp - bp, round((cp - bp) / bp * 100, 2) if bp and cp else 0.0,
                               capacity, round(cp / capacity, 6) if capacity else 0.0, status))
    return tuple(sorted(out, key=lambda d: (-abs(d.delta_bytes), d.allocator)))


def _key(a) -> str:
    return f"{a.host} {a.name}" if a.host else a.name
