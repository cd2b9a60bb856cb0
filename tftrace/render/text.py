"""Terminal text: verdict, breakdown and bottlenecks first, then ranked tables (rich), at any width."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from tftrace.render.fmt import (OWNER_COLUMNS, OWNERS_TITLE, PART_LABELS, projection_how, less_profiler, owner_cells, experiment_head, experiment_skipped, main_share_basis, ms, op_share_basis,
                                params, pct, projection, tail, where, work_line)
from tftrace.render.text_memory import memory_section
from tftrace.render.wrap import breaks, labelled, say

WIDTH = 100  # the default; the command line passes the terminal's width
_INDENT = 2
_ROOMY = 100  # from this width on, table columns keep a blank column of padding each side of their divider


def render_text(report, color: bool = False, width: int = WIDTH, **_options) -> str:
    """Every line fits `width` columns: long lines wrap under their label, table cells are cut."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system="auto" if color else None,
                      highlight=False, emoji=False)
    for i, run in enumerate(report.runs):
        if i:
            console.print()
        _run(console, run)
    if color:
        return buf.getvalue()
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())  # rich pads table cells


def _experiment(console: Console, exp) -> None:
    if exp is None:
        return
    say(console, f"[bold]{escape(experiment_head(exp))}:[/bold]", _INDENT)  # a long head: the figures go below
    say(console, escape(exp.statement), _INDENT + 2)
    for line in experiment_skipped(exp):
        say(console, f"[dim]{escape(line)}[/dim]", _INDENT + 2)


def _run(console: Console, run) -> None:
    labelled(console, "[bold]Run[/bold] ", f"[bold]{escape(run.name)}[/bold]  ({escape(run.path)})")
    if run.error:
        labelled(console, "[red]could not be read:[/red] ", escape(run.error), _INDENT)
        return
    where = ", ".join(run.devices) or "host (CPU) only"
    mode = run.mode + (f" (from {run.mode_source})" if run.mode_source else "")
    framework = f"   framework: {_FRAMEWORKS.get(run.framework, run.framework)}" if run.framework else ""
    labelled(console, "hosts: ", f"{escape(', '.join(run.hosts))}   devices: {escape(where)}{escape(framework)}   "
             f"mode: {escape(mode)}"
             + ("   [yellow]eager execution[/yellow]" if run.eager else ""), _INDENT)
    st = run.steps
    if st.count:
        labelled(console, "steps: ", f"{st.count} (from {escape(st.source)}), mean {ms(st.mean_ps)} ms, "
                 f"median {ms(st.median_ps)} ms{escape(less_profiler(st))}", _INDENT)
    else:
        labelled(console, "steps: ", f"none found ({escape(st.source)})", _INDENT)
    if st.note:
        say(console, f"[dim]{escape(st.note)}[/dim]", _INDENT)
    if run.cut_short:
        labelled(console, "[yellow]cut short:[/yellow] ", escape(run.cut_short), _INDENT)
    b = run.breakdown
    if any((b.input, b.compute, b.host_overhead, b.idle)):
        parts = "   ".join(f"{PART_LABELS[k]} {pct(getattr(b, k))}" for k in PART_LABELS)
        labelled(console, "step time: ", parts, _INDENT)
    work = work_line(run)
    if work:
        labelled(console, "work: ", escape(work), _INDENT)
    if run.verdict.text:
        console.print()
        labelled(console, f"[bold]Verdict ({run.verdict.bound}):[/bold] ", escape(run.verdict.text), _INDENT)
    _experiment(console, run.experiment)
    _bottlenecks(console, run.bottlenecks)
    _simple(console, OWNERS_TITLE, OWNER_COLUMNS, [owner_cells(r) for r in run.owners],
            limits={"phase": 8, "part": 13, "what": 22})
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
        labelled(console, "[dim]note:[/dim] ", f"[dim]{escape(note)}[/dim]", _INDENT)


def _device_name(run, d) -> str:
    return f"{d.host} {d.device}" if len(run.hosts) > 1 else d.device


def _bottlenecks(console: Console, items) -> None:
    if not items:
        return
    console.print()
    say(console, "[bold]Bottlenecks[/bold]", _INDENT)
    for b in items:
        gain = projection(b)
        head = f"{b.rank}. "
        labelled(console, head, f"[bold]{escape(b.title)}[/bold] ({pct(b.share)} of step time"
                 + (f"; {gain})" if gain else ")"), _INDENT)
        inner = _INDENT + len(head)  # evidence and fix sit under the title
        labelled(console, "evidence: ", escape(b.evidence), inner)
        labelled(console, "fix: ", escape(b.recommendation), inner)
        if projection_how(b):
            labelled(console, "projection: ", escape(projection_how(b)), inner)


def _ops(console: Console, run) -> None:
    if not run.ops:
        console.print()
        say(console, "No ops found in this trace.", _INDENT)
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


_FRAMEWORKS = {"pytorch": "PyTorch"}


def _two_lines(name: str, width: int) -> str:
    """A name's tail that wraps into two lines of `width`: a kernel's signature breaks at its
    spaces, so twice the width of it may take three."""
    out = tail(name, 2 * width)
    while len(out) > width and len(breaks(out, width, width)) > 2:
        out = "…" + out[2:]
    return out


def _print_table(console: Console, title: str, columns, rows) -> None:
    """A heading, then the table, indented, within the console's width. The column whose limit is
    0 takes the width the others leave and at most two lines (long names keep their tail); every
    other cell keeps to one line, text cut short with an ellipsis where the width is tight, numbers
    whole. Columns empty in every row are left out."""
    keep = [i for i, (_c, _j, limit) in enumerate(columns) if limit == 0 or any(r[i] for r in rows)]
    natural = {i: max(len(columns[i][0]), *(len(r[i]) for r in rows)) for i in keep}
    widths = {i: min(columns[i][2], natural[i]) for i in keep if columns[i][2]}
    free = [i for i in keep if not columns[i][2]]
    gap = 2 if console.width >= _ROOMY else 1  # narrower: no padding beside the dividers
    room = console.width - _INDENT - gap * (len(keep) - 1)
    fair = sum(min(natural[i], max(12, room // 4)) for i in free)  # what the name column may claim
    _shrink(widths, [i for i in widths if columns[i][1] == "left"], room - fair)
    rest = room - sum(widths.values())
    for i in free:
        widths[i] = max(8, min(rest, natural[i]))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True,
                  padding=(0, 1) if gap == 2 else 0)
    for i in keep:
        col, just, limit = columns[i]
        table.add_column(col, justify=just, width=widths[i], no_wrap=bool(limit),
                         overflow="ellipsis" if limit else "fold")
    for row in rows:
        table.add_row(*(escape(row[i] if columns[i][2] else _two_lines(row[i], widths[i])) for i in keep))
    console.print()
    say(console, f"[bold]{escape(title)}[/bold]", _INDENT)
    console.print(Padding(table, (0, 0, 0, _INDENT), expand=False))


def _shrink(widths: dict[int, int], text_columns: list[int], budget: int, narrowest: int = 5) -> None:
    """Narrow the widest text columns, one column at a time, until all columns fit `budget`."""
    while sum(widths.values()) > budget:
        wide = [i for i in text_columns if widths[i] > narrowest]
        if not wide:
            return
        widest = max(wide, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
