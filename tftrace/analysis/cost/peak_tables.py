"""Figures devices are built to reach: FLOPs per cycle per streaming multiprocessor (NVIDIA, by
compute capability) or per compute unit (AMD, by architecture), as the vendors' architecture
whitepapers give them and XProf's roofline uses them; and data-sheet peaks by device name for
traces that name a GPU but not its clock (PyTorch's)."""

from __future__ import annotations

# Precisions, as kernel names and op dtypes are read (read/hlo.py precision()).
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")

# compute capability (major * 10 + minor) -> (general cores per cycle, tensor cores per cycle), each
# {precision: FLOPs per SM per cycle}; dense figures (no structured sparsity). "tf32" is the tensor
# cores' fp32 path.
NVIDIA = {
    100: ({"fp64": 148, "fp32": 296, "bf16": 592, "fp16": 592, "int8": 1184},
          {"fp64": 148, "tf32": 4096, "bf16": 8192, "fp16": 8192, "fp8": 16384, "int8": 16384}),
    90: ({"fp64": 128, "fp32": 256, "bf16": 512, "fp16": 512, "int8": 1024},
         {"fp64": 256, "tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192, "int8": 8192}),
    89: ({"fp64": 128, "fp32": 256, "bf16": 256, "fp16": 256, "int8": 512},
         {"tf32": 512, "bf16": 1024, "fp16": 1024, "fp8": 2048, "int8": 2048}),
    86: ({"fp64": 128, "fp32": 256, "bf16": 256, "fp16": 256, "int8": 512},
         {"tf32": 256, "bf16": 512, "fp16": 1024, "int8": 2048}),
    80: ({"fp64": 64, "fp32": 128, "bf16": 256, "fp16": 512, "int8": 512},
         {"fp64": 128, "tf32": 1024, "bf16": 2048, "fp16": 2048, "int8": 4096}),
    75: ({"fp64": 64, "fp32": 128, "fp16": 256, "int8": 512}, {"fp16": 1024, "int8": 2048}),
    70: ({"fp64": 64, "fp32": 128, "fp16": 256, "int8": 512}, {"fp16": 1024}),
    61: ({"fp64": 8, "fp32": 256, "fp16": 4, "int8": 1024}, {}),
    60: ({"fp64": 64, "fp32": 128, "fp16": 256, "int8": 512}, {}),
    50: ({"fp64": 4, "fp32": 256}, {}),
    30: ({"fp64": 128, "fp32": 384}, {}),
    20: ({"fp64": 8, "fp32": 64}, {}),
}

# AMD architecture -> (vector units, matrix cores), FLOPs per compute unit per cycle.
AMD = {
    "gfx908": ({"fp64": 64, "fp32": 128}, {"fp32": 256, "bf16": 512, "fp16": 1024, "int8": 1024}),
    "gfx90a": ({"fp64": 128, "fp32": 128}, {"fp64": 256, "fp32": 256, "bf16": 1024, "fp16": 1024, "int8": 1024}),
    "gfx942": ({"fp64": 128, "fp32": 256, "fp16": 256},
               {"fp64": 256, "fp32": 256, "tf32": 1024, "bf16": 2048, "fp16": 2048, "fp8": 4096, "int8": 4096}),
    "gfx950": ({"fp64": 128, "fp32": 256, "fp16": 256},
               {"fp64": 128, "fp32": 256, "bf16": 4096, "fp16": 4096, "fp8": 8192, "int8": 8192}),
}
AMD_BY_CAPABILITY = {(9, 4): "gfx942", (9, 5): "gfx950"}  # where a trace names the capability, not the chip

# Data sheets (dense TFLOP/s by precision, memory GB/s) by a part of the device name PyTorch
# records; the longest matching key wins. Only what a trace cannot measure: labelled as such.
DATA_SHEETS = {
    "V100-SXM2": ({"fp64": 7.8, "fp32": 15.7, "fp16": 125}, 900),
    "V100-DGXS": ({"fp64": 7.8, "fp32": 15.7, "fp16": 125}, 900),
    "V100-PCIE": ({"fp64": 7.0, "fp32": 14.0, "fp16": 112}, 900),
    "T4": ({"fp32": 8.1, "fp16": 65, "int8": 130}, 320),
    "A100-SXM4-40GB": ({"fp64": 19.5, "fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312, "int8": 624}, 1555),
    "A100-SXM4-80GB": ({"fp64": 19.5, "fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312, "int8": 624}, 2039),
    "A100-PCIE-40GB": ({"fp64": 19.5, "fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312, "int8": 624}, 1555),
    "A100 80GB PCIe": ({"fp64": 19.5, "fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312, "int8": 624}, 1935),
    "A10G": ({"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125, "int8": 250}, 600),
    "L4": ({"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5, "int8": 242.5}, 300),
    "H100 80GB HBM3": ({"fp64": 67, "fp32": 67, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9,
                        "int8": 1978.9}, 3350),
    "H100 PCIe": ({"fp64": 51, "fp32": 51, "tf32": 378, "bf16": 756, "fp16": 756, "fp8": 1513, "int8": 1513}, 2000),
    "H200": ({"fp64": 67, "fp32": 67, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "int8": 1978.9},
             4800),
    "MI250X": ({"fp64": 95.7, "fp32": 95.7, "bf16": 383, "fp16": 383, "int8": 383}, 3276.8),
    "MI300X": ({"fp64": 163.4, "fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9,
                "int8": 2614.9}, 5300),
}
