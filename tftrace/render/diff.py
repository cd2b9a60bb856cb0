"""Render a DiffReport as text, Markdown, JSON or HTML; formatting only."""

from __future__ import annotations

import io
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tftrace.render.diff_rates import RATE_COLUMNS, rate_cells
from tftrace.render.fmt import PART_LABELS, ms, pct
from tftrace.render.diff_memory import memory_cells, memory_table
from tftrace.render.wrap import labelled, say


def render_diff(diff, fmt: str, color: bool = False, width: int = 120) -> str:
    """The comparison in one format; text fits `width` columns (the command line passes the terminal's)."""
    if fmt == "json":
        return json.dumps(diff.to_dict(), indent=2) + "\n"
    if fmt == "markdown":
        return _markdown(diff)
    if fmt == "html":
        from tftrace.render.html_diff import render_diff_html
        return render_diff_html(diff)
    return _text(diff, color, width)


def _signed_ms(ps: int) -> str:
    return ("+" if ps > 0 else "") + ms(ps)


def _row_cells(r) -> tuple[str, ...]:
    return (r.name, r.type, ms(r.baseline_ps), ms(r.candidate_ps), _signed_ms(r.delta_ps), r.status)


def _experiment_cells(e) -> tuple[str, str, str]:
    return (e.figure.removesuffix("_ms").replace("_", " "),
            *("-" if v is None else f"{v:.2f}" for v in (e.baseline, e.candidate)))


def _text(diff, color: bool, width: int) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=color, color_system="auto" if color else None, highlight=False)
    st = diff.step_time
    labelled(con, "[bold]Baseline[/bold]  ", escape(diff.baseline))
    labelled(con, "[bold]Candidate[/bold] ", escape(diff.candidate))
    con.print()
    say(con, f"[bold]{escape(diff.summary)}[/bold]")
    con.print()
    labelled(con, "median step time: ", f"{ms(st.baseline_ps)} ms -> {ms(st.candidate_ps)} ms ({st.delta_pct:+.1f}%), "
             f"{'significant' if st.significant else 'not significant'}: {escape(st.test)}", 2)
    if diff.verdict.text:
        labelled(con, "verdict: ", escape(diff.verdict.text), 2)
    for f in diff.findings:
        labelled(con, f"  {f.status}: ", escape(f"{f.id} ({f.title})"), 2)
    table = Table(title="Step time breakdown (per step)", title_justify="left", show_edge=False)
    for col in ("part", "baseline", "candidate", "delta", "baseline ms", "candidate ms"):
        table.add_column(col, justify="left" if col == "part" else "right")
    for part, d in diff.breakdown.items():
        table.add_row(PART_LABELS[part], pct(d.baseline), pct(d.candidate), f"{d.delta * 100:+.1f} pt",
                      ms(d.baseline_ps), ms(d.candidate_ps))
    con.print()
    con.print(table)
    if diff.input_wait is not None:
        w = diff.input_wait
        con.print()
        labelled(con, "device idle waiting for input (in host overhead): ",
                 f"{pct(w.baseline)} -> {pct(w.candidate)} ({ms(w.baseline_ps)} ms -> {ms(w.candidate_ps)} ms per step)", 2)
    if diff.hosts:
        hosts = Table(title="Hosts (mean step time)", title_justify="left", show_edge=False)
        for col in ("host", "baseline ms", "candidate ms", "delta", "baseline bound", "candidate bound", "status"):
            hosts.add_column(col, justify="right" if col.endswith(("ms", "delta")) else "left")
        for h in diff.hosts:
            hosts.add_row(escape(h.host), ms(h.baseline_ps), ms(h.candidate_ps), f"{h.delta_pct:+.1f}%",
                          h.baseline_bound, h.candidate_bound, h.status)
        con.print()
        con.print(hosts)
    if diff.experiment:
        exp = Table(title="Experiment (timed apart, ms)", title_justify="left", show_edge=False)
        for col in ("figure", "baseline", "candidate"):
            exp.add_column(col, justify="left" if col == "figure" else "right")
        for e in diff.experiment:
            exp.add_row(*_experiment_cells(e))
        con.print()
        con.print(exp)
    if diff.rates:
        rates = Table(title="FLOP rates (achieved; shares: MFU for the step, of the roofline for the rest)",
                      title_justify="left", show_edge=False)
        for col in RATE_COLUMNS:
            rates.add_column(col, justify="left" if col in ("what", "phase") else "right")
        for r in diff.rates:
            rates.add_row(*(escape(c) for c in rate_cells(r)))
        con.print()
        con.print(rates)
    if diff.memory:
        con.print()
        con.print(memory_table(diff.memory))
    for title, rows, with_type in (("Owners (ms per step)", diff.owners, False),
                                   ("Categories (ms per step)", diff.categories, False),
                                   ("Layers (ms per step)", diff.layers, False), ("Ops (ms per step)", diff.ops, True)):
        _delta_table(con, title, rows, with_type)
    for note in diff.notes:
        labelled(con, "[dim]note:[/dim] ", f"[dim]{escape(note)}[/dim]", 2)
    return buf.getvalue()


