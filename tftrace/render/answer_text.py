"""Render the answers to an agent's questions (findings, explain, whatif) and errors as JSON or as
short plain text; formatting only."""

from __future__ import annotations

import json
import textwrap

from tftrace.render.fmt import PART_LABELS, ms, pct


def render_answer(answer, fmt: str, width: int = 100) -> str:
    if fmt == "json":
        return json.dumps(answer.to_dict(), indent=2) + "\n"
    kind = type(answer).__name__
    lines = {"Findings": _findings, "Explanation": _explanation, "WhatIf": _whatif, "Spilled": _spilled}[kind](answer)
    return "\n".join(_wrap(line, width) for line in lines) + "\n"


def _wrap(line: str, width: int) -> str:
    indent = len(line) - len(line.lstrip(" "))
    return textwrap.fill(line, width, subsequent_indent=" " * (indent + 2), break_long_words=False,
                         break_on_hyphens=False) if len(line) > width else line


def _step(ps: int) -> str:
    return f"{ms(ps)} ms"


def _projection(f) -> str:
    basis = f" [{f.projection_basis}]" if f.projection_basis else ""
    measured = f", measured {_step(f.measured_step_ps)}" if f.measured_step_ps is not None else ""
    later = " (once finding 1 is fixed)" if f.after_first else ""
    return f"{_step(f.step_ps)} -> ~{_step(f.step_if_removed_ps)} per step{basis}{measured}{later}"


def _findings(answer) -> list[str]:
    out = []
    for run in answer.runs:
        out.append(f"{run.name} ({run.path})")
        if run.error:
            out += [f"  error: {run.error}", ""]
            continue
        out.append(f"  {run.mode}, {PART_LABELS.get(run.bound, run.bound)}-bound, {_step(run.step_ps)} a step: {run.verdict}")
        if not run.findings:
            out.append("  no findings")
        for f in run.findings:
            out.append(f"  {f.rank}. {f.id}  {pct(f.share)}  {_projection(f)}")
            out.append(f"     {f.title}")
            out.append(f"     fix: {f.recommendation}")
        out.append("")
    return out


def _explanation(e) -> list[str]:
    f = e.finding
    out = [f"{f.id} in {e.run}: {f.title}",
           f"  {pct(f.share)} of step time, {PART_LABELS.get(f.part, f.part) or 'across parts'}; "
           f"{_step(f.step_ps)} -> ~{_step(f.step_if_removed_ps)} per step",
           f"  evidence: {f.evidence}", f"  fix: {f.recommendation}"]
    if f.projection_basis or f.projection_how:
        out.append(f"  projection: {f.projection_basis} {f.projection_how}".rstrip())
    out.append("")
    out.append(f"Owners ({e.chosen[0].split(': ', 1)[1]}):")
    out += [f"  {o.label}: {_step(o.per_step_ps)} per step, {pct(o.share)}, {PART_LABELS.get(o.part, o.part)}"
            + (f"; {o.what}" if o.what else "") for o in e.owners] or ["  none"]
    out.append(f"Ops ({e.chosen[1].split(': ', 1)[1]}):")
    out += [f"  {o.name} ({o.type}, {o.category}{', ' + o.layer if o.layer else ''}): {o.count} runs, "
            f"{_step(o.self_ps)} self" for o in e.ops] or ["  none"]
    out.append(f"Steps ({e.chosen[2].split(': ', 1)[1]}):")
    out += [f"  step {s.number}: {_step(s.dur_ps)} (input {ms(s.input_ps)}, compute {ms(s.compute_ps)}, "
            f"host overhead {ms(s.host_overhead_ps)}, idle {ms(s.idle_ps)})" for s in e.steps] or ["  none"]
    t = e.timeline
    out.append(f"Timeline (step {t.number}, {_step(t.dur_ps)}; {e.chosen[3].split(': ', 1)[1]}):")
    for lane in t.lanes:
        out.append(f"  {lane.name}:")
        out += [f"    +{ms(ev.start_ps)} ms  {ms(ev.dur_ps)} ms  {t.names[ev.name_id]}"
                + (f" (x{ev.count})" if ev.count > 1 else "") for ev in lane.events]
    if not t.lanes:
        out.append("  none")
    left = e.left_out
    if any((left.ops, left.owners, left.steps, left.events)):
        out.append(f"Left out: {left.ops} ops, {left.owners} owners, {left.steps} steps, {left.events} events "
                   "(--format json has the same caps)")
    return out


def _whatif(w) -> list[str]:
    out = [f"{w.run}: {_step(w.step_ps)} -> ~{_step(w.step_after_ps)} per step with "
           f"{len(w.fixes)} fix(es) ({w.speedup:g}x)", "Fixes:"]
    for f in w.fixes:
        basis = f.basis or "basis not stated"
        out.append(f"  {f.id} [{basis}]: saves {ms(f.alone_ps)} ms alone, counts {ms(f.counted_ps)} ms"
                   + (f"; {f.note}" if f.note else ""))
    out.append("Parts (ms per step: held, asked, saved):")
    out += [f"  {PART_LABELS.get(p.part, p.part)}: {ms(p.part_ps)}, {ms(p.asked_ps)}, {ms(p.saved_ps)}" for p in w.parts]
    if w.unknown:
        out.append(f"Unknown (basis none, counted as saving nothing): {', '.join(w.unknown)}")
    out.append("Rests on:")
    out += [f"  {r}" for r in w.rests_on]
    out.append(f"Rule: {w.rule}")
    return out


def _spilled(s) -> list[str]:
    return [f"output ({s.file.bytes} bytes, over the {s.file.limit}-byte limit) written to {s.file.path}"]
