"""Terminal text: verdict, breakdown and bottlenecks first, then ranked tables (rich)."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from tftrace.render.fmt import (PART_LABELS, experiment_head, experiment_skipped, main_share_basis, ms, op_share_basis,
                                params, pct, projection, tail, where)
from tftrace.render.text_memory import memory_section

WIDTH = 100  # fits a standard terminal; table cells never wrap over two lines at this width
_INDENT = 2


def render_text(report, color: bool = False, width: int = WIDTH, **_options) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system="auto" if color else None,
                      highlight=False, emoji=False)
    for i, run in enumerate(report.runs):
        if i:
            console.print()
        _run(console, run)
    return buf.getvalue()


def _experiment(console: Console, exp) -> None:
    if exp is None:
        return
    console.print(f"  [bold]{escape(experiment_head(exp))}:[/bold] {escape(exp.statement)}")
    for line in experiment_skipped(exp):
        console.print(f"    [dim]{escape(line)}[/dim]")


def _run(console: Console, run) -> None:
    console.print(f"[bold]Run {escape(run.name)}[/bold]  ({escape(run.path)})")
    if run.error:
        console.print(f"  [red]could not be read:[/red] {escape(run.error)}")
        return
    where = ", ".join(run.devices) or "host (CPU) only"
    mode = run.mode + (f" (from {run.mode_source})" if run.mode_source else "")
    console.print(f"  hosts: {escape(', '.join(run.hosts))}   devices: {escape(where)}   mode: {escape(mode)}"
                  + ("   [yellow]eager execution[/yellow]" if run.eager else ""))
    st = run.steps
    if st.count:
        console.print(f"  steps: {st.count} (from {escape(st.source)}), mean {ms(st.mean_ps)} ms, "
                      f"median {ms(st.median_ps)} ms")
    else:
        console.print(f"  steps: none found ({escape(st.source)})")
    if st.note:
        console.print(f"  [dim]{escape(st.note)}[/dim]")
    if run.cut_short:
        console.print(f"  [yellow]cut short:[/yellow] {escape(run.cut_short)}")
    b = run.breakdown
    if any((b.input, b.compute, b.host_overhead, b.idle)):
        parts = "   ".join(f"{PART_LABELS[k]} {pct(getattr(b, k))}" for k in PART_LABELS)
        console.print(f"  step time: {parts}")
    if run.verdict.text:
        console.print(f"\n  [bold]Verdict ({run.verdict.bound}):[/bold] {escape(run.verdict.text)}")
    _experiment(console, run.experiment)
    _bottlenecks(console, run.bottlenecks)
    _simple(console, "Hosts (each host's own steps; the slowest sets the step time)",
            ("host", "steps", "mean ms", "input", "compute", "overhead", "idle", "coll. ms", "bound"),
            [(h.host, h.steps, ms(h.mean_ps), pct(h.breakdown.input), pct(h.breakdown.compute),
              pct(h.breakdown.host_overhead), pct(h.breakdown.idle), ms(h.collective_ps), h.bound) for h in run.per_host])
    _simple(console, "Devices (busy between their first and last op; idle gaps of 10 us or more)",
            ("device", "busy ms", "busy", "span ms", "gaps", "idle ms", "max gap ms"),
            [(_device_name(run, d), ms(d.busy_ps), pct(d.busy), ms(d.span_ps), d.gaps, ms(d.idle_ps),
              ms(d.longest_gap_ps)) for d in run.per_device])
    _ops(console, run)
    py = run.python
    _simple(console, f"Python (from {py.source}; share of all sampled Python time, {ms(py.total_ps)} ms)",
            ("function", "at", "where", "owner", "self ms", "total ms", "share"),
            [(r.function, f"{tail(r.file, 24)}:{r.line}", r.where, r.owner, ms(r.self_ps), ms(r.total_ps),
              pct(r.share)) for r in py.rows], limits={"at": 30, "where": 14, "owner": 10})
    _simple(console, f"Layers ({main_share_basis(run)})", ("layer", "self ms", "share", "params"),
            [(r.layer, ms(r.self_ps), pct(r.share), params(r.params)) for r in run.layers])
    _simple(console, f"Categories ({main_share_basis(run)})", ("category", "self ms", "share"),
            [(r.category, ms(r.self_ps), pct(r.share)) for r in run.categories])
    _simple(console, "tf.data stages (share of the pipeline's self time)", ("stage", "self ms", "share"),
            [(r.name, ms(r.self_ps), pct(r.share)) for r in run.input_pipeline.stages])
    memory_section(console, run.memory, _simple)
    for note in run.notes:
        console.print(f"  [dim]note: {escape(note)}[/dim]")


def _device_name(run, d) -> str:
    return f"{d.host} {d.device}" if len(run.hosts) > 1 else d.device


def _bottlenecks(console: Console, items) -> None:
    if not items:
        return
    console.print("\n  [bold]Bottlenecks[/bold]")
    for b in items:
        gain = projection(b)
        console.print(f"  {b.rank}. [bold]{escape(b.title)}[/bold] ({pct(b.share)} of step time"
                      + (f"; {gain})" if gain else ")"))
        console.print(f"     evidence: {escape(b.evidence)}")
        console.print(f"     fix: {escape(b.recommendation)}")


def _ops(console: Console, run) -> None:
    if not run.ops:
        console.print("\n  No ops found in this trace.")
        return
    columns = [("#", "right", 3), ("op", "left", 0), ("type", "left", 12), ("category", "left", 11),
               ("layer", "left", 12), ("where", "left", 5), ("count", "right", 6), ("self ms", "right", 7),
               ("share", "right", 6)]
    rows = [(str(i), o.name, o.type, o.category, o.layer, where(o), str(o.count), ms(o.self_ps), pct(o.share))
            for i, o in enumerate(run.ops, 1)]
    _print_table(console, f"Top ops by self time ({op_share_basis(run)}; phase and more in --format json/csv)",
                 columns, rows)


def _simple(console: Console, title: str, columns, rows, limits: dict | None = None) -> None:
    """A table whose first column takes the free width; `limits` widen others (default 10)."""
    if not rows:
        return
    limits = limits or {}
    spec = [(col, "left" if i == 0 or col in limits else "right", 0 if i == 0 else limits.get(col, 10))
            for i, col in enumerate(columns)]
    _print_table(console, title, spec, [tuple(str(c) for c in row) for row in rows])


def _print_table(console: Console, title: str, columns, rows) -> None:
    """A heading, then the table, indented. The column whose limit is 0 takes the width the
    others leave and at most two lines (long names keep their tail); every other cell keeps to
    one line. Columns empty in every row are left out."""
    keep = [i for i, (_c, _j, limit) in enumerate(columns) if limit == 0 or any(r[i] for r in rows)]
    widths = {i: min(columns[i][2], max(len(columns[i][0]), *(len(r[i]) for r in rows))) for i in keep
              if columns[i][2]}
    free = [i for i in keep if not columns[i][2]]
    rest = console.width - _INDENT - sum(widths.values()) - 2 * (len(keep) - 1)  # padding and divider
    for i in free:
        widths[i] = max(8, min(rest, max(len(columns[i][0]), *(len(r[i]) for r in rows))))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for i in keep:
        col, just, limit = columns[i]
        table.add_column(col, justify=just, width=widths[i], no_wrap=bool(limit),
                         overflow="ellipsis" if limit else "fold")
    for row in rows:
        table.add_row(*(escape(row[i] if columns[i][2] else tail(row[i], 2 * widths[i])) for i in keep))
    console.print(f"\n  [bold]{escape(title)}[/bold]")
    console.print(Padding(table, (0, 0, 0, _INDENT), expand=False))
