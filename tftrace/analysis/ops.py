"""Op attribution: self time per op, and totals per layer and per category."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.classify import classify
from tftrace.analysis.sums import exact_sums
from tftrace.events import Trace


@dataclass(frozen=True)
class OpRow:
    name: str
    type: str
    category: str
    layer: str
    phase: str
    device: str  # "host", or the device kind ("GPU", "TPU") whose planes ran it
    count: int
    self_ps: int
    share: float  # of all op self time, host and device together (OpStats.total_ps)
    eager: bool = False


@dataclass(frozen=True)
class LayerRow:
    layer: str
    self_ps: int
    share: float
    params: int = -1  # trainable + non-trainable parameters, when the sidecar knows them


@dataclass(frozen=True)
class CategoryRow:
    category: str
    self_ps: int
    share: float


@dataclass(frozen=True)
class OpStats:
    """Ops ranked by self time, and their totals per layer and per category.

    Op shares are of all op self time (host and device); layer and category shares are of the
    main side's op time: the device's where there is one (what the step waits for), else the host's.
    """

    ops: tuple[OpRow, ...]
    layers: tuple[LayerRow, ...]
    categories: tuple[CategoryRow, ...]
    host_self_ps: int
    device_self_ps: int
    model_op: OpRow | None = None  # the main side's top op outside the input pipeline

    @property
    def main_side(self) -> str:
        return "device" if self.device_self_ps else "host"


def op_table(trace: Trace, eager_layer: np.ndarray | None = None, eager_names: list[str] | None = None) -> pd.DataFrame:
    """One row per op name (and side, and layer for eager ops), with its attribution, count
    and total self time. `eager_layer` gives eager op events the layer their call order shows."""
    ev = trace.events
    if not trace.ops or ev.empty:
        return _empty_table()
    codes = np.fromiter(trace.ops, np.int64, len(trace.ops))
    on_device = trace.on_lines(lambda ln: ln.on_device)
    selected = np.flatnonzero(trace.named(codes))
    layer = eager_layer[selected] + 1 if eager_layer is not None else 0
    n_layers = len(eager_names or []) + 1
    key = (ev["name"].to_numpy()[selected] * 2 + on_device[selected]) * n_layers + layer
    space = (len(trace.names) * 2 + 2) * n_layers
    all_counts = np.bincount(key, minlength=space)
    uniq = np.flatnonzero(all_counts)
    counts = all_counts[uniq]
    self_ps = exact_sums(key, ev["self_ps"].to_numpy()[selected], space)[uniq]
    layer_names = frozenset(trace.sidecar.get("layer_names", ()))
    device_kind = _device_kind(trace)
    rows = []
    for k, c, s in zip(uniq.tolist(), counts.tolist(), self_ps.tolist()):
        code, dev, lay = k // n_layers // 2, (k // n_layers) % 2, k % n_layers
        op = trace.ops[code]
        att = classify(op, layer_names)
        layer_name = eager_names[lay - 1] if lay else att.layer
        rows.append((op.name, op.type, att.category, layer_name, att.phase,
                     device_kind if dev else "host", c, s, op.kind == "eager"))
    table = pd.DataFrame(rows, columns=["name", "type", "category", "layer", "phase", "device",
                                        "count", "self_ps", "eager"])
    # One op can appear under several event names (e.g. a kernel per GPU): merge them.
    keys = ["name", "type", "category", "layer", "phase", "device", "eager"]
    return table.groupby(keys, as_index=False, sort=False)[["count", "self_ps"]].sum()


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame({"name": [], "type": [], "category": [], "layer": [], "phase": [], "device": [],
                         "count": pd.Series([], dtype=np.int64), "self_ps": pd.Series([], dtype=np.int64),
                         "eager": pd.Series([], dtype=bool)})


def _device_kind(trace: Trace) -> str:
    kinds = sorted({ln.plane.split(":")[1] for ln in trace.lines if ln.on_device and ":" in ln.plane})
    return "/".join(kinds) or "device"


SIDES = ("all", "host", "device")


def op_stats(trace: Trace, table: pd.DataFrame | None = None, top: int | None = None,
             side: str = "all") -> OpStats:
    """Ops, layers and categories ranked by self time (ties by name); `top` cuts each list;
    `side` keeps only host or only device ops in the op list (shares keep one total)."""
    table = op_table(trace) if table is None else table
    on_dev = (table["device"] != "host").to_numpy()
    host_total = int(table.loc[~on_dev, "self_ps"].sum())
    dev_total = int(table.loc[on_dev, "self_ps"].sum())
    share = table["self_ps"].to_numpy(np.float64) / max(host_total + dev_total, 1)
    table = table.assign(share=share, on_dev=on_dev).sort_values(["self_ps", "name"], ascending=[False, True])
    main = table[table["on_dev"]] if dev_total else table
    listed = table if side == "all" else table[table["on_dev"] == (side == "device")]
    ops = tuple(_row(r) for r in (listed if top is None else listed.head(top)).itertuples(index=False))
    model = main[main["category"] != "input"].head(1)
    main_total = dev_total or host_total
    params = trace.sidecar.get("layer_params", {})
    layers = tuple(LayerRow(k, v, _share(v, main_total), int(params.get(k, -1)))
                   for k, v in _ranked(main[main["layer"] != ""], "layer", top))
    cats = tuple(CategoryRow(k, v, _share(v, main_total)) for k, v in _ranked(main, "category", top))
    return OpStats(ops, layers, cats, host_total, dev_total,
                   next((_row(r) for r in model.itertuples(index=False)), None))


def _row(r) -> OpRow:
    return OpRow(r.name, r.type, r.category, r.layer, r.phase, r.device, int(r.count), int(r.self_ps),
                 round(float(r.share), 6), bool(r.eager))


def _ranked(table: pd.DataFrame, key: str, top: int | None) -> list[tuple[str, int]]:
    totals = table.groupby(key)["self_ps"].sum()
    items = sorted(((str(k), int(v)) for k, v in totals.items()), key=lambda kv: (-kv[1], kv[0]))
    return items[:top] if top else items


def _share(part: int, total: int) -> float:
    return round(part / total, 6) if total else 0.0
