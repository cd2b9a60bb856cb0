"""HTML: one self-contained page per report (inline CSS and SVG, nothing fetched), for sharing."""

from __future__ import annotations

from tftrace.render.html_flame import flame_chart
from tftrace.render.fmt import (OWNER_COLUMNS, OWNERS_TITLE, PART_LABELS, projection_how, owner_cells, experiment_head, experiment_skipped, main_share_basis, ms, op_share_basis,
                                params, pct, projection, where)
from tftrace.render.html_memory import memory_html
from tftrace.render.html_charts import (LAYER_COLOR, PART_COLORS, category_color, esc,
                                        hbar_chart, step_chart)
from tftrace.render.html_page import fragment, page
from tftrace.render.html_roofline import roofline_card, work_facts
from tftrace.render.html_timeline import IDLE_COLOR, WAIT_COLOR, event_color, timeline_chart
from tftrace.render.html_style import CSS


def render_html(report, **_options) -> str:
    return page("tftrace report", CSS, _body(report))


def render_html_fragment(report) -> str:
    """The report for a Jupyter notebook (`Report._repr_html_`): the same content, scoped CSS."""
    return fragment(CSS, _body(report))


def _body(report) -> str:
    runs = report.runs
    nav = ""
    if len(runs) > 1:
        links = "".join(f'<a href="#run-{i}">{esc(r.name)}</a>' for i, r in enumerate(runs, 1))
        nav = f'<nav class="runs">{links}</nav>'
    body = "\n".join(_run(run, i) for i, run in enumerate(runs, 1))
    version = esc(report.tftrace_version or "")
    return f"""<header class="top"><div class="wrap"><span class="brand">tftrace</span>
<span class="sub">TensorFlow profiler report · {len(runs)} run{'s' if len(runs) != 1 else ''}</span></div></header>
<main class="wrap">
{nav}
{body}
</main>
<footer class="wrap">tftrace {version} · report schema {int(report.schema_version)}</footer>"""


def _run(run, index: int) -> str:
    parts = [f'<section class="run" id="run-{index}">', _header(run)]
    if run.error:
        parts.append(f'<div class="error"><strong>This run could not be read.</strong> {esc(run.error)}</div>')
    else:
        parts += [_verdict(run), _bottlenecks(run.bottlenecks), _charts(run), roofline_card(run, _table), _python(run),
                  _tables(run),
                  memory_html(run.memory, run.steps.steps, _table, _rich), _notes(run)]
    return "\n".join(p for p in parts if p) + "\n</section>"


def _header(run) -> str:
    head = (f'<div class="run-head"><h2>Run <span class="name">{esc(run.name)}</span></h2>'
            f'<code class="path">{esc(run.path)}</code></div>')
    if run.error:  # nothing was measured: facts would only show defaults
        return head
    st = run.steps
    facts = [("hosts", ", ".join(run.hosts) or "unknown"), ("devices", ", ".join(run.devices) or "host (CPU) only"),
             ("mode", run.mode + (" · eager" if run.eager else ""), *([f"from {run.mode_source}"] if run.mode_source else []))]
    if st.count:
        facts += [("steps", str(st.count), f"from {st.source}"), ("mean step", f"{ms(st.mean_ps)} ms"),
                  ("median step", f"{ms(st.median_ps)} ms")]
        if st.profiler_ps:
            facts += [("less the profiler", f"~{ms(st.median_less_profiler_ps)} ms",
                       f"median; its own {ms(st.profiler_ps)} ms a step left out")]
        if st.untraced_ps:
            facts += [("untraced", f"{ms(st.untraced_ps)} ms", f"a step, gap included: the {st.untraced_steps} after the window")]
    else:
        facts.append(("steps", f"none found ({st.source})"))
    facts += work_facts(run)
    cells = "".join(f'<div class="fact"><dt>{esc(k)}</dt><dd>{esc(v)}'
                    + (f' <small>{esc(sub[0])}</small>' if sub else "") + "</dd></div>" for k, v, *sub in facts)
    note = f'<p class="muted">{esc(st.note)}</p>' if st.note else ""
    if run.cut_short:
        note += f'<p class="cut-short"><strong>Cut short:</strong> {esc(run.cut_short)}</p>'

    return f'{head}<dl class="facts">{cells}</dl>{note}'


def _verdict(run) -> str:
    v = run.verdict
    if not v.text:
        return ""
    color = PART_COLORS.get(v.bound, "#8a8f98")
    label = PART_LABELS.get(v.bound, v.bound)
    return (f'<div class="verdict" style="border-left-color:{color}">'
            f'<span class="badge" style="background:{color}">{esc(label)}-bound</span>'
            f'<p>{_rich(v.text)}</p>{_experiment(run.experiment)}{_breakdown(run.breakdown)}</div>')


def _experiment(exp) -> str:
    """The experiment's figures under the verdict they test."""
    if exp is None:
        return ""
    state = {True: "confirmed", False: "contradicted"}.get(exp.confirmed, "untested")
    skipped = "".join(f"<li>{esc(line)}</li>" for line in experiment_skipped(exp))
    return (f'<div class="experiment" data-experiment="{state}"><strong>{esc(experiment_head(exp))}</strong>: '
            f'{esc(exp.statement)}' + (f"<ul>{skipped}</ul>" if skipped else "") + "</div>")


