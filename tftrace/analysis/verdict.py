"""The verdict: what a run is bound by, in a sentence, with XProf's input thresholds."""

from __future__ import annotations

from tftrace.analysis.pipeline_load import PipelineLoad
from tftrace.model.report import Breakdown, Verdict

HIGHLY_INPUT = 0.20  # XProf: input >= 20% of step time is "highly input-bound"
MODERATELY_INPUT = 0.05  # XProf: >= 5% "moderately input-bound"
PACED = 0.75  # the input pipeline works through at least this share of step time (see `paced`)

_TEXT = {
    "input": "waiting for input data takes {input:.0%} of step time; the model waits on the input pipeline, "
             "so a smaller or faster model will not make steps faster",
    "compute": "op execution takes {compute:.0%} of step time; the ops below are where time goes",
    "host_overhead": "host overhead (Python, framework dispatch, per-call setup) takes {host_overhead:.0%} of "
                     "step time, while the model's ops take {compute:.0%}; a lighter model will barely help",
    "idle": "{idle:.0%} of the time passes between steps, outside TensorFlow (Keras' loop and callbacks, or your "
            "Python between calls)",
}
# With a device, parts are seen from the device: compute is the device busy, host overhead the
# device idle while the host works, input the copies into the device.
_DEVICE_TEXT = {
    "compute": "the device is busy {compute:.0%} of step time; the ops below are where its time goes",
    "host_overhead": "the device is idle {host_overhead:.0%} of step time, waiting for the host (launches, Python, "
                     "input), while its ops take {compute:.0%}; a lighter model will barely help",
    "input": "copying input into the device takes {input:.0%} of step time",
}


# Where the input pipeline sets the step time though another part is larger (see `paced`).
_PACED_TEXT = {
    "busy": ("waiting for input data takes {input:.0%} of step time, and the input pipeline works through "
             "{busy:.0%} of it: it runs beside the model's ops ({compute:.0%}, on the same cores) and still "
             "cannot keep up, so it sets the step time; a smaller or faster model will not make steps faster"),
    "cores": ("the input pipeline's work takes {cores_share:.0%} of the {cores} cores' time during the steps "
              "({cpu:.0%} of the CPU work, the model's ops the rest): it runs beside the model's ops and slows "
              "them, so it sets the step time, though they take {compute:.0%} of it and waiting for input "
              "{input:.0%}; a smaller or faster model will barely help"),
}
PACED_CORES = 0.75  # the pipeline's work takes at least this share of the cores' time


def _parts(b: Breakdown) -> dict[str, float]:
    return {"input": b.input, "compute": b.compute, "host_overhead": b.host_overhead, "idle": b.idle}


def paced(b: Breakdown, device: bool, load: PipelineLoad | None) -> str:
    """Why the input pipeline sets the step time ("" when it does not). On the host only (with
    a device, the parts are seen from it), when it works beside the model's ops (a prefetch, a
    parallel map) and either "cores": its work fills the cores, so the model's ops run in what
    it leaves; or "busy": it works through most of the step and the step still waits for it
    past XProf's highly-input bar, so it takes longer than the rest of the step."""
    if device or load is None:
        return ""
    if load.core_share >= PACED_CORES:
        return "cores"
    return "busy" if b.input >= HIGHLY_INPUT and load.busy >= PACED else ""


def verdict(b: Breakdown, measured: bool, device: bool = False, load: PipelineLoad | None = None,
            steady: str = "", input_wait: float = 0.0) -> Verdict:
    """What the run is bound by: the largest part, unless the input pipeline sets the pace
    (`paced`, from its `load`). `steady`: the steps the parts leave out to judge the steady
    state, and why ("" when none is left out), said after the bound. `input_wait`: on device
    runs, the share of step time the device idles while the host waits for input (inside host
    overhead); past XProf's thresholds it is said too, as XProf counts it as input time."""
    if not measured:
        return Verdict("unknown", "no step time could be measured in this trace")
    bound, head, text = _judged(b, device, load)
    waiting = b.input + input_wait
    if device and bound != "input" and input_wait > 0 and waiting >= MODERATELY_INPUT:
        how = "highly" if waiting >= HIGHLY_INPUT else "moderately"
        text = text.split("; highly input-bound as well")[0].split("; moderately input-bound as well")[0]
        text += (f"; {how} input-bound as well ({waiting:.0%} of step time the device waits for input: the host "
                 f"waits for data {input_wait:.0%}, copies into the device {b.input:.0%})")
    return Verdict(bound, f"{head}{f' in the steady state ({steady})' if steady else ''}: {text}.")


def _judged(b: Breakdown, device: bool, load: PipelineLoad | None) -> tuple[str, str, str]:
    """(bound, the sentence's head, what backs it)."""
    parts = _parts(b)
    texts = {**_TEXT, **_DEVICE_TEXT} if device else _TEXT
    bound = max(parts, key=lambda k: (parts[k], k))
    if bound == "input":  # the largest of four parts is at least 25%: past XProf's 20% bar
        return "input", "Highly input-bound", texts["input"].format(**parts)
    why = paced(b, device, load)
    if why:
        text = _PACED_TEXT[why].format(busy=load.busy, cores_share=load.core_share, cores=load.cores,
                                       cpu=load.cpu_share, **parts)
        return "input", "Highly input-bound" if b.input >= HIGHLY_INPUT else "Input-bound", text
    # The largest part leads; input past XProf's thresholds comes second, never hidden.
    text = texts[bound].format(**parts)
    head = {"compute": "Compute-bound", "host_overhead": "Host-overhead-bound", "idle": "Idle-bound"}[bound]
    if b.input >= HIGHLY_INPUT:
        text += f"; highly input-bound as well ({b.input:.0%} waiting for data)"
    elif b.input >= MODERATELY_INPUT:
        text += f"; moderately input-bound as well ({b.input:.0%} waiting for data)"
    return bound, head, text
