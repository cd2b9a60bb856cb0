"""The detectors in the order they run, and the ranking of what they find.

Each named cause claims the time it explains in a part of the breakdown; the generic findings
(gaps between steps, leftover host overhead) come last and get only what no cause claimed.
"""

from __future__ import annotations

from tftrace.analysis.findings import (callbacks, compute, device_sync, eager, gaps, host_to_device, jit_compile,
                                       keras_calls, memory_room, op_by_op, per_call, pipeline, precision,
                                       precision_cpu, python_function, recompile, regions, remainder, retracing,
                                       small_steps, stalls, step_python, straggler, xla_cpu)
import dataclasses

from tftrace.analysis.findings.base import MIN_SHARE, Finding, evidence_text, ms_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.ids import finding_ids
from tftrace.analysis.findings.ranking import noise, rank
from tftrace.analysis.findings.sanity import checked
from tftrace.analysis.findings.op_by_op import jit_calls
from tftrace.model.memory import MemoryFinding
from tftrace.model.report import Bottleneck

# Causes named from what the trace holds; each is independent of the others.
CAUSES = (straggler.detect, per_call.detect, keras_calls.detect, retracing.detect, recompile.detect, jit_compile.detect,
          eager.detect, op_by_op.detect, precision.detect, precision_cpu.detect, device_sync.detect,
          host_to_device.detect, callbacks.detect, stalls.detect, regions.detect, step_python.detect, pipeline.detect,
          compute.detect, xla_cpu.detect)
# Findings about the time the causes above left unexplained, in order: (detect, part it takes from).
LEFTOVERS = ((python_function.detect, "host_overhead idle"), (small_steps.detect, "host_overhead idle"),
             (gaps.detect, "idle"), (remainder.detect, "host_overhead"))
# Findings about an allocator's memory, not step time: the report lists them with its memory.
MEMORY = (memory_room.detect,)


def diagnose(ctx: Context) -> tuple[Bottleneck, ...]:
    found: list[Finding] = []
    if ctx.wall_ps <= 0:  # no time measured: no share of it to give
        return ()
    for detect in CAUSES:
        found += detect(ctx)
    for detect, part in LEFTOVERS:
        found += detect(ctx, _explained(ctx, found, part))
    # Ids before the share cut, so that none hangs on a share.
    found = [dataclasses.replace(f, id=i) for f, i in zip(found, finding_ids(found))]
    found = [f for f in found if f.share >= MIN_SHARE]
    step = round(ctx.per_step_ps)
    if ctx.tracer_ps:  # projections of the step the program runs, not of the traced one
        found, step = untraced(found, step, ctx.tracer_ps, _python_ps(ctx, step))
    found = [checked(measured(f, step, ctx.measured.get(f.id)), step) for f in found]
    spread = noise(ctx.tl.iterations)
    out = []
    for i, r in enumerate(rank(found, step, spread), 1):
        f = r.finding
        out.append(Bottleneck(i, f.kind, f.title, round(f.share, 4), f.evidence or evidence_text(f.facts), f.fix,
                              f.step_if_removed_ps, step, f.facts, r.after_first, r.step_once_first_fixed_ps,
                              id=f.id, projection_basis=f.basis, projection_how=f.how, part=f.part,
                              floor_ps=f.floor_ps, tie_rank=r.tie_rank, noise_ps=spread if r.tie_rank else 0,
                              measured_step_ps=f.measured_step_ps))
    return tuple(out)


def measured(f: Finding, step: int, ratio: float | None) -> Finding:
    """`f` with the step confirm measured with its fix applied (the step times the ratio the fix
    made, fixed over as compiled, on a copy of the model); a finding the trace could not price
    takes the measured step as its projection."""
    if ratio is None:
        return f
    step_then = min(max(round(step * ratio), 0), step)
    if f.basis in ("", "none"):
        how = (f"confirm applied the fix to a copy of the model and timed it: {ratio:.2f} of the step as compiled, "
               f"{step_then / 1e9:.3g} ms here")
        return dataclasses.replace(f, measured_step_ps=step_then, step_if_removed_ps=step_then, basis="measured",
                                   how=how, floor_ps=0)
    return dataclasses.replace(f, measured_step_ps=step_then)


def _python_ps(ctx: Context, step: int) -> float:
    """The host time a step where the tracer's calls can be: host overhead and idle, less the
    jitted calls' own (JAX's dispatch runs in C++: the tracer records no call inside one)."""
    host = (ctx.breakdown.host_overhead + ctx.breakdown.idle) * step
    dispatch = float(ctx.trace.events["dur_ps"][jit_calls(ctx)].sum()) / ctx.n if ctx.jax else 0.0
    return max(host - dispatch, ctx.tracer_ps)


def untraced(found: list[Finding], step: int, tracer_ps: int, host_ps: float) -> tuple[list[Finding], int]:
    """Findings projected on the step less the profiler's Python tracer (`tracer_ps` of each
    traced `step`): the tracer's calls sit in the host's time, so a fix taking away host time
    (`host_ps` a step, where they can be) takes its share of them with it, and the rest of them
    are not the program's. Each such finding says how much of the tracer's time its fix takes away."""
    out = []
    for f in found:
        removed = max(step - f.step_if_removed_ps, 0)
        on_host = f.part in ("host_overhead", "idle") and host_ps > 0
        took = min(tracer_ps, removed * tracer_ps / host_ps) if on_host else 0
        projected = max(round(f.step_if_removed_ps - (tracer_ps - took)), 0)
        floor = max(round(f.floor_ps - (tracer_ps - took)), 0) if f.floor_ps else 0
        said = ms_fact("of it the Python tracer's own cost, which the fix also removes", took)
        facts = f.facts + (said,) if took else f.facts
        evidence = f.evidence and (f.evidence + ("; " + evidence_text((said,)) if took else ""))
        out.append(dataclasses.replace(f, step_if_removed_ps=projected, facts=facts, evidence=evidence, floor_ps=floor))
    return out, step - tracer_ps


def memory_findings(ctx: Context) -> tuple[MemoryFinding, ...]:
    """The memory detectors' findings, in the order found, as the report's memory part lists them."""
    return tuple(MemoryFinding(f.kind, f.subject, f.title, f.evidence or evidence_text(f.facts), f.fix, f.facts)
                 for detect in MEMORY for f in detect(ctx))


def _explained(ctx: Context, found: list[Finding], part: str) -> float:
    """The share of `part` the findings so far explain (`host_overhead idle`: of both). Host
    overhead a finding claims beyond the host overhead there is (a small-steps finding spans the
    gaps too) is counted as idle."""
    b = ctx.breakdown
    host = sum(f.share for f in found if f.part == "host_overhead")
    idle = sum(f.share for f in found if f.part == "idle") + max(host - b.host_overhead, 0.0)
    return {"host_overhead": host, "idle": idle, "host_overhead idle": host + idle}[part]
