"""XLA ops as the profiler records them: HLO op names, GPU kernels inside CUDA graphs, precision."""

from __future__ import annotations

import re

from tftrace.model.names import Op, names_convolution

# `fusion.12`, `fusion_12`, `cudnn-conv-bias-activation.9`: HLO names with XLA's unique suffix.
_SUFFIX = re.compile(r"(?:[._]\d+)+\Z")
# An XLA:CPU thunk's event name is its HLO instruction's (`ynn_fusion.1`, `wrapped_tanh`, `dot.3`).
_HLO_NAME = re.compile(r"[a-z][a-z0-9_\-]*(?:\.\d+)*\Z")
# Host threads on which XLA:CPU runs a module's thunks (JAX's CPU client, TF's XLA on CPU).
XLA_CPU_THREADS = ("tf_XLAEigen", "tf_XLAPjRtCpuClient", "tf_XLACpu", "XLAEigen", "tf_pjrt_cpu")
_COMMAND_BUFFER = "command_buffer"


def hlo_type(hlo: str) -> str:
    """An HLO instruction's kind, without XLA's unique suffix: `loop_add_fusion.2` -> `loop_add_fusion`."""
    return _SUFFIX.sub("", hlo) or hlo


def is_hlo_name(name: str) -> bool:
    return _HLO_NAME.match(name) is not None


def cpu_thunk(name: str) -> Op:
    """An XLA:CPU thunk event: the HLO instruction the host runs as part of a module."""
    return Op(name, hlo_type(name), "xla")


def kernel_type(kernel: str) -> str:
    """What a GPU kernel does, from its name: library kernels by library and kind, XLA's own
    (fusions, `wrapped_*`) by HLO kind."""
    short = short_kernel(kernel)
    lower = short.lower()
    if names_convolution(lower):
        return "cudnn-conv"
    if "gemm" in lower and ("cublas" in lower or "xmma" in lower or "cutlass" in lower or lower.startswith(("sgemm", "hgemm"))):
        return "cublas-gemm"
    return hlo_type(short)


def short_kernel(kernel: str) -> str:
    """`void ns::k<float, 3>(int, float*)` -> `ns::k`; a plain name stays as it is."""
    head = kernel.split("(")[0].split("<")[0].split()
    return head[-1] if head else kernel


def hlo_op(hlo: str, module: str, source: str, kernel: str) -> tuple[str, Op]:
    """A GPU kernel an XLA module ran: named by its HLO instruction, or inside a CUDA graph
    (`command_buffer_N`, which says nothing of the work) by the kernel itself."""
    if hlo.startswith(_COMMAND_BUFFER):
        short = short_kernel(kernel)
        name = f"{module}/{short}" if module else short
        return f"{name}:{kernel_type(kernel)}", Op(name, kernel_type(kernel), "device", "", precision(kernel))
    name = f"{module}/{hlo}" if module else hlo
    kind = hlo_type(hlo)
    return f"{name}:{kind}", Op(name, kind, "device", source, precision(kernel))


def precision(kernel: str) -> str:
    """The arithmetic a GPU kernel's name tells: cuBLAS and cuDNN kernels name their input and
    compute types (`..._f32f32_tf32f32_f32_...` is fp32 data on TF32 tensor cores, `s1688gemm`
    is TF32, `h1688gemm` fp16); XLA's own kernels say nothing ("")."""
    k = kernel.lower()
    if "e4m3" in k or "e5m2" in k or "fp8" in k:
        return "fp8"
    if "bf16" in k:
        return "bf16"
    if "tf32" in k or "s1688" in k or "s16816" in k:
        return "tf32"
    if "f16" in k or "h1688" in k or "h16816" in k or "half" in k or "hgemm" in k:
        return "fp16"
    if "f32" in k or "sgemm" in k or "fp32" in k:
        return "fp32"
    return ""
