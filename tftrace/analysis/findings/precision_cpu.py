"""Half-precision arithmetic on a CPU: a `mixed_float16` (or `float16`) dtype policy that the
sidecar records, on a run with no accelerator. Mixed precision pays on GPUs with tensor cores; a
CPU has no fast float16 arithmetic and converts or emulates it, so every layer computing in it is
slower than in float32. How much slower the trace cannot say (the same layers in float32 never
ran), so the projection is left to confirm, which times the model in float32 on a copy."""

from __future__ import annotations

from tftrace.analysis.findings import projection
from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for

_HALF = ("float16",)  # policies with float16 compute (mixed_float16, float16); bfloat16 has CPU paths


def detect(ctx: Context) -> list[Finding]:
    program = ctx.owners.program
    if not ctx.on_cpu or ctx.breakdown.compute <= 0:
        return []
    policy = program.dtype_policy
    half = [r for r in ctx.owners.rows if r.kind == "layer" and _half(program.layer_policies.get(r.name, policy))]
    if not half:
        return []
    compute = sum(r.compute_ps for r in half)
    share = compute / ctx.per_step_ps
    layers = sorted({r.name for r in half})
    facts = (fact("dtype policy", policy if _half(policy) else ", ".join(sorted({program.layer_policies[n]
                                                                                   for n in layers}))),
             fact("layers computing in float16", len(layers)), ms_fact("their ops' time per step", compute),
             pct_fact("share of each step", share),
             fact("what puts it there", "mixed precision pays on GPUs with tensor cores; a CPU has no fast float16 "
                                        "arithmetic and converts or emulates it"))
    p = projection.unknown(ctx, "the same layers in float32 never ran, so the trace cannot say how much faster they "
                                "would be (often several times): TraceCallback(confirm=True) times the model in float32 "
                                "on a copy")
    return [Finding("precision", f"float16 arithmetic on a CPU: {len(layers)} layers compute in float16 "
                                 f"({share:.0%} of each step)", share, facts, fix_for("precision_cpu"), p.step_ps,
                    "compute", subject="float16", **p.fields())]


def _half(policy: str) -> bool:
    return any(h in policy and "bfloat16" not in policy for h in _HALF)
