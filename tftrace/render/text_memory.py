"""The Memory section of the terminal report: per allocator, the peak, what holds it, findings."""

from __future__ import annotations

from rich.markup import escape

from tftrace.model.memory import size
from tftrace.render.fmt import ms, pct
from tftrace.render.wrap import labelled


def memory_section(console, memory, table) -> None:
    """`table(console, title, columns, rows, limits)`: the text renderer's table printer."""
    if not memory.allocators:
        return
    table(console, "Memory (peak bytes in use per allocator over the window)",
          ("allocator", "peak", "capacity", "share", "at step", "at ms", "op at the peak", "fragm."),
          [(_name(a), size(a.peak_bytes), size(a.capacity_bytes) if a.capacity_bytes else "",
            pct(a.peak_share) if a.capacity_bytes else "", a.peak_step if a.peak_step >= 0 else "",
            ms(a.peak_at_ps), a.peak_op, pct(a.fragmentation)) for a in memory.allocators],
          {"op at the peak": 24})
    top = memory.allocators[0]
    table(console, f"What holds {_name(top)} at its peak ({size(top.peak_bytes)})",
          ("holder", "kind", "layer", "shape", "dtype", "count", "bytes", "share"),
          [(h.op or "(op not recorded)", h.kind, h.layer, h.shape, h.dtype, h.count or "", size(h.bytes),
            pct(h.share)) for h in top.at_peak],
          {"kind": 13, "layer": 14, "shape": 16})
    if memory.findings:
        console.print("\n  [bold]Memory findings[/bold]")
    for i, f in enumerate(memory.findings, 1):
        labelled(console, f"{i}. ", f"[bold]{escape(f.title)}[/bold]", 2)
        labelled(console, "evidence: ", escape(f.evidence), 5)
        labelled(console, "fix: ", escape(f.recommendation), 5)


def _name(a) -> str:
    return f"{a.host} {a.name}" if a.host else a.name
