"""Markdown: the report for a pull request, a bug report, or TensorBoard's text plugin."""

from __future__ import annotations

from tftrace.render.fmt import (work_line, OWNER_COLUMNS, OWNERS_TITLE, PART_LABELS, projection_how, less_profiler, experiment_head, experiment_skipped,
                                main_share_basis, ms, op_share_basis, owner_cells,
                                params, pct, projection, where)
from tftrace.render.markdown_memory import memory_lines


def _cell(text) -> str:
    """Trace strings are user text: keep them from breaking the table or injecting markup."""
    return (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
            .replace(">", "&gt;").replace("\n", " ").replace("`", "\\`").replace("*", "\\*")
            .replace("_", "\\_"))


def render_markdown(report, **_options) -> str:
    out = ["# tftrace report", ""]
    for run in report.runs:
        out += _run(run)
    return "\n".join(out).rstrip() + "\n"


def _table(header, rows) -> list[str]:
    if not rows:
        return []
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _run(run) -> list[str]:
    out = [f"## Run {_cell(run.name)}", ""]
    if run.error:
        return out + [f"Could not be read: {_cell(run.error)}", ""]
    st = run.steps
    out.append(f"- hosts: {_cell(', '.join(run.hosts))}; devices: {_cell(', '.join(run.devices) or 'host only')}; "
               f"{f'framework: {_cell(run.framework)}; ' if run.framework else ''}"
               f"mode: {run.mode}{f' (from {_cell(run.mode_source)})' if run.mode_source else ''}"
               f"{'; eager execution' if run.eager else ''}")
    if st.count:
        out.append(f"- steps: {st.count} (from {_cell(st.source)}), mean {ms(st.mean_ps)} ms, median {ms(st.median_ps)} ms"
                   f"{_cell(less_profiler(st))}")
    else:
        out.append(f"- steps: none found ({_cell(st.source)})")
    if st.note:
        out.append(f"- {_cell(st.note)}")
    if run.cut_short:
        out.append(f"- **cut short:** {_cell(run.cut_short)}")
    if work_line(run):
        out.append(f"- work: {_cell(work_line(run))}")
    out.append("")
    if run.verdict.text:
        out += [f"**Verdict ({run.verdict.bound}-bound):** {_cell(run.verdict.text)}", ""]
    if run.experiment is not None:
        exp = run.experiment
        out += [f"**{_cell(experiment_head(exp))}:** {_cell(exp.statement)}", ""]
        out += [f"- {_cell(line)}" for line in experiment_skipped(exp)] + ([""] if exp.skipped else [])
    b = run.breakdown
    if any((b.input, b.compute, b.host_overhead, b.idle)):
        out += _table(["part", "share of step time"], [(PART_LABELS[k], pct(getattr(b, k))) for k in PART_LABELS])
    if run.bottlenecks:
        out += ["### Bottlenecks", ""]
        for x in run.bottlenecks:
            gain = projection(x)
            out += [f"{x.rank}. **{_cell(x.title)}** ({pct(x.share)} of step time{'; ' + gain if gain else ''})  ",
                    f"   Evidence: {_cell(x.evidence)}  ", f"   Fix: {_cell(x.recommendation)}"
                    + ("  " if projection_how(x) else "")]
            if projection_how(x):
                out.append(f"   Projection: {_cell(projection_how(x))}")
        out.append("")
    if run.owners:
        out += ["### Owners", "", OWNERS_TITLE + ".", ""]
        out += _table(list(OWNER_COLUMNS), [owner_cells(r) for r in run.owners])
    if run.per_host:
        out += ["### Hosts", "", "Each host's own steps; the slowest sets every host's step time.", ""]
        out += _table(["host", "steps", "mean ms", "input", "compute", "host overhead", "idle", "collectives ms",
                       "bound"],
                      [(h.host, h.steps, ms(h.mean_ps), pct(h.breakdown.input), pct(h.breakdown.compute),
                        pct(h.breakdown.host_overhead), pct(h.breakdown.idle), ms(h.collective_ps), h.bound)
                       for h in run.per_host])
    if run.per_device:
        out += ["### Devices", "", "Busy between their first and last op; idle gaps of 10 us or more.", ""]
        out += _table(["host", "device", "busy ms", "busy", "span ms", "gaps", "idle ms", "longest gap ms"],
                      [(d.host, d.device, ms(d.busy_ps), pct(d.busy), ms(d.span_ps), d.gaps, ms(d.idle_ps),
                        ms(d.longest_gap_ps)) for d in run.per_device])
    if run.ops:
        out += ["### Top ops by self time", "", f"Share: {op_share_basis(run)}.", ""]
        out += _table(["#", "op", "type", "category", "layer", "phase", "where", "count", "self ms", "share"],
                      [(i, o.name, o.type, o.category, o.layer, o.phase, where(o),
                        o.count, ms(o.self_ps), pct(o.share)) for i, o in enumerate(run.ops, 1)])
    if run.python.rows:
        py = run.python
        out += ["### Python", "", f"From {py.source}; share of all sampled Python time ({ms(py.total_ps)} ms).", ""]
        out += _table(["function", "file:line", "thread", "where", "owner", "self ms", "total ms", "share"],
                      [(r.function, f"{r.file}:{r.line}", r.thread, r.where, r.owner, ms(r.self_ps), ms(r.total_ps),
                        pct(r.share)) for r in py.rows])
    if run.layers:
        out += ["### Layers", "", f"Share: {main_share_basis(run)}.", ""]
        out += _table(["layer", "self ms", "share", "params"],
                      [(r.layer, ms(r.self_ps), pct(r.share), params(r.params)) for r in run.layers])
    if run.categories:
        out += ["### Categories", "", f"Share: {main_share_basis(run)}.", ""]
        out += _table(["category", "self ms", "share"], [(r.category, ms(r.self_ps), pct(r.share)) for r in run.categories])
    if run.input_pipeline.stages:
        out += ["### tf.data stages", ""] + _table(["stage", "self ms", "share"],
                                                   [(r.name, ms(r.self_ps), pct(r.share)) for r in run.input_pipeline.stages])
    out += memory_lines(run.memory, _table, _cell)
    out += [f"- note: {_cell(n)}" for n in run.notes]
    return out + [""]
