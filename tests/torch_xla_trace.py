"""A small PyTorch/XLA training trace built by hand (no public one could be found to copy): the
XSpace a TPU run writes, from PyTorch/XLA's documented event names.

Host (`/host:CPU`, the main thread): per step, the Python that traces the model lazily (no
events), `loss.item()` (a `SyncTensorsGraph` that cuts the graph, then
`PjRtComputationClient::TransferFromServer` waiting for the device), and `xm.mark_step()`
(`StepMarker` > `SyncLiveTensorsGraph` > `SyncTensorsGraph` > `CollectSyncTensors`,
`TensorCollectionBarrier`, `ScheduleSyncTensorsGraph`); each batch in through
`PjRtComputationClient::TransferToServer`; `XLAGraphExecutor::Compile` > `PjRtComputationClient::Compile`
in the first step and again where a new batch shape arrives (`recompile_at`).
Device (`/device:TPU:0`): per step, the graph `.item()` cut off (`SyncTensorsGraph.100`) and the
step's graph (`train_step.312`) on `XLA Modules`; their ops on `XLA Ops`, each op's event
metadata holding `hlo_category` and `tf_op` as PyTorch/XLA's HLO metadata gives it
(`XLA_HLO_DEBUG=1`): `<scope>/aten__<op>:aten__<op>`, scopes from `xp.Trace`.

    write_trace(path, steps=8, recompile_at=(4,)) -> path of the .xplane.pb
"""

from __future__ import annotations

import os

from tftrace.read.schema import XSpace

MS = 1_000_000_000  # ps
_PERIOD = 20 * MS
# (op name on the device, hlo_category, PyTorch/XLA's op_name (scope/op_type), its op_type, ms)
_FORWARD = (("fusion.1", "convolution fusion", "Net/conv1/aten__convolution_overrideable", 0.9),
            ("fusion.2", "loop fusion", "Net/conv1/aten__relu", 0.2),
            ("fusion.3", "convolution fusion", "Net/fc/aten__addmm", 0.6),
            ("fusion.4", "loop fusion", "aten__nll_loss_forward", 0.3))
_BACKWARD = (("fusion.10", "loop fusion", "aten__nll_loss_backward", 0.3),
             ("fusion.11", "convolution fusion", "aten__mm", 1.2),
             ("fusion.12", "loop fusion", "aten__threshold_backward", 0.4),
             ("fusion.13", "convolution fusion", "aten__convolution_backward_overrideable", 2.0),
             ("fusion.14", "loop fusion", "optimizer/aten__addcdiv", 0.7),
             ("fusion.15", "loop fusion", "optimizer/aten__sqrt", 0.3))


class _Plane:
    def __init__(self, plane, start_ns: int):
        self.plane, self.start_ns = plane, start_ns
        self._events: dict[str, int] = {}
        self._stats: dict[str, int] = {}

    def stat(self, name: str) -> int:
        if name not in self._stats:
            sid = len(self._stats) + 1
            self._stats[name] = sid
            self.plane.stat_metadata[sid].id = sid
            self.plane.stat_metadata[sid].name = name
        return self._stats[name]

    def meta(self, name: str, **stats) -> int:
        if name not in self._events:
            mid = len(self._events) + 1
            self._events[name] = mid
            md = self.plane.event_metadata[mid]
            md.id, md.name = mid, name
            for key, value in stats.items():
                st = md.stats.add()
                st.metadata_id = self.stat(key)
                if isinstance(value, int):
                    st.int64_value = value
                else:
                    st.str_value = value
        return self._events[name]

    def line(self, lid: int, name: str):
        line = self.plane.lines.add()
        line.id, line.display_id, line.name, line.timestamp_ns = lid, lid, name, self.start_ns
        return line

    def add(self, line, name: str, start_ps: int, dur_ps: int, **meta_stats) -> None:
        ev = line.events.add()
        ev.metadata_id = self.meta(name, **meta_stats)
        ev.offset_ps, ev.duration_ps = int(start_ps), int(dur_ps)


