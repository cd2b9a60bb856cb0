"""Read the metadata `TraceCallback` saves beside a run (`tftrace_run.json`), each field checked:
a field of the wrong type is left out with a note, never a traceback."""

from __future__ import annotations

from tftrace.read.checked_json import read_checked


# The fields the analyses read, and what each must be.
_FIELDS = {
    "mode": str, "model": str, "tensorflow_version": str, "keras_version": str,
    "batch_size": (int, type(None)), "params": int, "trainable_params": int,
    "label": str, "layers": list, "layer_names": list, "layer_params": dict, "regions": list, "steps": list,
    "cut_short": dict, "untraced": dict,
}


def read_sidecar(path: str) -> tuple[dict, list[str]]:
    """(fields, problems): the sidecar's well-formed fields, and a note for what was left out."""
    fields, problems = read_checked(path, "sidecar", lambda data: [k for k, kind in _FIELDS.items()
                                                                   if k in data and not _fits(data[k], kind, k)])
    return fields or {}, problems


def _fits(value, kind, key: str) -> bool:
    if isinstance(value, bool) and kind is int:
        return False
    if not isinstance(value, kind):
        return False
    if key == "layers":
        return all(isinstance(x, dict) and isinstance(x.get("name", ""), str) and isinstance(x.get("class", ""), str)
                   for x in value)
    if key in ("layer_names", "regions"):
        return all(isinstance(x, str) for x in value)
    if key == "layer_params":
        return all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items())
    return True