def _delta_table(con: Console, title: str, rows, with_type: bool) -> None:
    if not rows:
        con.print(f"\n{title}: nothing moved")
        return
    table = Table(title=title, title_justify="left", show_edge=False)
    cols = ("name", "type", "baseline", "candidate", "delta", "status") if with_type else \
        ("name", "baseline", "candidate", "delta", "status")
    for col in cols:
        table.add_column(col, justify="left" if col in ("name", "type", "status") else "right", overflow="fold")
    for r in rows:
        cells = _row_cells(r)
        table.add_row(*(escape(c) for c in (cells if with_type else cells[:1] + cells[2:])))
    con.print()
    con.print(table)


def _markdown(diff) -> str:
    """For a pull-request comment: the gate's decision first, then the evidence."""
    from tftrace.render.markdown import _cell, _table
    st = diff.step_time
    out = ["# tftrace diff", ""]
    if diff.gate is not None:
        mark = "❌" if diff.gate.failed else "✅"
        limit = f"{diff.gate.fail_if_slower_pct:g}%"
        out += [f"{mark} **Speed gate (--fail-if-slower {limit}) {_cell(diff.gate.reason)}**", ""]
    out += [f"- baseline: {_cell(diff.baseline)}", f"- candidate: {_cell(diff.candidate)}", "",
            f"**{_cell(diff.summary)}**", "",
            f"Median step time {ms(st.baseline_ps)} ms -> {ms(st.candidate_ps)} ms ({st.delta_pct:+.1f}%), "
            f"{'significant' if st.significant else 'not significant'} ({_cell(st.test)}).", ""]
    if diff.verdict.text:
        out += [f"Verdict: {_cell(diff.verdict.text)}.", ""]
    if diff.findings:
        out += _table(["finding", "status", "baseline rank", "candidate rank", "title"],
                      [(f.id, f.status, f.baseline_rank or "-", f.candidate_rank or "-", f.title) for f in diff.findings])
    out += [f"- {side} verdict: {_cell(text)}" for side, text in
            (("baseline", diff.baseline_verdict), ("candidate", diff.candidate_verdict)) if text]
    out += [""] if diff.baseline_verdict or diff.candidate_verdict else []
    for side, times in (("baseline", diff.baseline_step_times), ("candidate", diff.candidate_step_times)):
        if times:
            out.append(f"- {side} step times (ms): {', '.join(ms(s.dur_ps) for s in times)}")
    out += [""] if diff.baseline_step_times or diff.candidate_step_times else []
    out += ["## Step time breakdown (per step)", ""]
    out += _table(["part", "baseline", "candidate", "delta", "baseline ms", "candidate ms"],
                  [(PART_LABELS[p], pct(d.baseline), pct(d.candidate), f"{d.delta * 100:+.1f} pt",
                    ms(d.baseline_ps), ms(d.candidate_ps)) for p, d in diff.breakdown.items()])
    if diff.input_wait is not None:
        w = diff.input_wait
        out += [f"Device idle waiting for input (in host overhead): {pct(w.baseline)} -> {pct(w.candidate)} "
                f"({ms(w.baseline_ps)} ms -> {ms(w.candidate_ps)} ms per step).", ""]
    if diff.hosts:
        out += ["## Hosts (mean step time)", ""]
        out += _table(["host", "baseline ms", "candidate ms", "delta", "baseline bound", "candidate bound", "status"],
                      [(h.host, ms(h.baseline_ps), ms(h.candidate_ps), f"{h.delta_pct:+.1f}%", h.baseline_bound,
                        h.candidate_bound, h.status) for h in diff.hosts])
    if diff.experiment:
        out += ["## Experiment (timed apart, ms)", ""]
        out += _table(["figure", "baseline", "candidate"], [_experiment_cells(e) for e in diff.experiment])
    if diff.rates:
        out += ["## FLOP rates (achieved; shares: MFU for the step, of the roofline for the rest)", ""]
        out += _table(list(RATE_COLUMNS), [rate_cells(r) for r in diff.rates])
    if diff.memory:
        out += ["## Memory (peak bytes in use per allocator)", ""]
        out += _table(*memory_cells(diff.memory))
    for title, rows in (("Owners", diff.owners), ("Categories", diff.categories), ("Layers", diff.layers),
                        ("Ops", diff.ops)):
        out += [f"## {title} (ms per step)", ""]
        out += _table(["name", "type", "baseline", "candidate", "delta", "status"], [_row_cells(r) for r in rows]) \
            if rows else ["Nothing moved.", ""]
    out += [f"- note: {_cell(n)}" for n in diff.notes]
    return "\n".join(out).rstrip() + "\n"