def _breakdown(b) -> str:
    """The run's step-time shares as one 100% strip with a legend, in the part colors."""
    if not any(getattr(b, part) for part in PART_LABELS):
        return ""
    segs = "".join(f'<span class="seg" style="width:{getattr(b, p) * 100:.2f}%;background:{PART_COLORS[p]}" '
                   f'title="{PART_LABELS[p]} {pct(getattr(b, p))}"></span>' for p in PART_LABELS)
    return f'<div class="strip" data-breakdown>{segs}</div>{_legend(b)}'


def _legend(b=None) -> str:
    items = "".join(f'<span class="key"><i style="background:{PART_COLORS[p]}"></i>{PART_LABELS[p]}'
                    + (f' <b>{pct(getattr(b, p))}</b>' if b is not None else "") + "</span>"
                    for p in PART_LABELS)
    return f'<div class="legend">{items}</div>'


def _bottlenecks(items) -> str:
    if not items:
        return ""
    cards = []
    for x in items:
        color = PART_COLORS.get(x.kind, PART_COLORS["compute"])
        cards.append(
            f'<li class="bottleneck"><div class="rank" style="background:{color}">{int(x.rank)}</div>'
            f'<div class="body"><div class="title-row"><h4>{esc(x.title)}</h4>'
            f'<span class="share">{pct(x.share)} <small>of step time</small>'
            + (f'<small class="gain">{esc(projection(x))}</small>' if projection(x) else "") + '</span></div>'
            f'<div class="meter"><span style="width:{min(x.share, 1) * 100:.2f}%;background:{color}"></span></div>'
            f'<p><span class="tag">evidence</span><span>{_rich(x.evidence)}</span></p>'
            f'<p><span class="tag fix">fix</span><span>{_rich(x.recommendation)}</span></p>'
            + (f'<p><span class="tag">projection</span><span>{esc(projection_how(x))}</span></p>'
               if projection_how(x) else "") + '</div></li>')
    return '<h3>Bottlenecks</h3><ol class="bottlenecks">' + "".join(cards) + "</ol>"


def _charts(run) -> str:
    out = []
    if run.steps.steps:
        out.append('<div class="card"><h3>Step time per step</h3>' + _legend()
                   + f'<div class="chart-box">{step_chart(run.steps.steps)}</div></div>')
    if run.step_view.lanes:
        out.append(_timeline(run.step_view))
    if run.ops:
        rows = [(o.name, o.self_ps, o.share, category_color(o.category), _op_title(o)) for o in run.ops]
        out.append(f'<div class="card"><h3>Top ops by self time</h3><p class="muted">{esc(op_share_basis(run))}</p>'
                   + _category_keys(run)
                   + f'<div class="chart-box">{hbar_chart("ops", rows, 1080, 440, numbered=True)}</div></div>')
    pair = []
    if run.layers:
        rows = [(r.layer, r.self_ps, r.share, LAYER_COLOR, r.layer) for r in run.layers]
        pair.append(f'<div class="card"><h3>Layers by self time</h3><p class="muted">{esc(main_share_basis(run))}</p>'
                    f'<div class="chart-box">{hbar_chart("layers", rows, 520, 170)}</div></div>')
    if run.categories:
        rows = [(r.category, r.self_ps, r.share, category_color(r.category), r.category) for r in run.categories]
        pair.append(f'<div class="card"><h3>Op categories by self time</h3>'
                    f'<p class="muted">{esc(main_share_basis(run))}</p>'
                    f'<div class="chart-box">{hbar_chart("categories", rows, 520, 170)}</div></div>')
    if pair:
        out.append('<div class="pair">' + "".join(pair) + "</div>")
    return "\n".join(out)


def _timeline(view) -> str:
    """The median step up close: what each thread and stream did, and when."""
    seen = dict.fromkeys(view.categories[e.name_id] for lane in view.lanes for e in lane.events)
    keys = "".join(f'<span class="key"><i style="background:{event_color(c)}"></i>{esc(c)}</span>' for c in seen)
    keys += (f'<span class="key"><i style="background:{WAIT_COLOR}"></i>input wait</span>'
             f'<span class="key"><i style="background:{IDLE_COLOR}"></i>idle</span>')
    return (f'<div class="card"><h3>One step up close: step {int(view.number)} ({ms(view.dur_ps)} ms)</h3>'
            f'<p class="muted">{esc(view.note)}. A lane per thread or stream that did work, a row per nesting '
            f'level; hover a box for its name and time.</p><div class="legend small">{keys}</div>'
            f'<div class="chart-box">{timeline_chart(view)}</div></div>')


def _op_title(o) -> str:
    return f"{o.name} ({o.type}, {o.category}" + (f", layer {o.layer})" if o.layer else ")")


