"""What the capture counted where the trace holds no shapes (TensorFlow on CPU): the sidecar's
`cost` record, FLOPs per step by layer and phase from the backend's own counter, read at that
granularity and never spread over ops."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CapturedCost:
    source: str  # what counted it, as the capture says
    step: str  # train | test | predict: the step it is of
    batch_size: int | None
    step_flops: float | None  # one step, everything counted
    layers: dict = field(default_factory=dict)  # layer -> (forward, backward) FLOPs per step
    other: dict = field(default_factory=dict)  # loss, optimizer... -> FLOPs per step


def captured_cost(sidecar: dict) -> CapturedCost | None:
    """The sidecar's `cost` record; None where there is none or it holds no figure. Entries of
    the wrong type are left out, never trusted."""
    cost = sidecar.get("cost") if isinstance(sidecar, dict) else None
    if not isinstance(cost, dict):
        return None
    layers = {}
    for name, phases in (cost.get("layers") or {}).items() if isinstance(cost.get("layers"), dict) else ():
        if isinstance(phases, dict):
            fwd, bwd = _flops(phases.get("forward")), _flops(phases.get("backward"))
            if fwd is not None or bwd is not None:
                layers[str(name)] = (fwd or 0.0, bwd or 0.0)
    other = {str(k): v for k, v in ((k, _flops(v)) for k, v in (cost.get("other") or {}).items()
                                    if isinstance(cost.get("other"), dict)) if v is not None}
    step_flops = _flops(cost.get("step_flops"))
    if step_flops is None and not layers:
        return None
    batch = cost.get("batch_size")
    return CapturedCost(str(cost.get("source") or "the capture"), str(cost.get("step") or ""),
                        batch if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0 else None,
                        step_flops, layers, other)


def _flops(value) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None
