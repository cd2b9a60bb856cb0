"""A finding's id: what it is about (its kind and subject: the owner, stage, callback or function
it names), spelled the same in every capture of the same program, so that a diff, a what-if and an
agent can follow one finding across runs. Times and shares never enter it."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^a-z0-9_.:\-]+")
# A line number after a file name (`loss_fn (train.py:68)`): editing the file, the fix included, moves
# it, and the finding must keep its id across that edit; the file and the function stay.
_LINE = re.compile(r"(\.[A-Za-z]\w*):\d+")


def slug(text: str) -> str:
    """Lower case; runs of characters outside `[a-z0-9_.:-]` become one `-`."""
    return _UNSAFE.sub("-", text.lower()).strip("-")


def finding_ids(findings) -> list[str]:
    """Each finding's id, `kind/subject` (`layer/conv2d_4`, `callback/slowcallback.on_train_batch_end`),
    or the kind alone where it has no subject; a second finding with the same id gets `~2`, in the
    order given (the detectors' order, which does not depend on times)."""
    out, seen = [], {}
    for f in findings:
        subject = slug(_LINE.sub(r"\1", f.subject))
        base = f"{slug(f.kind)}/{subject}" if subject else slug(f.kind)
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}~{seen[base]}")
    return out