def write_trace(path: str, steps: int = 8, recompile_at: tuple[int, ...] = (4,), item: bool = True) -> str:
    """Write the trace to `path` (a `.xplane.pb` file); see the module's docstring."""
    space = XSpace()
    space.hostnames.append("tpu-vm")
    start_ns = 1_700_000_000_000_000_000
    host = _Plane(space.planes.add(), start_ns)
    host.plane.id, host.plane.name = 1, "/host:CPU"
    main = host.line(1, "python")
    device = _Plane(space.planes.add(), start_ns)
    device.plane.id, device.plane.name = 2, "/device:TPU:0"
    modules, ops = device.line(1, "XLA Modules"), device.line(2, "XLA Ops")
    t = MS
    for step in range(steps):
        compile_ps = 40 * MS if step == 0 or step in recompile_at else 0
        host.add(main, "PjRtComputationClient::TransferToServer", t + MS // 2, MS // 4)
        cut = t + 6 * MS
        if item:  # loss.item(): the forward graph is cut off, run, and its loss read back
            host.add(main, "SyncTensorsGraph", cut, MS // 2)
            host.add(main, "CollectSyncTensors", cut + MS // 20, MS // 10)
            host.add(main, "TensorCollectionBarrier", cut + MS // 5, MS // 10)
            host.add(main, "ScheduleSyncTensorsGraph", cut + 7 * MS // 20, MS // 10)
            _run(device, modules, ops, "SyncTensorsGraph.100(111)", cut + MS // 2, _FORWARD)
            host.add(main, "PjRtComputationClient::TransferFromServer", cut + MS // 2, 2 * MS + MS // 4)
        mark = t + 11 * MS
        host.add(main, "StepMarker", mark, MS + compile_ps)
        host.add(main, "SyncLiveTensorsGraph", mark + MS // 20, MS - MS // 10 + compile_ps)
        host.add(main, "SyncTensorsGraph", mark + MS // 10, MS - MS // 5 + compile_ps)
        host.add(main, "CollectSyncTensors", mark + MS // 5, MS // 10)
        if compile_ps:
            host.add(main, "XLAGraphExecutor::Compile", mark + MS // 3, compile_ps)
            host.add(main, "PjRtComputationClient::Compile", mark + MS // 3 + MS // 10, compile_ps - MS // 5)
        host.add(main, "TensorCollectionBarrier", mark + MS // 3 + compile_ps, MS // 4)
        host.add(main, "ScheduleSyncTensorsGraph", mark + 2 * MS // 3 + compile_ps, MS // 10)
        ops_ms = _FORWARD + _BACKWARD if not item else _BACKWARD
        _run(device, modules, ops, "train_step.312(222)", mark + MS + compile_ps, ops_ms)
        t += _PERIOD + compile_ps
    with open(path, "wb") as f:
        f.write(space.SerializeToString())
    return path


def _run(device: _Plane, modules, ops, module: str, start: int, plan) -> None:
    """One module run on the device, its ops back to back."""
    total = int(sum(ms for *_, ms in plan) * MS)
    device.add(modules, module, start, total)
    at = start
    for name, category, op_name, ms in plan:
        op_type = op_name.rsplit("/", 1)[-1]
        device.add(ops, name, at, int(ms * MS), hlo_category=category, tf_op=f"{op_name}:{op_type}",
                   program_id=312 if module.startswith("train") else 100)
        at += int(ms * MS)


if __name__ == "__main__":  # python tests/torch_xla_trace.py OUT_DIR: a run folder to look at
    import sys
    out = os.path.join(sys.argv[1], "plugins", "profile", "2026_01_01_00_00_00")
    os.makedirs(out, exist_ok=True)
    print(write_trace(os.path.join(out, "tpu-vm.xplane.pb")))
