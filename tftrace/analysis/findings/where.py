"""Where Python time goes in a part of the step: the function stack samples or tracer events name."""

from __future__ import annotations

import os

from tftrace.analysis.findings.base import fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.python import hottest


# A package's own Python, by its owner (analysis/python.code_owner): time in it is the framework
# at work (TensorFlow calling into its runtime, Keras' loop), never a user's function to fix.
FRAMEWORKS = {"tensorflow": "TensorFlow", "keras": "Keras", "tf_keras": "Keras", "jax": "JAX", "jaxlib": "JAX",
              "torch": "PyTorch", "python": "Python's standard library"}


def framework_of(ctx: Context, places: tuple[str, ...]) -> str:
    """The framework whose own Python holds most of these places' time ("" when it is the user's
    code, or no Python was recorded)."""
    found = hottest(ctx.python, places) if ctx.python is not None else None
    return FRAMEWORKS.get(found[0].owner, "") if found is not None else ""


def hottest_fact(ctx: Context, places: tuple[str, ...] = ("between steps",)) -> tuple[tuple, str]:
    """(evidence, title suffix) naming the Python function that takes the most of these
    places' time, where samples or tracer events exist."""
    found = hottest(ctx.python, places) if ctx.python is not None else None
    if found is None:
        return (), ""
    row, share = found
    where = f"{os.path.basename(row.file)}:{row.line}" if row.owner == "user" else f"{short_path(row.file)}:{row.line}"
    whose = "your " if row.owner == "user" else ""
    return ((fact("hottest Python function there", f"{whose}{row.function} ({where}, {share:.0%} of that time)"),),
            f" in {whose}{row.function}()")


def short_path(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            parts = parts[parts.index(marker) + 1:]
            break
    return "/".join(parts) if len(parts) <= 3 else f"{parts[0]}/.../{parts[-1]}"
