"""The one line a report carries about a capture window that ended early: by what, after how many steps."""

from __future__ import annotations

# What ended a window, when it was not an exception (those are named by their class).
_BY = {
    "interpreter exit": "the interpreter's exit",
    "epoch end": "the end of the epoch",
    "end of data": "the end of the data",
    "unknown": "an interruption the capture did not see (closed at the next capture)",
}


def window_note(sidecar: dict, steps_found: int) -> str:
    """The note for a window its sidecar marks as cut short, or "" for one that ran in full.

    `sidecar` is the run's `tftrace_run.json` (its `cut_short`: `by`, `steps_completed`, and when
    known `steps_planned` and `partial_step`, the step that was running when the window ended);
    `steps_found` is how many steps the analysis found in the trace.
    """
    cut = (sidecar or {}).get("cut_short")
    if not isinstance(cut, dict):
        return ""
    by = str(cut.get("by") or "unknown")
    head = f"this window was cut short by {_BY.get(by, by)}"
    done, planned = _count(cut.get("steps_completed")), _count(cut.get("steps_planned"))
    marked = bool((sidecar or {}).get("steps")) or planned is not None
    if done is None or not marked:  # no step markers: nothing to count against
        return f"{head}; it holds only the part of the run before that"
    if planned is not None:
        head += f" after {done} of {planned} planned step{_s(planned)}"
    elif done:
        head += f" after {done} completed step{_s(done)}"
    if done == 0 and steps_found == 0:
        return f"{head}: no step completed, so it has no step times"
    partial = cut.get("partial_step")
    if steps_found > done:
        which = f"step {partial}" if partial is not None and steps_found == done + 1 else \
            f"{steps_found - done} of the {steps_found} steps found"
        return f"{head}; {which} ran only in part before the cut, so leave it out of step times"
    if steps_found < done:
        return f"{head}; only {steps_found} of those steps were found in the trace"
    return f"{head}; its figures rest on those {done} step{_s(done)}, not on a full window"


def _count(value) -> int | None:
    try:
        return max(int(value), 0) if value is not None else None
    except (TypeError, ValueError):
        return None


def _s(n: int) -> str:
    return "" if n == 1 else "s"
