"""XLA recompilation: a jit-compiled tf.function traced and compiled again for new input shapes
inside the measured steps."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding
from tftrace.analysis.findings.calls import function_calls
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.retracing import traced_findings


def detect(ctx: Context) -> list[Finding]:
    return traced_findings(ctx, ctx.once(function_calls), xla=True)
