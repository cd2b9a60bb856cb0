"""What an experiment's figures say about a trace's verdict: confirmed, contradicted, or silent."""

from __future__ import annotations

import dataclasses
import statistics

from tftrace.model.report import Experiment, StepsSummary, Verdict

INPUT_SHARE = 0.20  # input explains this share of the step: input-bound (XProf's "highly" bar)
STEP_SHARE = 0.50  # the step alone takes at least half the measured step: its own ops lead
OUTSIDE_SHARE = 0.25  # time in neither the step nor its input: Keras' loop, callbacks, your Python
PER_CALL_SPEEDUP = 1.5  # a direct call this much faster than predict: predict's per-call work leads
PROFILER_SLOWS = 1.1  # a traced step this much slower than the untraced ones: say the profiler's cost
_ALTERNATIVES = ("predict_on_batch", "direct_call", "function_call")


def interpret(raw: dict, steps: StepsSummary | None = None, bound: str = "") -> Experiment:
    """The Experiment of `raw` (the saved figures). The measured step is the call's own steps
    outside the window where the callback timed them (the profiler slows a step, the step timed
    alone runs without it); else the median of `steps`, the trace's (with the gap after each);
    else the experiment's own timed loop. `bound`: the trace's verdict, which the figures
    confirm or not."""
    traced = _traced(steps)
    measured, by = _measured(raw, traced)
    exp = Experiment(
        kind=raw.get("kind", "step"), mode=raw.get("mode", ""), batches=int(raw.get("batches") or 0),
        input_alone_ms=_round(raw.get("input_alone_ms")), step_alone_ms=_round(raw.get("step_alone_ms")),
        step_measured_ms=measured, measured_by=by, step_traced_ms=traced if by == "untraced" else None,
        skipped=tuple(raw.get("skipped", ())), error=raw.get("error", ""),
        **{f"{k}_ms": _round(raw.get(f"{k}_ms")) for k in ("predict",) + _ALTERNATIVES})
    if exp.error:
        return dataclasses.replace(exp, statement=f"the experiment failed: {exp.error}")
    if exp.kind == "predict" and exp.predict_ms:
        return _predict(exp, raw.get("correct", {}), bound)
    stepped = _step(exp, bound)
    if not exp.predict_ms:
        return stepped
    # TraceCallback on predict: the calls compared on one batch, beside the step's figures.
    calls = _predict(stepped, raw.get("correct", {}), "")
    return dataclasses.replace(calls, leads=stepped.leads, confirmed=stepped.confirmed,
                               statement=f"{stepped.statement}. On one batch: {calls.statement}")


def _round(ms: float | None) -> float | None:
    return None if ms is None else round(float(ms), 3)  # microseconds: finer is clock noise


def _traced(steps: StepsSummary | None) -> float | None:
    rows = steps.steps if steps is not None and steps.count else ()
    return round(statistics.median(s.dur_ps + s.idle_ps for s in rows) / 1e9, 3) if rows else None


def _measured(raw: dict, traced: float | None) -> tuple[float | None, str]:
    for figure, by in (("untraced_ms", "untraced"), (traced, "trace"), ("loop_ms", "loop")):
        value = raw.get(figure) if isinstance(figure, str) else figure
        if value:
            return round(float(value), 3), by
    return None, ""


def _step(exp: Experiment, bound: str) -> Experiment:
    m, s, i = exp.step_measured_ms, exp.step_alone_ms, exp.input_alone_ms
    figures = "; ".join(x for x in (_ms("input alone", i, "per batch"), _ms("step alone", s, "per step"),
                                    _ms("measured", m, f"per step ({_by(exp)})")) if x)
    if not (m and s is not None):
        missing = "no step time to compare with (`tftrace analyze` compares them with the trace's steps)" \
            if s is not None else "the step could not be timed alone, so the verdict stands untested"
        return dataclasses.replace(exp, statement=figures + ("; " if figures else "") + missing)
    # The measured step is the step, the wait for input, and time in neither. Input explains at
    # most its own time, and at most what the step alone leaves unexplained.
    wait = min(i, max(m - s, 0.0)) if i is not None else 0.0
    outside = max(m - s - wait, 0.0)
    parts = {"step": s, "input": wait, "outside": outside}
    leads = max(parts, key=parts.get)
    confirmed, why = _judge(bound, m, s, wait, outside, i is not None)
    return dataclasses.replace(exp, leads=leads, confirmed=confirmed, statement=f"{figures}: {why}")


