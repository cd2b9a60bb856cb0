"""No impossible figure leaves the analysis: a share of the step is at most all of it, a
projection never goes above the step or below its own floor, and a fix that would leave no step
at all is one the trace cannot price (the loop always does some work)."""

from __future__ import annotations

import dataclasses

from tftrace.model.finding import Finding



def checked(f: Finding, step: int) -> Finding:
    """`f` with its share in [0, 1] and its projection in [floor, step]; a priced projection that
    leaves no step at all becomes unpriced, saying so."""
    share = min(max(f.share, 0.0), 1.0)
    floor = min(max(f.floor_ps, 0), step)
    projected = min(max(f.step_if_removed_ps, floor), step)
    basis, how = f.basis or "none", f.how
    if basis == "none":
        projected = step
    elif projected <= 0:
        basis, projected = "none", step
        how = (f"the trace shows no work this fix would leave, and the loop always has some: run "
               f"TraceCallback(confirm=True) to time the fix (the figure made was: {how or 'none'})")
    if (share, floor, projected, basis, how) == (f.share, f.floor_ps, f.step_if_removed_ps, f.basis, f.how):
        return f
    return dataclasses.replace(f, share=share, floor_ps=floor, step_if_removed_ps=projected, basis=basis, how=how)
