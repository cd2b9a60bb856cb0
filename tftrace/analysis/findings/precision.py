"""Matmuls and convolutions in fp32 (or TF32) on a GPU whose tensor cores run bfloat16 and fp16
about twice as fast: the kernels' names tell the arithmetic they use."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.fixes import fix_for

MIN_SHARE = 0.3  # of the device's op time in fp32/TF32 matmuls and convolutions
SPEEDUP = 2.0  # bf16 against TF32 tensor-core throughput (H100/H200, A100): dense math at about twice the rate
_WIDE = ("fp32", "tf32")


def detect(ctx: Context) -> list[Finding]:
    device_ps = ctx.ops.device_self_ps
    if not device_ps or ctx.breakdown.compute <= 0:
        return []
    precision = {op.name: op.precision for op in ctx.trace.ops.values() if op.kind == "device" and op.precision}
    wide = [e for e in ctx.table if e.device != "host" and e.category in ("matmul", "convolution")
            and precision.get(e.name) in _WIDE]
    wide_ps = sum(e.self_ps for e in wide)
    if wide_ps < MIN_SHARE * device_ps:
        return []
    kinds = sorted({precision[e.name] for e in wide})
    cats = sorted({e.category for e in wide})
    share_of_ops = wide_ps / device_ps
    share = ctx.breakdown.compute * share_of_ops  # of wall time
    what = " and ".join("matmuls" if c == "matmul" else "convolutions" for c in cats)
    facts = (pct_fact(f"share of the device's op time in {'/'.join(kinds).upper()} {what}", share_of_ops),
             ms_fact("their time per step", wide_ps / ctx.n), fact("kernels", _kernel_sample(wide)),
             fact(f"bfloat16 runs them about {SPEEDUP:g}x faster on tensor cores"))
    title = f"{'/'.join(kinds).upper()} {what}: {share_of_ops:.0%} of the device's op time; bfloat16 would halve it"
    loop = "keras" if ctx.keras_jax or ctx.loop == "keras" else "jax" if ctx.jax else "custom"
    saved = share * (1 - 1 / SPEEDUP) * ctx.wall_ps
    p = projection.scaled(ctx, saved, f"these kernels at bfloat16's tensor-core rate, about {SPEEDUP:g}x their "
                                      f"{'/'.join(kinds).upper()} rate on this GPU; the rest of the step unchanged")
    return [Finding("precision", title, share, facts, fix_for("precision", loop), p.step_ps, "compute",
                    subject="/".join(kinds), **p.fields())]


def _kernel_sample(entries) -> str:
    top = max(entries, key=lambda e: (e.self_ps, e.name))
    return f"{top.name.rsplit('/', 1)[-1][:60]} ({top.type})"