def _category_keys(run) -> str:
    """Which color is which category, for the categories that appear among the ops shown."""
    seen = dict.fromkeys(o.category for o in run.ops)
    items = "".join(f'<span class="key"><i style="background:{category_color(c)}"></i>{esc(c)}</span>'
                    for c in seen)
    return f'<div class="legend small">{items}</div>'


def _python(run) -> str:
    """The Python profile: an icicle per thread kind (your code in red) and the hottest functions."""
    py = run.python
    if not py.rows:
        return ""
    charts = "".join(f'<h4>{esc(t)} thread{"s" if t != "main" else ""}</h4><div class="chart-box">{flame_chart(py.flame, t)}'
                     "</div>" for t in ("main", "input pipeline", "other") if any(n.thread == t for n in py.flame))
    table = _table("python", f"Python functions (from {py.source}; share of all sampled Python time, "
                             f"{ms(py.total_ps)} ms)",
                   ["function", "file:line", "thread", "where", "owner", "self ms", "total ms", "share"],
                   [(_mono(r.function), _mono(f"{r.file}:{r.line}"), esc(r.thread), esc(r.where), esc(r.owner),
                     ms(r.self_ps), ms(r.total_ps), _share(r.share)) for r in py.rows])
    return (f'<div class="card"><h3>Where the Python time goes</h3><p class="muted">{esc(py.source)}; '
            f'your code in red, libraries in blue; hover a box for its time</p>{charts}</div>' + table)


def _tables(run) -> str:
    out, small = [], []
    if run.owners:
        out.append(_table("owners", OWNERS_TITLE, list(OWNER_COLUMNS),
                          [tuple(_mono(c) if i == 0 else esc(c) for i, c in enumerate(owner_cells(r)))
                           for r in run.owners]))
    if run.per_host:
        out.append(_table("hosts", "Hosts: each host's own steps (the slowest sets the step time)",
                          ["host", "steps", "mean ms", "input", "compute", "host overhead", "idle", "collectives ms",
                           "bound"],
                          [(_mono(h.host), esc(h.steps), ms(h.mean_ps), pct(h.breakdown.input),
                            pct(h.breakdown.compute), pct(h.breakdown.host_overhead), pct(h.breakdown.idle),
                            ms(h.collective_ps), esc(h.bound)) for h in run.per_host]))
    if run.per_device:
        out.append(_table("devices", "Devices: busy between their first and last op, idle gaps of 10 us or more",
                          ["host", "device", "busy ms", "busy", "span ms", "gaps", "idle ms", "longest gap ms"],
                          [(_mono(d.host), _mono(d.device), ms(d.busy_ps), _share(d.busy), ms(d.span_ps),
                            esc(d.gaps), ms(d.idle_ps), ms(d.longest_gap_ps)) for d in run.per_device]))
    if run.ops:
        out.append(_table("ops", "Ops in detail",
                          ["#", "op", "type", "category", "layer", "phase", "where", "count", "self ms", "share"],
                          [(i, _mono(o.name), esc(o.type), esc(o.category), _mono(o.layer), esc(o.phase),
                            esc(where(o)), esc(o.count), ms(o.self_ps),
                            _share(o.share)) for i, o in enumerate(run.ops, 1)]))
    if run.layers:
        small.append(_table("layers", "Layers", ["layer", "self ms", "share", "params"],
                          [(_mono(r.layer), ms(r.self_ps), _share(r.share), params(r.params)) for r in run.layers]))
    if run.categories:
        small.append(_table("categories", "Op categories", ["category", "self ms", "share"],
                          [(esc(r.category), ms(r.self_ps), _share(r.share)) for r in run.categories]))
    if run.input_pipeline.stages:
        small.append(_table("stages", "tf.data stages", ["stage", "self ms", "share"],
                          [(_mono(r.name), ms(r.self_ps), _share(r.share)) for r in run.input_pipeline.stages]))
    if small:
        out.append('<div class="pair">' + "".join(small) + "</div>")
    return "\n".join(out)


def _table(kind: str, title: str, header, rows) -> str:
    """Cells arrive as safe HTML: trace strings were escaped by the caller, numbers are ours."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<div class="card"><h3>{esc(title)}</h3><div class="table-box"><table data-table="{kind}">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></div>")


def _mono(text) -> str:
    """A name in monospace that may wrap after a scope separator (escaping adds no '/' or ':')."""
    if not text:
        return '<span class="muted">–</span>'
    return '<span class="mono">' + esc(text).replace("/", "/<wbr>").replace("::", "::<wbr>") + "</span>"


def _share(fraction: float) -> str:
    return (f'<span class="cell-share"><span class="mini"><span style="width:{min(fraction, 1) * 100:.1f}%">'
            f'</span></span><span class="pct">{pct(fraction)}</span></span>')


def _notes(run) -> str:
    if not run.notes:
        return ""
    return '<div class="notes"><h4>Notes</h4><ul>' + "".join(f"<li>{esc(n)}</li>" for n in run.notes) + "</ul></div>"


def _rich(text: str) -> str:
    """Escaped text with `backticked` spans as code, as the analyses write recommendations."""
    pieces = esc(text).split("`")
    if len(pieces) % 2 == 0:  # an unpaired backtick: show the text as written
        return esc(text)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))
