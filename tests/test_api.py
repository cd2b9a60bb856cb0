"""The public Python API: names resolve to the functions, whatever submodules are loaded."""

from __future__ import annotations

import importlib
import pkgutil

import tftrace


def test_public_names_are_callables_even_after_every_submodule_is_imported():
    for mod in pkgutil.walk_packages(tftrace.__path__, "tftrace."):
        if not mod.name.startswith(("tftrace.capture", "tftrace.__main__")):
            importlib.import_module(mod.name)
    for name in ("trace", "step", "load", "analyze", "diff", "TraceCallback"):
        assert callable(getattr(tftrace, name)), name
