"""HTML diff: one self-contained page (inline CSS and SVG, nothing fetched) comparing two runs."""

from __future__ import annotations

from tftrace.model.version import VERSION
from tftrace.render.fmt import PART_LABELS, ms, pct
from tftrace.render.html_charts import PART_COLORS, esc
from tftrace.render.html_diff_charts import (FASTER, SIDE_COLORS, SLOWER, breakdown_chart, delta_chart,
                                             distribution_chart)
from tftrace.render.html_page import fragment, page
from tftrace.render.html_style import CSS
from tftrace.render.diff_memory import memory_delta_html
from tftrace.render.diff_rates import RATE_COLUMNS, rate_cells

DIFF_CSS = CSS + """
.sides { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 0 14px; }
.side-card { border-top: 4px solid; }
.side-card h3 { margin-bottom: 4px; }
.side-card p { margin: 6px 0 0; }
.gate { border-radius: 8px; padding: 12px 18px; margin: 14px 0; font-weight: 600; word-break: break-word; }
.gate.failed { background: #fce8e6; border: 1px solid #f4c7c3; color: #a50e0e; }
.gate.passed { background: #e6f4ea; border: 1px solid #b7dfc3; color: #137333; }
.delta-pos { color: #c5221f; } .delta-neg { color: #188038; }
svg.delta .value { fill: var(--muted); font-size: 11.5px; }
svg.delta .label { font-family: var(--mono); font-size: 11.5px; }
"""


def render_diff_html(diff, **_options) -> str:
    return page("tftrace diff", DIFF_CSS, _body(diff))


def render_diff_fragment(diff) -> str:
    """The diff for a Jupyter notebook (`DiffReport._repr_html_`), with scoped CSS."""
    return fragment(DIFF_CSS, _body(diff))


def _body(diff) -> str:
    sections = [_headline(diff), _gate(diff), _sides(diff), _findings(diff), _distribution(diff), _breakdown(diff),
                _experiment(diff),
                _hosts(diff), _rates(diff),
                memory_delta_html(diff.memory),
                _deltas("Owners", "owners-delta", diff.owners), _deltas("Categories", "categories-delta", diff.categories),
                _deltas("Layers", "layers-delta", diff.layers), _ops(diff), _notes(diff)]
    return ('<header class="top"><div class="wrap"><span class="brand">tftrace</span>'
            '<span class="sub">diff · baseline vs candidate</span></div></header>\n'
            '<main class="wrap">\n' + "\n".join(s for s in sections if s) + "\n</main>\n"
            f'<footer class="wrap">tftrace {esc(VERSION)} · diff schema {int(diff.schema_version)}</footer>')


def _headline(diff) -> str:
    st = diff.step_time
    if st.significant:
        label, color = ("slower", SLOWER) if st.delta_pct > 0 else ("faster", FASTER)
    else:
        label, color = "no significant change", PART_COLORS["idle"]
    facts = [("baseline median", f"{ms(st.baseline_ps)} ms", f"{st.baseline_steps} steps"),
             ("candidate median", f"{ms(st.candidate_ps)} ms", f"{st.candidate_steps} steps"),
             ("change", f"{st.delta_pct:+.1f}%", "significant" if st.significant else "not significant")]
    cells = "".join(f'<div class="fact"><dt>{esc(k)}</dt><dd>{esc(v)} <small>{esc(sub)}</small></dd></div>'
                    for k, v, sub in facts)
    return (f'<div class="verdict" data-summary style="border-left-color:{color}">'
            f'<span class="badge" style="background:{color}">{esc(label)}</span>'
            f'<p>{esc(diff.summary)}</p></div>'
            f'<dl class="facts">{cells}</dl>')


def _experiment(diff) -> str:
    """The figures an experiment timed apart (`confirm`), side by side."""
    if not diff.experiment:
        return ""
    cell = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    rows = "".join(f"<tr><td>{esc(e.figure.removesuffix('_ms').replace('_', ' '))}</td><td>{cell(e.baseline)}</td>"
                   f"<td>{cell(e.candidate)}</td></tr>" for e in diff.experiment)
    return ('<div class="card"><h3>Experiment (timed apart, ms)</h3><div class="table-box"><table data-table="experiment">'
            f"<thead><tr><th>figure</th><th>baseline</th><th>candidate</th></tr></thead><tbody>{rows}</tbody></table>"
            "</div></div>")


def _rates(diff) -> str:
    """Achieved FLOP/s on each side: the step's (with MFU), then ops', owners' and layers'."""
    if not diff.rates:
        return ""
    head = "".join(f"<th>{esc(c)}</th>" for c in RATE_COLUMNS)
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in rate_cells(r)) + "</tr>" for r in diff.rates)
    return ('<div class="card"><h3>FLOP rates (achieved; shares: MFU for the step, of the roofline for the rest)</h3>'
            f'<div class="table-box"><table data-table="rates"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
            "</table></div></div>")


def _gate(diff) -> str:
    g = diff.gate
    if g is None:
        return ""
    state = "failed" if g.failed else "passed"
    return (f'<div class="gate {state}" data-gate="{state}">Speed gate (--fail-if-slower {g.fail_if_slower_pct:g}%) '
            f'{esc(g.reason)}</div>')


def _sides(diff) -> str:
    cards = []
    for side, label, verdict in (("baseline", diff.baseline, diff.baseline_verdict),
                                 ("candidate", diff.candidate, diff.candidate_verdict)):
        cards.append(f'<div class="card side-card" style="border-top-color:{SIDE_COLORS[side]}"><h3>{side}</h3>'
                     f'<code class="path">{esc(label)}</code>'
                     + (f"<p>{esc(verdict)}</p>" if verdict else "") + "</div>")
    return '<div class="sides">' + "".join(cards) + "</div>"


