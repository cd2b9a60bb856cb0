"""Read the figures an experiment saved beside a run (`tftrace_experiment.json`), each field
checked: a field of the wrong type is left out with a note, never a traceback."""

from __future__ import annotations

import math

from tftrace.read.checked_json import read_checked

_NUMBERS = ("input_alone_ms", "step_alone_ms", "loop_ms", "untraced_ms", "predict_ms", "predict_on_batch_ms",
            "direct_call_ms", "function_call_ms")
_TEXTS = ("kind", "mode", "error")


def read_experiment(path: str) -> tuple[dict | None, list[str]]:
    """(figures, problems): the file's well-formed fields (None if it is unreadable)."""
    return read_checked(path, "experiment", _malformed)


def _malformed(data: dict) -> list[str]:
    bad = [k for k in _NUMBERS if k in data and not _number(data[k])]
    bad += [k for k in _TEXTS if k in data and not isinstance(data[k], str)]
    if "batches" in data and not (isinstance(data["batches"], int) and not isinstance(data["batches"], bool)):
        bad.append("batches")
    if "skipped" in data and not (isinstance(data["skipped"], list) and all(isinstance(x, str) for x in data["skipped"])):
        bad.append("skipped")
    if "correct" in data and not (isinstance(data["correct"], dict)
                                  and all(isinstance(v, bool) for v in data["correct"].values())):
        bad.append("correct")
    return bad


def _number(value) -> bool:
    if value is None:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
