"""PyTorch traces recorded with `record_shapes=True`: GEMM, convolution and attention FLOPs from
the ops' input shapes against torch.utils.flop_counter on the same step of a small model
(captured here on CPU); data-sheet peaks by device name, and none where the name is unknown."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import PUBLIC
from tftrace.analysis.cost.device_peaks import device_peaks
from tftrace.api import analyze
from tftrace.read.loader import load

pytest.importorskip("torch")
HERE = os.path.dirname(os.path.abspath(__file__))

_FAMILIES = {"gemm": ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm"),
             "conv": ("aten.convolution", "aten.convolution_backward"),
             "attention": ("aten._scaled_dot_product_flash_attention_for_cpu",
                           "aten._scaled_dot_product_flash_attention_for_cpu_backward")}
_OURS = {"gemm": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"),
         "conv": ("aten::convolution", "aten::convolution_backward"),
         "attention": ("aten::_scaled_dot_product_flash_attention_for_cpu",
                       "aten::_scaled_dot_product_flash_attention_for_cpu_backward")}


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """One training step profiled with shapes (after a warm-up step), and flop_counter's count of
    the same step, made in a process of their own (tests/torch_flops_run.py): flop_counter imports
    triton, which crashes a process where TensorFlow is loaded, as the test session's is."""
    out = tmp_path_factory.mktemp("torch")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "torch_flops_run.py"), str(out)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    counted = json.loads((out / "counts.json").read_text())
    return str(out / "trace"), counted["counts"], counted["attention"]


def test_gemm_conv_and_attention_flops_are_flop_counters(captured):
    path, counts, attention = captured
    trace = load(path)
    ours = {trace.names[code]: total.flops for (_h, code), total in trace.costs.totals.items()}
    for family, names in _FAMILIES.items():
        expected = sum(counts.get(n, 0) for n in names) or (attention if family == "attention" else 0)
        got = sum(ours.get(n, 0.0) for n in _OURS[family])
        assert expected > 0, family
        assert got == pytest.approx(expected, rel=0.01), family
    assert {"aten::linear", "aten::conv2d", "aten::matmul"}.isdisjoint(ours)  # counted once, where the work is


def test_the_report_carries_the_step_and_op_figures(captured):
    path, counts, attention = captured
    run = analyze(path, top=None).runs[0]
    assert run.steps.count == 1
    attention = 0 if any("attention" in k for k in counts) else attention
    assert run.flops_per_step == pytest.approx(sum(counts.values()) + attention, rel=0.01)
    assert run.mfu is None  # a CPU with no measured peak
    conv = next(o for o in run.ops if o.name == "aten::convolution_backward")
    assert conv.flops == pytest.approx(counts["aten.convolution_backward"], rel=0.01) and conv.bytes_accessed > 0
    assert "input shapes" in run.roofline.counted_by
    rows = [r for r in run.roofline.rows if r.scope == "op"]
    assert rows and all(r.flops_per_s and r.time_ps > 0 for r in rows)


def test_kineto_devices_get_data_sheet_peaks_by_name_or_none():
    v100 = os.path.join(PUBLIC, "pytorch__kineto", "tb_plugin", "samples", "resnet50_num_workers_0",
                        "worker0.1623143089861.pt.trace.json.gz")
    peak = next(iter(device_peaks(load(v100)).values()))
    assert peak.flops_per_s == pytest.approx(125e12) and peak.bytes_per_s == pytest.approx(900e9)
    assert "data-sheet" in peak.source
    generic = os.path.join(PUBLIC, "facebookresearch__HolisticTraceAnalysis", "tests", "data", "amd_trace",
                           "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    unknown = next(iter(device_peaks(load(generic)).values()))
    assert unknown.flops_per_s is None and "no data-sheet" in unknown.source


def test_a_2021_resnet_trace_costs_its_convolutions_and_reports_mfu():
    path = os.path.join(PUBLIC, "pytorch__kineto", "tb_plugin", "samples", "resnet50_num_workers_0",
                        "worker0.1623143089861.pt.trace.json.gz")
    run = analyze(path, top=None).runs[0]
    conv = next(o for o in run.ops if o.name == "aten::convolution")
    assert conv.flops > 1e11  # ResNet-50 at batch 32: ~130 GFLOP forward
    assert run.flops_per_step and 0 < run.mfu < 1
    # On a GPU run an op's roofline time is its kernels' (launched inside it, linked by correlation).
    row = next(r for r in run.roofline.rows if r.scope == "op" and r.name == "aten::convolution")
    assert 0 < row.time_ps < conv.self_ps * 100 and row.precision == "fp32" and row.bound == "compute"