def _distribution(diff) -> str:
    if not (diff.baseline_step_times or diff.candidate_step_times):
        return ""
    return ('<div class="card"><h3>Step times side by side</h3><p class="muted">each dot is one step; '
            'the line is the median the significance test compares</p>'
            f'<div class="chart-box">{distribution_chart(diff)}</div></div>')


def _breakdown(diff) -> str:
    rows = "".join(f"<tr><td>{PART_LABELS[p]}</td><td>{pct(d.baseline)}</td><td>{pct(d.candidate)}</td>"
                   f"<td>{d.delta * 100:+.1f} pt</td><td>{ms(d.baseline_ps)}</td><td>{ms(d.candidate_ps)}</td>"
                   f"{_delta_cell(d.candidate_ps - d.baseline_ps)}</tr>" for p, d in diff.breakdown.items())
    keys = "".join(f'<span class="key"><i style="background:{PART_COLORS[p]}"></i>{PART_LABELS[p]}</span>'
                   for p in PART_LABELS)
    return (f'<div class="card"><h3>Where step time goes (ms per step)</h3><div class="legend">{keys}</div>'
            f'<div class="chart-box">{breakdown_chart(diff)}</div><div class="table-box"><table data-table="breakdown">'
            "<thead><tr><th>part</th><th>baseline</th><th>candidate</th><th>delta</th><th>baseline ms</th>"
            f"<th>candidate ms</th><th>delta ms</th></tr></thead><tbody>{rows}</tbody></table></div>"
            f"{_input_wait(diff)}</div>")


def _input_wait(diff) -> str:
    w = diff.input_wait
    if w is None:
        return ""
    return (f'<p class="muted">device idle waiting for input (in host overhead): {pct(w.baseline)} -&gt; '
            f"{pct(w.candidate)} ({ms(w.baseline_ps)} ms -&gt; {ms(w.candidate_ps)} ms per step)</p>")


def _findings(diff) -> str:
    """Each finding of either run by id: resolved, new or persisting, under the diff's verdict."""
    if not diff.findings and not diff.verdict.text:
        return ""
    rows = "".join(f'<tr><td><span class="mono">{esc(f.id)}</span></td><td>{esc(f.status)}</td>'
                   f"<td>{f.baseline_rank or '-'}</td><td>{f.candidate_rank or '-'}</td><td>{esc(f.title)}</td></tr>"
                   for f in diff.findings)
    table = ('<div class="table-box"><table data-table="findings"><thead><tr><th>finding</th><th>status</th>'
             f"<th>baseline rank</th><th>candidate rank</th><th>title</th></tr></thead><tbody>{rows}</tbody></table></div>"
             if rows else "")
    return f'<div class="card"><h3>Findings</h3><p>{esc(diff.verdict.text)}</p>{table}</div>'


def _hosts(diff) -> str:
    if not diff.hosts:
        return ""
    rows = "".join(f"<tr><td><span class=\"mono\">{esc(h.host)}</span></td><td>{ms(h.baseline_ps)}</td>"
                   f"<td>{ms(h.candidate_ps)}</td><td>{h.delta_pct:+.1f}%</td><td>{esc(h.baseline_bound)}</td>"
                   f"<td>{esc(h.candidate_bound)}</td><td>{esc(h.status)}</td></tr>" for h in diff.hosts)
    return ('<div class="card"><h3>Hosts (mean step time)</h3><div class="table-box"><table data-table="hosts">'
            "<thead><tr><th>host</th><th>baseline ms</th><th>candidate ms</th><th>delta</th><th>baseline bound</th>"
            f"<th>candidate bound</th><th>status</th></tr></thead><tbody>{rows}</tbody></table></div></div>")


def _delta_cell(delta_ps: int) -> str:
    cls = "delta-pos" if delta_ps > 0 else "delta-neg" if delta_ps < 0 else ""
    return f'<td class="{cls}">{"+" if delta_ps > 0 else ""}{ms(delta_ps)}</td>'


def _row(r, with_type: bool) -> str:
    name = '<span class="mono">' + esc(r.name).replace("/", "/<wbr>") + "</span>"
    typ = f"<td>{esc(r.type)}</td>" if with_type else ""
    return (f"<tr><td>{name}</td>{typ}<td>{ms(r.baseline_ps)}</td><td>{ms(r.candidate_ps)}</td>"
            f"{_delta_cell(r.delta_ps)}<td>{esc(r.status)}</td></tr>")


def _table(kind: str, rows, with_type: bool) -> str:
    head = ["name", *(["type"] if with_type else []), "baseline ms", "candidate ms", "delta ms", "status"]
    return (f'<div class="table-box"><table data-table="{kind}"><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(_row(r, with_type) for r in rows) + "</tbody></table></div>")


def _deltas(title: str, kind: str, rows) -> str:
    if not rows:
        return f'<div class="card"><h3>{title}</h3><p class="muted">nothing moved</p></div>'
    return (f'<div class="card"><h3>{title}: change per step</h3><p class="muted">red: slower in the candidate; '
            f'green: faster</p><div class="chart-box">{delta_chart(kind, rows)}</div>'
            f"{_table(kind.split('-')[0], rows, False)}</div>")


def _ops(diff) -> str:
    if not diff.ops:
        return '<div class="card"><h3>Ops</h3><p class="muted">nothing moved</p></div>'
    return ('<div class="card"><h3>Ops: change per step</h3><div class="chart-box">'
            f'{delta_chart("ops-delta", diff.ops)}</div>{_table("ops", diff.ops, True)}</div>')


def _notes(diff) -> str:
    if not diff.notes:
        return ""
    return '<div class="notes"><h4>Notes</h4><ul>' + "".join(f"<li>{esc(n)}</li>" for n in diff.notes) + "</ul></div>"
