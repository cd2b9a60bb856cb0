"""Ranges on a PyTorch trace's threads that own the ops inside them, the innermost winning: Keras
layers and torch modules (their calls), the loss, metrics and the optimizer (their ranges), and
the user's Python functions (Kineto's `Call stack` of each op, or its Python events)."""

from __future__ import annotations

import re
import sys

import numpy as np

from tftrace.model.names import TORCH_MODULE as MODULE

_OPTIMIZER = re.compile(r"Optimizer\.(step|zero_grad)#(?P<cls>[A-Za-z0-9_]+)\.(step|zero_grad)\Z")
# A Python event of with_stack: `path/file.py(123): function`; a frame of a 2021 `Call stack` alike.
_FRAME = re.compile(r"(?P<file>[^;()]+\.py)\((?P<line>\d+)\): (?P<fn>[^;]+)\Z")
_SITE = ("site-packages/", "dist-packages/")
# Packages whose frames own nothing of the model: the frameworks that run it (the standard library too).
_FRAMEWORKS = frozenset(sys.stdlib_module_names) | {"torch", "keras", "tf_keras", "tftrace", "tensorflow", "jax",
                                                    "numpy", "lightning", "pytorch_lightning", "accelerate",
                                                    "typing_extensions", "functorch", "triton"}


def module_name(event_name: str) -> str:
    """`nn.Module: layer1.0.conv1` -> `layer1.0.conv1`; "" for any other event."""
    return event_name[len(MODULE):] if event_name.startswith(MODULE) else ""


def optimizer_class(event_name: str) -> str:
    """`Optimizer.step#AdamW.step` -> `AdamW` (torch's range around each optimizer step and
    zero_grad); "" for any other event."""
    m = _OPTIMIZER.match(event_name)
    return m["cls"] if m else ""


def user_frame(frame: str, script: bool = True) -> tuple[str, str, int] | None:
    """(function, file, line) of a Python frame torch's profiler wrote (`path/file.py(12): fn`),
    when it is the model's or the user's code: not the framework's (torch, Keras, the standard
    library). A library's model code counts (`torchvision/models/resnet.py`). `script`: a
    script's top level (`<module>`) counts too (a stack's frame: the line it runs; a Python
    event of it spans the whole script)."""
    m = _FRAME.match(frame.strip())
    if m is None or (not script and m["fn"] == "<module>"):
        return None
    path = m["file"]
    for site in _SITE:
        if site in path:
            path = path.split(site, 1)[1]
    top = path.lstrip("./").split("/")[0].removesuffix(".py")
    if top in _FRAMEWORKS or path.startswith(("<", "/usr/lib/python", "/opt/conda/lib/python")):
        return None
    return m["fn"], path.rsplit("/", 1)[-1], int(m["line"])


def stack_owner(stack: str) -> str:
    """The innermost frame of the model's or user's code in a Kineto `Call stack` (frames
    innermost first, `;` between), as `_forward_impl (resnet.py:232)`: the line that called
    into torch; "" when no frame is."""
    for frame in stack.split(";"):
        found = user_frame(frame)
        if found is not None:
            fn, file, line = found
            return f"{fn} ({file}:{line})"
    return ""


def innermost(r0: np.ndarray, r1: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Per interval [t0, t1], the index of the innermost range [r0, r1] that holds it (-1: none).
    The ranges are one thread's, so they nest: the range begun last before an interval holds it,
    or one of that range's parents does."""
    out = np.full(len(t0), -1, np.int64)
    if not len(r0) or not len(t0):
        return out
    order = np.lexsort((-r1, r0))  # by start, the outer of two that start together first
    s, e = r0[order], r1[order]
    parent = _parents(s, e)
    k = np.searchsorted(s, t0, side="right") - 1
    while True:
        climb = np.flatnonzero(k >= 0)
        climb = climb[t1[climb] > e[k[climb]]]
        if not len(climb):
            break
        k[climb] = parent[k[climb]]
    ok = k >= 0
    out[ok] = order[k[ok]]
    return out


def _parents(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per range (sorted by start), the innermost range holding it (-1: none)."""
    parent = np.full(len(s), -1, np.int64)
    stack: list[int] = []
    ends = e.tolist()
    for i, start in enumerate(s.tolist()):
        while stack and ends[stack[-1]] < start:
            stack.pop()
        while stack and ends[stack[-1]] < ends[i]:  # overlapping, not nested: not a parent
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent
