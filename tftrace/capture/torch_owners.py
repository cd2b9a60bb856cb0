"""Name what owns a torch run's ops in its trace: each torch module's call (global module hooks,
`nn.Module: <name>` ranges, named as `model.named_modules()` names them), and Keras' loss, metrics
and optimizer steps on its torch backend (their methods wrapped on the instance). Never raises:
the names are a bonus."""

from __future__ import annotations

import threading
import weakref
from time import perf_counter_ns as own_ns  # a module's call runs on its own thread: no GIL wait to leave out

from tftrace.model.names import TORCH_MODULE as MODULE
# Keras' trainer on torch: what each wrapped method owns, the range it runs in, and the owner's kind.
_KERAS_PARTS = (("_compute_loss", "compile_loss", "loss"), ("compute_metrics", "compile_metrics", "metric"))


def mark_keras_owners(patches, model, sidecar: dict, clock=None) -> None:
    """Wrap Keras' loss, its loss tracker, its compiled metrics and its optimizer's `apply` on
    `model` (the instance, put back by `patches.restore()`) in `record_function` ranges, listed in
    the sidecar's `owner_ranges` as [range, kind, owner] ("" where the program's configuration
    names it): on torch, only these ranges tell the loss's and optimizer's ops from the step's."""
    from tftrace.capture.marks import marked
    owners = sidecar.setdefault("owner_ranges", [])
    try:
        import torch
        rf = torch.profiler.record_function
        targets = [(model, attr, name, kind, "") for attr, name, kind in _KERAS_PARTS]
        tracker = getattr(model, "_loss_tracker", None)
        if tracker is not None:
            targets.append((tracker, "update_state", "loss_tracker", "metric", "Keras' loss tracker and counters"))
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            targets.append((optimizer, "apply", str(getattr(optimizer, "name", "") or "optimizer"), "optimizer", ""))
        for obj, attr, name, kind, owner in targets:
            if patches.put(obj, attr, lambda fn, name=name: marked(fn, name, rf, clock)):
                owners.append([name, kind, owner])
    except Exception:  # what is marked so far stays marked, and is put back with the rest
        pass


class ModuleRanges:
    """While open, every torch module's call runs inside `record_function("nn.Module: <name>")`:
    a root module (one called outside any other) is named by its class, the modules under it as
    its `named_modules()` names them (`layer1.0.conv1`). Hooks' own time adds to
    `clock.hooks_ns`. Inside `torch.compile`'s tracing the hooks do nothing (no graph break)."""

    def __init__(self, clock=None, model=None):
        self._clock = clock
        self._names: dict[int, tuple] = {}  # id(module) -> (a weak reference to it, its name): no weakref made a call
        self._local = threading.local()
        self._handles: list = []
        if model is not None:
            self._name_tree(model)

    def open(self) -> bool:
        try:
            import torch
            from torch.nn.modules import module as nn_module
            # torch's fast range (a few us under the profiler, record_function's tens): a cpu_op event
            # the reader knows by its name; record_function where a torch has none.
            self._record = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None) or \
                torch.profiler.record_function
            self._compiling = getattr(torch.compiler, "is_compiling", lambda: False)
            self._handles = [nn_module.register_module_forward_pre_hook(self._enter),
                             nn_module.register_module_forward_hook(self._leave, always_call=True)]
            return True
        except Exception:
            self.close()
            return False

    def close(self) -> None:
        handles, self._handles = self._handles, []
        for h in handles:
            try:
                h.remove()
            except Exception:
                pass

    def _name_tree(self, root) -> None:
        try:
            top = type(root).__name__
            for path, module in root.named_modules():
                if self._known(module) is None:  # a Sequential's children are numbers: `Sequential.0`, not `0`
                    name = (f"{top}.{path}" if path.split(".")[0].isdigit() else path) if path else top
                    self._names[id(module)] = (weakref.ref(module), name)
        except Exception:
            pass

    def _known(self, module) -> str | None:
        entry = self._names.get(id(module))
        return entry[1] if entry is not None and entry[0]() is module else None

    def _name(self, module) -> str:
        name = self._known(module)
        if name is None:
            stack = getattr(self._local, "stack", None)
            if not stack:  # called outside any module: a root; name it and all under it
                self._name_tree(module)
            name = self._known(module) or type(module).__name__
        return name

    def _enter(self, module, args) -> None:
        began = own_ns()
        try:
            if self._compiling():
                return
            stack = getattr(self._local, "stack", None)
            if stack is None:
                stack = self._local.stack = []
            region = self._record(MODULE + self._name(module))
            region.__enter__()
            stack.append((module, region))
        except Exception:
            pass
        finally:
            if self._clock is not None:
                self._clock.hooks_ns += own_ns() - began

    def _leave(self, module, args, output) -> None:
        began = own_ns()
        try:
            stack = getattr(self._local, "stack", None)
            if stack and stack[-1][0] is module:
                stack.pop()[1].__exit__(None, None, None)
        except Exception:
            pass
        finally:
            if self._clock is not None:
                self._clock.hooks_ns += own_ns() - began
