"""The program's configuration as the sidecar recorded it (what decides cost and is not in the
trace): the compiled loss and metrics, each weight's regularizer and constraint, the optimizer
and its extras, dtype policies, callbacks, how the step runs, the input's kind. Stock captures
have no sidecar: every fact is then unknown, and the analyses say so."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Program:
    known: bool = False  # the sidecar recorded the program's configuration
    loss: str = ""
    metrics: tuple[str, ...] = ()  # compiled metrics by name
    metric_configs: dict = field(default_factory=dict)  # name -> "AUC(num_thresholds=2000)"
    regularized: tuple[str, ...] = ()  # "hidden.kernel: L2(l2=0.0001)"
    constrained: tuple[str, ...] = ()  # "hidden.kernel: MaxNorm(max_value=2)"
    optimizer: str = ""  # its class
    optimizer_extras: tuple[str, ...] = ()  # "use_ema", "clipnorm=1.0", "weight_decay=0.004", "loss scaling"
    trainable_weights: int = -1
    dtype_policy: str = ""  # the global policy
    layer_classes: dict = field(default_factory=dict)  # layer -> class
    layer_policies: dict = field(default_factory=dict)  # layer -> its dtype policy, where not the global one
    outputs: tuple = ()  # the layers whose outputs are the model's (their width is what it predicts)
    layer_config: dict = field(default_factory=dict)  # layer -> what of its config decides cost ("data_format=...")
    callbacks: tuple[str, ...] = ()
    steps_per_execution: int | None = None
    jit_compile: str = ""
    run_eagerly: bool | None = None
    input: str = ""  # tf.data | PyDataset | generator | arrays | ...
    distribution: str = ""

    @property
    def unknown(self) -> tuple[str, ...]:
        """The facts a finding could have used that this capture did not record."""
        return () if self.known else ("loss, metrics, regularizers, constraints, optimizer settings and callbacks "
                                      "(no tftrace sidecar: captured without TraceCallback / tftrace.trace)",)


def program_of(sidecar: dict) -> Program:
    """The Program a run's sidecar describes (an empty, unknown one for stock captures)."""
    layers = sidecar.get("layers") or []
    classes = {x.get("name", ""): x.get("class", "") for x in layers if isinstance(x, dict)}
    policy = str(sidecar.get("dtype_policy") or "")
    outputs = tuple(x.get("name", "") for x in layers if isinstance(x, dict) and x.get("output"))
    policies = {x["name"]: x["dtype_policy"] for x in layers if isinstance(x, dict) and x.get("dtype_policy")
                and x.get("dtype_policy") != policy and x.get("name")}
    data = sidecar.get("program")
    if not isinstance(data, dict):
        return Program(layer_classes=classes, layer_policies=policies, dtype_policy=policy, outputs=outputs)
    opt = data.get("optimizer") or {}
    metrics = [m for m in data.get("metrics") or [] if isinstance(m, dict)]
    return Program(
        known=True, loss=str(data.get("loss") or ""), metrics=tuple(str(m.get("name", "")) for m in metrics),
        metric_configs={str(m.get("name", "")): str(m.get("config", "")) for m in metrics},
        regularized=tuple(_weights(data, "regularizer")), constrained=tuple(_weights(data, "constraint")),
        optimizer=str(opt.get("class") or ""), optimizer_extras=tuple(str(x) for x in opt.get("extras") or ()),
        trainable_weights=int(data.get("trainable_weights", -1)), dtype_policy=policy, layer_classes=classes,
        layer_policies=policies, outputs=outputs, layer_config={k: str(v) for k, v in (data.get("layer_config") or {}).items()},
        callbacks=tuple(str(c) for c in data.get("callbacks") or ()),
        steps_per_execution=data.get("steps_per_execution"), jit_compile=str(data.get("jit_compile", "")),
        run_eagerly=data.get("run_eagerly"), input=str(data.get("input") or ""),
        distribution=str(data.get("distribution") or ""))


def _weights(data: dict, key: str) -> list[str]:
    return [f"{w.get('weight', '')}: {w[key]}" for w in data.get("weights") or ()
            if isinstance(w, dict) and w.get(key)]
