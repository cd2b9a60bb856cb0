"""Compare two runs: step time with a significance test, breakdown deltas, and per-step
deltas of categories, layers and ops matched across model prefixes and `_N` suffixes."""

from __future__ import annotations

import re

from tftrace.analysis.classify import LOSS_SCOPES, METRIC_SCOPES, OPTIMIZER_SCOPES, UNIQUE_SUFFIX
from tftrace.analysis.compare.finding_status import finding_deltas, verdict
from tftrace.analysis.compare.gate import speed_gate
from tftrace.analysis.compare.significance import compare_steps
from tftrace.analysis.compare.peaks import memory_deltas
from tftrace.analysis.compare.rates import rate_deltas
from tftrace.model.diff_report import DiffReport, ExperimentDelta, HostDelta, PartDelta, RowDelta, StepTime, StepTimeDelta
from tftrace.model.report import PARTS, RunReport

_WRAPPERS = re.compile(r"(StatefulPartitionedCall|PartitionedCall|replica_\d+)(_\d+)?\Z")
_SUFFIX = UNIQUE_SUFFIX
# Top scopes that are not a model's: their ops keep them, so `adam/Sub` never becomes `Sub`.
_KEEP_FIRST = {"gradient_tape", "gradients"} | OPTIMIZER_SCOPES | LOSS_SCOPES | METRIC_SCOPES
# The experiment's figures a diff compares, in this order.
EXPERIMENT_FIGURES = ("input_alone_ms", "step_alone_ms", "step_measured_ms", "predict_ms", "predict_on_batch_ms",
                      "direct_call_ms", "function_call_ms")
MOVED = 0.05  # a part or op moved when it changed by this share of the baseline step time


def op_key(name: str) -> str:
    """`StatefulPartitionedCall/functional_1/dense_1/MatMul` and `functional_2/dense/MatMul`
    both become `dense/MatMul`: the model scope and uniquifying suffixes go."""
    parts = [p for p in name.split("/") if not _WRAPPERS.match(p)]
    head: list[str] = []
    if parts and _SUFFIX.sub("", parts[0]) in ("gradient_tape", "gradients"):
        head, parts = ["gradient_tape"], parts[1:]
    if len(parts) >= 3 and _SUFFIX.sub("", parts[0]).lower() not in _KEEP_FIRST:
        parts = parts[1:]
    return "/".join(head + [_SUFFIX.sub("", p) for p in parts])


def _per_step(ps: int, steps: int) -> int:
    return round(ps / max(steps, 1))


def _steps(run: RunReport) -> int:
    return max(len(run.steps.steps), 1)


def _rows(base: dict, cand: dict, meta: dict, top: int | None) -> tuple[RowDelta, ...]:
    rows = []
    for key in set(base) | set(cand):
        b, c = base.get(key, 0), cand.get(key, 0)
        if b == c and key in base and key in cand:
            continue  # unchanged: nothing moved
        status = "added" if key not in base else "removed" if key not in cand else "changed"
        typ, cat = meta.get(key, ("", ""))
        rows.append(RowDelta(key[0] if isinstance(key, tuple) else key, b, c, c - b, status, typ, cat))
    rows.sort(key=lambda r: (-abs(r.delta_ps), r.name, r.type))
    return tuple(rows[:top] if top else rows)


def _op_totals(run: RunReport) -> tuple[dict, dict]:
    totals: dict = {}
    meta: dict = {}
    n = _steps(run)
    for op in run.ops:
        name = op_key(op.name) if not op.eager else (f"{_SUFFIX.sub('', op.layer)}/{op.name}" if op.layer else op.name)
        key = (name, op.type, op.device)
        totals[key] = totals.get(key, 0) + op.self_ps
        meta[key] = (op.type, op.category)
    return {k: _per_step(v, n) for k, v in totals.items()}, meta


def _step_times(run: RunReport) -> tuple[StepTime, ...]:
    """The steps the test compares (none when the whole window stood in for a step): as each report
    judges them, less the profiler's own time, so a run traced with JAX's Python tracer on is not
    slower than one without for the tracer's sake."""
    return tuple(StepTime(s.number, s.dur_ps - s.profiler_ps) for s in run.steps.steps) if run.steps.count else ()


