"""Number formatting shared by the renderers: picoseconds to readable times, fractions to %."""

from __future__ import annotations

PART_LABELS = {"input": "input", "compute": "compute", "host_overhead": "host overhead", "idle": "idle"}


def ms(ps: int) -> str:
    """Picoseconds as milliseconds with sensible precision."""
    value = ps / 1e9
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def less_profiler(steps) -> str:
    """What the steps take less the profiler's own time (the steps the breakdown judges), and the
    same call's steps timed untraced, or ""."""
    less = (f"; less the profiler's own {ms(steps.profiler_ps)} ms a step: mean "
            f"~{ms(steps.mean_less_profiler_ps)} ms, median ~{ms(steps.median_less_profiler_ps)} ms"
            if steps.profiler_ps else "")
    untraced = (f"; untraced after the window {ms(steps.untraced_ps)} ms a step, gap included ({steps.untraced_steps} steps)"
                if steps.untraced_ps else "")
    return less + untraced


_SI = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def si(value: float, unit: str) -> str:
    """`3.55e11, "FLOP"` -> `355.5 GFLOP`."""
    for prefix, size in _SI:
        if abs(value) >= size:
            return f"{value / size:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def work_line(run) -> str:
    """The headline's work: FLOPs per step and what counted them, the achieved rate, and MFU
    where a peak is known ("" where no work was counted)."""
    roof = run.roofline
    if run.flops_per_step is None:
        return ""
    out = f"{si(run.flops_per_step, 'FLOP')} a step (from {roof.counted_by})"
    if roof.flops_per_s is not None:
        out += f"; {si(roof.flops_per_s, 'FLOP/s')} achieved"
    if run.mfu is not None and roof.peak_flops_per_s:
        devices = f"{roof.devices} x " if roof.devices > 1 else ""
        out += f"; MFU {pct(run.mfu)} of the {roof.device} peak, {devices}{si(roof.peak_flops_per_s, 'FLOP/s')}"
        if roof.precision_mfu is not None and roof.precision_peak_flops_per_s != roof.peak_flops_per_s:
            out += f" ({pct(roof.precision_mfu)} at {roof.precision})"
    elif roof.source:
        out += f"; {roof.source}"
    return out


OWNERS_TITLE = "Owners (who holds each step: share of the mean step with the gap after it)"


def owner_cells(r) -> tuple:
    """An owner row's cells: owner, phase, ms per step, share, part, op runs per step, what."""
    runs = f"{r.runs:g}" if r.runs else ""
    return (r.owner, r.phase, ms(r.per_step_ps), pct(r.share), PART_LABELS.get(r.part, r.part), runs, r.what)


OWNER_COLUMNS = ("owner", "phase", "ms/step", "share", "part", "runs/step", "what")


def params(n: int) -> str:
    if n < 0:
        return ""
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def op_share_basis(run) -> str:
    """What the op table's share column is a share of."""
    if run.device_op_ps:
        return f"share of all op time: host {ms(run.host_op_ps)} ms + device {ms(run.device_op_ps)} ms"
    return f"share of all op time, {ms(run.host_op_ps)} ms"


def main_share_basis(run) -> str:
    """What the layer and category tables' share columns are a share of."""
    if run.device_op_ps:
        return f"share of device op time, {ms(run.device_op_ps)} ms"
    return f"share of host op time, {ms(run.host_op_ps)} ms"


def where(op) -> str:
    """Where an op ran, in one short word: host, eager (host, op by op) or the device kind."""
    return "eager" if op.eager else op.device


def projection(b) -> str:
    """'72.3 ms -> ~22.1 ms per step (removed)' for a bottleneck that carries a projection, with
    what it rests on; for one the trace cannot price, that; for one that saves nothing until the
    first is fixed, what it saves then; a tie, with the noise it lies within."""
    if not b.step_ps:
        return ""
    basis = getattr(b, "projection_basis", "")
    if basis == "none":
        return "saves: not priced from the trace"
    if getattr(b, "after_first", False):
        return (f"saves nothing while #1 holds the step; once #1 is fixed: ~{ms(b.step_once_first_fixed_ps)} ms "
                "per step")
    out = f"{ms(b.step_ps)} ms -> ~{ms(b.step_if_removed_ps)} ms per step" + (f" ({basis})" if basis else "")
    if getattr(b, "tie_rank", 0) and b.tie_rank != b.rank:
        out += f"; tied with #{b.tie_rank} within {ms(b.noise_ps)} ms of noise"
    return out


def projection_how(b) -> str:
    """How the projection was made (or why there is none), and the step confirm measured with the
    fix applied, where it did."""
    how = getattr(b, "projection_how", "")
    measured = getattr(b, "measured_step_ps", None)
    if measured is not None:
        how = (how + "; " if how else "") + f"measured with the fix applied: {ms(measured)} ms per step"
    return how


def tail(name: str, limit: int) -> str:
    """A long scoped name shortened from the left to its meaningful tail, at scope boundaries
    (`/`, or `::` in tf.data stages) where possible: `…/head_dense_1/Relu`."""
    if len(name) <= limit:
        return name
    sep = "::" if "::" in name and "/" not in name else "/"
    parts = name.split(sep)
    out = parts[-1]
    for part in reversed(parts[:-1]):
        if len(out) + len(part) + len(sep) + 1 + len(sep) > limit:
            break
        out = f"{part}{sep}{out}"
    out = "…" + (sep if len(parts) > 1 else "") + out
    return out if len(out) <= limit else "…" + name[-(limit - 1):]


_OUTCOME = {True: "confirms the verdict", False: "contradicts the verdict", None: "cannot test the verdict"}


def experiment_head(exp) -> str:
    """`Experiment (fit, 5 batches each): confirms the verdict` - what ran, and its outcome."""
    what = "predict against direct calls" if exp.kind == "predict" else exp.mode or "custom loop"
    each = f", {exp.batches} {'calls' if exp.kind == 'predict' else 'batches'} each" if exp.batches else ""
    outcome = "failed" if exp.error else _OUTCOME[exp.confirmed]
    return f"Experiment ({what}{each}): {outcome}"


def experiment_skipped(exp) -> list[str]:
    return [f"not timed: {s}" for s in exp.skipped]
