"""The Memory section of the Markdown report: per allocator, the peak, what holds it, findings."""

from __future__ import annotations

from tftrace.model.memory import size
from tftrace.render.fmt import ms, pct


def memory_lines(memory, table, cell) -> list[str]:
    """`table(header, rows)` and `cell(text)`: the Markdown renderer's own table and escaping."""
    if not memory.allocators:
        return []
    out = ["### Memory", "", "Peak bytes in use per allocator over the window; capacity as the allocator states it.", ""]
    out += table(["allocator", "peak", "capacity", "share of capacity", "at step", "at ms", "op at the peak",
                  "fragmentation", "lifetime peak"],
                 [(f"{a.host} {a.name}".strip(), size(a.peak_bytes), size(a.capacity_bytes) if a.capacity_bytes else "",
                   pct(a.peak_share) if a.capacity_bytes else "", a.peak_step if a.peak_step >= 0 else "",
                   ms(a.peak_at_ps), a.peak_op, pct(a.fragmentation), size(a.lifetime_peak_bytes))
                  for a in memory.allocators])
    top = memory.allocators[0]
    out += [f"What holds {cell(top.name)} at its peak ({size(top.peak_bytes)}):", ""]
    out += table(["holder", "kind", "layer", "shape", "dtype", "count", "bytes", "share"],
                 [(h.op, h.kind, h.layer, h.shape, h.dtype, h.count or "", size(h.bytes), pct(h.share))
                  for h in top.at_peak])
    for i, f in enumerate(memory.findings, 1):
        out += [f"{i}. **{cell(f.title)}**  ", f"   Evidence: {cell(f.evidence)}  ", f"   Fix: {cell(f.recommendation)}"]
    return out + ([""] if memory.findings else [])