def _judge(bound: str, m: float, s: float, wait: float, outside: float, input_timed: bool):
    free = f"with a free input pipeline a step would take ~{s + outside:.1f} ms"
    if bound == "input":
        if not input_timed:
            return None, "the input could not be timed alone, so the input-bound verdict stands untested"
        if wait >= INPUT_SHARE * m:
            return True, f"input-bound confirmed; {free}"
        return False, (f"this contradicts the input-bound verdict: the input alone explains at most "
                       f"{wait / m:.0%} of the step, the step alone takes {s / m:.0%}")
    if bound == "compute":
        if s >= STEP_SHARE * m:
            return True, f"compute-bound confirmed: the step alone takes {s / m:.0%} of the measured step"
        side = "waiting for input" if wait >= outside else "outside the step and its input"
        return False, (f"this contradicts the compute-bound verdict: the step alone takes only {s / m:.0%} of "
                       f"the measured step; {max(wait, outside) / m:.0%} goes {side}")
    if bound in ("host_overhead", "idle"):
        if wait >= INPUT_SHARE * m and wait >= outside:
            return False, f"this contradicts the verdict: waiting for input explains {wait / m:.0%} of the step; {free}"
        if outside >= OUTSIDE_SHARE * m:
            return True, (f"{outside / m:.0%} of the step ({outside:.1f} ms) runs outside the step function and its "
                          "input (Keras' loop, callbacks, your Python): confirmed")
        return None, (f"the step alone takes {s / m:.0%} of the measured step: timing it alone cannot tell its "
                      "own overhead from its ops (the findings below can)")
    return None, f"the step alone takes {s / m:.0%} of the measured step, waiting for input {wait / m:.0%}"


def _predict(exp: Experiment, correct: dict, bound: str) -> Experiment:
    p = exp.predict_ms
    timed = {k: getattr(exp, f"{k}_ms") for k in _ALTERNATIVES}
    ok = {k: v for k, v in timed.items() if v and correct.get(k, False)}
    wrong = sorted(k for k, v in timed.items() if v and not correct.get(k, False))
    figures = "; ".join(x for x in [_ms("predict", p, "per call")] + [_ms(k, v, "") for k, v in timed.items()] if x)
    if not ok:
        return dataclasses.replace(exp, statement=f"{figures}: no alternative gave predict's outputs")
    fastest = min(ok, key=ok.get)
    speedup = round(p / ok[fastest], 2)
    leads = "predict_overhead" if speedup >= PER_CALL_SPEEDUP else "model"
    if bound in ("host_overhead", "idle"):
        confirmed = leads == "predict_overhead"
    elif bound == "compute":
        confirmed = leads == "model"
    else:
        confirmed = None
    why = (f"{fastest} gives the same outputs {speedup:.1f}x faster than predict: predict's per-call work "
           "(a new data pipeline, callbacks, batching) is the slow part" if leads == "predict_overhead" else
           f"the fastest alternative ({fastest}) is only {speedup:.1f}x faster: the model itself is the time")
    if confirmed is not None:
        why += "; the verdict is " + ("confirmed" if confirmed else "contradicted")
    if wrong:
        why += f" ({', '.join(wrong)} gave other outputs and was left out)"
    return dataclasses.replace(exp, fastest=fastest, speedup=speedup, leads=leads, confirmed=confirmed,
                               statement=f"{figures}: {why}")


def _by(exp: Experiment) -> str:
    if exp.measured_by != "untraced":
        return exp.measured_by
    steps = "the call's own steps outside the window"
    if not (exp.step_traced_ms and exp.step_measured_ms):
        return steps
    slowed = exp.step_traced_ms / exp.step_measured_ms
    return f"{steps}; {exp.step_traced_ms:.2f} ms in the trace" + (
        f": the profiler slowed it {slowed:.1f}x" if slowed >= PROFILER_SLOWS else "")


def _ms(label: str, value: float | None, unit: str) -> str:
    if value is None:
        return ""
    return f"{label} {value:.2f} ms" + (f" {unit}" if unit else "")


def measured_verdict(verdict: Verdict, exp: Experiment | None) -> Verdict:
    """The verdict, marked as measured when an experiment confirms it."""
    if exp is None or exp.confirmed is not True or ":" not in verdict.text:
        return verdict
    head, rest = verdict.text.split(":", 1)
    return dataclasses.replace(verdict, text=f"{head} (measured):{rest}", measured=True)