def _median(run: RunReport) -> int:
    return run.steps.median_less_profiler_ps or run.steps.median_ps


def _profiler_note(base: RunReport, cand: RunReport) -> tuple[str, ...]:
    costs = [r.steps.profiler_ps for r in (base, cand)]
    if not any(costs):
        return ()
    each = ", ".join(f"{side} ~{ps / 1e9:.3f} ms a step" for side, ps in zip(("baseline", "candidate"), costs))
    return (f"steps compared less the profiler's own time, as each report judges them ({each})",)


def diff_runs(base: RunReport, cand: RunReport, base_label: str, cand_label: str, top: int | None = 20,
              notes: tuple[str, ...] = (), fail_if_slower: float | None = None) -> DiffReport:
    """`fail_if_slower`: a limit in percent for the speed gate (None: no gate)."""
    b_times, c_times = _step_times(base), _step_times(cand)
    cmp = compare_steps([s.dur_ps for s in b_times], [s.dur_ps for s in c_times])
    b_med, c_med = _median(base), _median(cand)
    notes = tuple(notes) + _profiler_note(base, cand)
    step = StepTimeDelta(b_med, c_med, round((c_med - b_med) / b_med * 100, 2) if b_med else 0.0,
                         cmp.significant, cmp.test, cmp.p_value, base.steps.count, cand.steps.count)
    parts = {p: _part(base, cand, p) for p in PARTS}
    b_ops, b_meta = _op_totals(base)
    c_ops, c_meta = _op_totals(cand)
    ops = _rows(b_ops, c_ops, {**b_meta, **c_meta}, top)
    layers = _rows(*(_named(r.layers, "layer", r) for r in (base, cand)), {}, top)
    cats = _rows(*(_named(r.categories, "category", r) for r in (base, cand)), {}, top)
    owners = _rows(*(_owners(r) for r in (base, cand)), {}, top)
    summary = _summary(step, parts, owners or cats, layers, ops, base_label, cand_label)
    gate = speed_gate(step, fail_if_slower) if fail_if_slower is not None else None
    findings = finding_deltas(base, cand)
    return DiffReport(base_label, cand_label, step, parts, ops, layers, cats, summary,
                      base.verdict.text, cand.verdict.text, notes, b_times, c_times, gate, _hosts(base, cand),
                      _experiment(base, cand), memory_deltas(base.memory, cand.memory), owners, _input_wait(base, cand),
                      rates=rate_deltas(base, cand, top), findings=findings, verdict=verdict(step, findings, base, cand))


def _input_wait(base: RunReport, cand: RunReport) -> PartDelta | None:
    """The device's idle time while the host waits for input, per step and as a share of step
    time, where either run has any."""
    def share(run: RunReport) -> tuple[float, int]:
        steps = run.steps.steps
        wall = sum(s.dur_ps + s.idle_ps for s in steps)
        wait = sum(s.input_wait_ps for s in steps)
        return (wait / wall if wall else 0.0), (round(wait / len(steps)) if steps else 0)
    (b, b_ps), (c, c_ps) = share(base), share(cand)
    if not b_ps and not c_ps:
        return None
    return PartDelta(round(b, 6), round(c, 6), round(c - b, 6), b_ps, c_ps)


def _experiment(base: RunReport, cand: RunReport) -> tuple[ExperimentDelta, ...]:
    sides = (base.experiment, cand.experiment)
    values = [[getattr(e, f) if e is not None else None for e in sides] for f in EXPERIMENT_FIGURES]
    return tuple(ExperimentDelta(f, b, c) for f, (b, c) in zip(EXPERIMENT_FIGURES, values)
                 if b is not None or c is not None)


def _hosts(base: RunReport, cand: RunReport) -> tuple[HostDelta, ...]:
    """Per host, matched by name, when either run has several hosts."""
    b = {h.host: h for h in base.per_host}
    c = {h.host: h for h in cand.per_host}
    out = []
    for host in sorted(set(b) | set(c)):
        x, y = b.get(host), c.get(host)
        bp, cp = (x.mean_ps if x else 0), (y.mean_ps if y else 0)
        status = "added" if x is None else "removed" if y is None else "changed"
        out.append(HostDelta(host, bp, cp, round((cp - bp) / bp * 100, 2) if bp and cp else 0.0,
                             x.bound if x else "", y.bound if y else "", status))
    return tuple(out)


