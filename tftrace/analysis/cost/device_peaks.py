"""What each device can do at best, from what the trace (or the capture) says of it: FLOP/s per
precision and memory bandwidth, with where each figure comes from. Where nothing says, the
peak is unknown (None), never guessed.

  GPU (XSpace): the device plane's clock (kHz), SM count and compute capability, times XProf's
      per-capability table of FLOPs per SM per cycle; its peak is the maximum over precisions,
      as XProf's roofline takes it; bandwidth is the plane's `memory_bandwidth`, as recorded.
  TPU: the plane's `peak_teraflops_per_second` and `peak_hbm_bw_gigabytes_per_second`.
  GPU (PyTorch): the device's name in the trace's deviceProperties, looked up in a table of
      data-sheet figures (peak_tables.DATA_SHEETS); a name not in it has no peak.
  CPU: the sidecar's `host_peaks`, measured on the host by the capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tftrace.analysis.cost.peak_tables import AMD, AMD_BY_CAPABILITY, DATA_SHEETS, NVIDIA
from tftrace.model.events import Trace

_XPROF = ("fp32", "fp16")  # XProf's peak: the largest of these on either kind of unit (its "maximum")


@dataclass(frozen=True)
class Peak:
    """A device's best FLOP/s (by precision, and the maximum) and memory bandwidth."""

    flops_per_s: float | None = None  # the maximum over precisions (XProf's peak)
    by_precision: dict = field(default_factory=dict)  # precision -> FLOP/s
    bytes_per_s: float | None = None
    source: str = ""  # where the figures come from, in a phrase
    name: str = ""  # the device, as the trace names it

    def at(self, precision: str) -> float | None:
        """The peak at a precision, else None."""
        return self.by_precision.get(precision)


def device_peaks(trace: Trace) -> dict[tuple[str, str], Peak]:
    """(host, plane) -> its peak, for every device whose capabilities the trace states."""
    out = {}
    for key, stats in trace.costs.devices.items():
        peak = _tpu(stats) or _kineto(stats) or _gpu(stats)
        if peak is not None:
            out[key] = peak
    return out


def host_peak(sidecar: dict) -> Peak | None:
    """The CPU's peaks the capture measured and wrote into the sidecar (`host_peaks`)."""
    found = sidecar.get("host_peaks") if isinstance(sidecar, dict) else None
    if not isinstance(found, dict):
        return None
    rates = found.get("flops_per_s") if isinstance(found.get("flops_per_s"), dict) else {}
    by = {_precision(k): float(v) for k, v in rates.items() if _number(v) and float(v) > 0}
    bandwidth = found.get("bytes_per_s")
    bandwidth = float(bandwidth) if _number(bandwidth) and float(bandwidth) > 0 else None
    if not by and bandwidth is None:
        return None
    how = str(found.get("how") or "measured on this host by the capture")
    threads = found.get("threads")
    if _number(threads):
        how += f" ({int(threads)} threads)"
    return Peak(max(by.values()) if by else None, by, bandwidth, how, "CPU")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "tensorfloat32": "tf32",
           "int8": "int8", "float8": "fp8"}


def _precision(dtype: str) -> str:
    return _DTYPES.get(str(dtype).lower(), str(dtype).lower())


def _tpu(stats: dict) -> Peak | None:
    tflops = stats.get("peak_teraflops_per_second")
    if not _number(tflops) or tflops <= 0:
        return None
    gbs = stats.get("peak_hbm_bw_gigabytes_per_second")
    flops = float(tflops) * 1e12
    return Peak(flops, {"bf16": flops}, float(gbs) * 1e9 if _number(gbs) and gbs > 0 else None,
                "the TPU plane's peak_teraflops_per_second and peak_hbm_bw_gigabytes_per_second",
                str(stats.get("device_type_string", "TPU")))


def _gpu(stats: dict) -> Peak | None:
    clock, cores = stats.get("clock_rate"), stats.get("core_count")
    major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
    bandwidth = stats.get("memory_bandwidth")
    bandwidth = float(bandwidth) if _number(bandwidth) and bandwidth > 0 else None
    vendor = str(stats.get("device_vendor", ""))
    name = str(stats.get("gpu_device_name", "")) or vendor or "GPU"
    if not (_number(clock) and _number(cores) and _number(major) and clock > 0 and cores > 0):
        return Peak(None, {}, bandwidth, "the device plane's memory_bandwidth (no clock or cores for a FLOP peak)",
                    name) if bandwidth else None
    ghz = clock / 1e6  # the stat is in kHz
    minor = minor if _number(minor) else 0
    if vendor.lower().startswith("amd"):
        arch = str(stats.get("device_name", ""))
        arch = arch if arch.startswith("gfx") else AMD_BY_CAPABILITY.get((major, minor), "")
        if arch not in AMD:
            return Peak(None, {}, bandwidth, f"AMD GPU of capability {major}.{minor}: no FLOP table for it", name)
        general, tensor = AMD[arch]
        what = f"{int(cores)} CUs x {ghz:g} GHz x FLOPs per CU per cycle ({arch}, AMD's CDNA whitepaper figures)"
    else:
        capability = major * 10 + minor
        known = sorted(NVIDIA)
        below = [c for c in known if c <= capability]
        general, tensor = NVIDIA[below[-1] if below else known[0]]
        assumed = "" if vendor else "; the plane names no vendor: read as NVIDIA's capability"
        what = (f"{int(cores)} SMs x {ghz:g} GHz x FLOPs per SM per cycle (compute capability {major}.{minor}, "
                f"NVIDIA's whitepaper figures as XProf tabulates them{assumed})")
    scale = cores * ghz * 1e9
    by = {p: max(general.get(p, 0), tensor.get(p, 0)) * scale for p in set(general) | set(tensor)}
    if "tf32" not in by and "fp32" in general:
        by["tf32"] = general["fp32"] * scale
    if "fp32" not in by:
        by["fp32"] = general.get("fp32", 0) * scale
    best = max([general.get(p, 0) for p in _XPROF] + [tensor.get(p, 0) for p in _XPROF] + [tensor.get("tf32", 0)
                if not vendor.lower().startswith("amd") else 0]) * scale
    source = what + ("; bandwidth: the plane's memory_bandwidth" if bandwidth else "; no bandwidth recorded")
    return Peak(best or None, {p: v for p, v in by.items() if v > 0}, bandwidth, source, name)


def _kineto(stats: dict) -> Peak | None:
    if stats.get("source") != "kineto":
        return None
    name = str(stats.get("name", ""))
    match = max((k for k in DATA_SHEETS if k.lower() in name.lower()), key=len, default=None)
    if match is None:
        return Peak(None, {}, None, f"no data-sheet figures for '{name}' (PyTorch records no clock or bandwidth)",
                    name)
    tflops, gbs = DATA_SHEETS[match]
    by = {p: v * 1e12 for p, v in tflops.items()}
    best = max(v for p, v in by.items() if p in ("fp32", "tf32", "fp16", "bf16"))
    return Peak(best, by, gbs * 1e9, f"data-sheet figures for {match} (the trace names the device, not its clock)",
                name)
