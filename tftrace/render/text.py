"""Terminal text: verdict, breakdown and bottlenecks first, then ranked tables (rich)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tftrace.render.fmt import PART_LABELS, ms, params, pct


def render_text(report, color: bool = False, width: int = 120, **_options) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system="auto" if color else None,
                      highlight=False, emoji=False)
    for i, run in enumerate(report.runs):
        if i:
            console.print()
        _run(console, run)
    return buf.getvalue()


def _run(console: Console, run) -> None:
    console.print(f"[bold]Run {escape(run.name)}[/bold]  ({escape(run.path)})")
    if run.error:
        console.print(f"  [red]could not be read:[/red] {escape(run.error)}")
        return
    where = ", ".join(run.devices) or "host (CPU) only"
    console.print(f"  hosts: {escape(', '.join(run.hosts))}   devices: {escape(where)}   mode: {run.mode}"
                  + ("   [yellow]eager execution[/yellow]" if run.eager else ""))
    st = run.steps
    if st.count:
        console.print(f"  steps: {st.count} (from {escape(st.source)}), mean {ms(st.mean_ps)} ms, "
                      f"median {ms(st.median_ps)} ms")
    else:
        console.print(f"  steps: none found ({escape(st.source)})")
    if st.note:
        console.print(f"  [dim]{escape(st.note)}[/dim]")
    b = run.breakdown
    if any((b.input, b.compute, b.host_overhead, b.idle)):
        parts = "   ".join(f"{PART_LABELS[k]} {pct(getattr(b, k))}" for k in PART_LABELS)
        console.print(f"  step time: {parts}")
    if run.verdict.text:
        console.print(f"\n  [bold]Verdict ({run.verdict.bound}):[/bold] {escape(run.verdict.text)}")
    _bottlenecks(console, run.bottlenecks)
    _ops(console, run.ops)
    _simple(console, "Layers", ("layer", "self ms", "share", "params"),
            [(r.layer, ms(r.self_ps), pct(r.share), params(r.params)) for r in run.layers])
    _simple(console, "Categories", ("category", "self ms", "share"),
            [(r.category, ms(r.self_ps), pct(r.share)) for r in run.categories])
    _simple(console, "tf.data stages", ("stage", "self ms", "share"),
            [(r.name, ms(r.self_ps), pct(r.share)) for r in run.input_pipeline.stages])
    for note in run.notes:
        console.print(f"  [dim]note: {escape(note)}[/dim]")


def _bottlenecks(console: Console, items) -> None:
    if not items:
        return
    console.print("\n  [bold]Bottlenecks[/bold]")
    for b in items:
        console.print(f"  {b.rank}. [bold]{escape(b.title)}[/bold] ({pct(b.share)} of step time)")
        console.print(f"     evidence: {escape(b.evidence)}")
        console.print(f"     fix: {escape(b.recommendation)}")


def _ops(console: Console, ops) -> None:
    if not ops:
        console.print("\n  No ops found in this trace.")
        return
    table = Table(title="Top ops by self time", title_justify="left", show_edge=False, pad_edge=False)
    for col, just in (("#", "right"), ("op", "left"), ("type", "left"), ("category", "left"),
                      ("layer", "left"), ("phase", "left"), ("where", "left"), ("count", "right"),
                      ("self ms", "right"), ("share", "right")):
        table.add_column(col, justify=just, overflow="fold")
    for i, o in enumerate(ops, 1):
        table.add_row(str(i), escape(o.name), escape(o.type), o.category, escape(o.layer), o.phase,
                      o.device + (" (eager)" if o.eager else ""), str(o.count), ms(o.self_ps), pct(o.share))
    console.print()
    console.print(table)


def _simple(console: Console, title: str, columns, rows) -> None:
    if not rows:
        return
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    for row in rows:
        table.add_row(*(escape(str(c)) for c in row))
    console.print()
    console.print(table)