def _named(rows, attr: str, run: RunReport) -> dict:
    n = _steps(run)
    out: dict = {}
    for r in rows:
        key = _SUFFIX.sub("", getattr(r, attr)) if attr == "layer" else getattr(r, attr)
        out[key] = out.get(key, 0) + r.self_ps
    return {k: _per_step(v, n) for k, v in out.items()}


def _owners(run: RunReport) -> dict:
    """Each owner's time per step, keyed by its label (a layer's `_N` suffixes dropped, so the
    same layer matches across two builds of a model)."""
    out: dict = {}
    for r in run.owners:
        name = _SUFFIX.sub("", r.name) if r.kind == "layer" else r.name
        label = type(r)(r.kind, name, r.phase).label
        out[label] = out.get(label, 0) + r.per_step_ps
    return out


def _part(base: RunReport, cand: RunReport, part: str) -> PartDelta:
    b, c = getattr(base.breakdown, part), getattr(cand.breakdown, part)
    return PartDelta(b, c, round(c - b, 6), round(b * _wall_per_step(base)), round(c * _wall_per_step(cand)))


def _wall_per_step(run: RunReport) -> float:
    steps = run.steps.steps
    return sum(s.dur_ps + s.idle_ps for s in steps) / len(steps) if steps else 0.0


def _summary(step: StepTimeDelta, parts: dict, cats, layers, ops, base_label: str, cand_label: str) -> str:
    ms = lambda ps: f"{ps / 1e9:.2f} ms"  # noqa: E731
    if step.significant:
        verb = "fell" if step.delta_pct < 0 else "rose"
        head = f"Step time {verb} by {abs(step.delta_pct):.1f}% ({ms(step.baseline_ps)} -> {ms(step.candidate_ps)}, {step.test})"
    elif step.baseline_steps < 5 or step.candidate_steps < 5:
        head = (f"Step time {ms(step.baseline_ps)} -> {ms(step.candidate_ps)} ({step.delta_pct:+.1f}%): {step.test}, "
                "so no verdict on significance")
    else:
        head = (f"No significant change in step time ({ms(step.baseline_ps)} -> {ms(step.candidate_ps)}, "
                f"{step.delta_pct:+.1f}%; {step.test})")
    dominant = max(("input", "host_overhead", "idle", "compute"),
                   key=lambda p: min(parts[p].baseline, parts[p].candidate))
    compute = parts["compute"]
    # tf.data stage time is waiting as much as working: the breakdown's input part speaks for it.
    moved = [c for c in cats if c.name != "input" and not c.name.startswith("Input stage")
             and abs(c.delta_ps) >= MOVED * max(step.baseline_ps, 1)]
    detail = ""
    if moved:
        top = moved[0]
        what = top.name if top.name[:1].isupper() else f"{top.name} ops"  # an owner's label, or a category
        detail = f"; {what} moved most ({ms(top.baseline_ps)} -> {ms(top.candidate_ps)} per step)"
    if not step.significant and dominant != "compute" and compute.baseline_ps and \
            abs(compute.candidate_ps - compute.baseline_ps) >= 0.1 * compute.baseline_ps:
        change = "fell" if compute.candidate_ps < compute.baseline_ps else "rose"
        label = {"input": "input", "host_overhead": "host overhead", "idle": "idle time"}[dominant]
        return (f"{head}. The candidate's compute {change} ({ms(compute.baseline_ps)} -> {ms(compute.candidate_ps)} "
                f"per step){detail}, but {label} dominates both runs ({parts[dominant].baseline:.0%} and "
                f"{parts[dominant].candidate:.0%} of step time), so steps are not faster.")
    if not step.significant and not moved:
        return f"{head}. Nothing moved by more than {MOVED:.0%} of step time."
    return f"{head}{detail}."
