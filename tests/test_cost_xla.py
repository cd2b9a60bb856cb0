"""The cost model on XLA traces, with XProf as the oracle: every HLO op's FLOPs and bytes a run
against XProf's op profile, the devices' peaks against its roofline; the ops', layers' and
run's figures in the report; a module run inside CUDA graphs costed whole; a TPU's own stats."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest

from conftest import PUBLIC, sample
from tftrace.api import analyze
from tftrace.model.report import Report
from tftrace.read import storage
from tftrace.read.hlo_metadata import module_cost_of, read_modules
from tftrace.read.loader import load
from tftrace.read.wire import WireFile, fields
from tftrace.read.xspace import _SPACE_PLANES, _plane_name

MI300 = os.path.join(PUBLIC, "AMD-AGI__TraceLens", "tests", "traces", "mi300")
TPU = os.path.join(PUBLIC, "openxla__xprof", "xprof", "convert", "test_xplanes", "tpu_inference_2.xplane.pb")
TE = os.path.join(PUBLIC, "AMD-AGI__TraceLens", "tests", "test_data_jax_te_fused_attn_categorization",
                  "934987a2fc2f.xplane.pb")
ORACLE = {"keras_compute": sample("gpu_jax", "keras_compute"), "mi300_conv": os.path.join(MI300, "jax08_conv"),
          "mi300_elementwise": os.path.join(MI300, "jax08_elementwise"), "mi300_gemm": os.path.join(MI300, "jax08_gemm"),
          "mi355_attention": TE}
_XPROF_CACHE: dict = {}


def _xplane(run: str) -> str:
    return run if run.endswith(".xplane.pb") else glob.glob(os.path.join(run, "**", "*.xplane.pb"), recursive=True)[0]


def _xprof(run: str, tool: str, tmp_path_factory):
    """XProf's tool output on a copy of the trace (it writes caches beside what it reads)."""
    key = (run, tool)
    if key not in _XPROF_CACHE:
        tools = pytest.importorskip("xprof.convert.raw_to_tool_data")
        copy = tmp_path_factory.mktemp("xprof") / os.path.basename(_xplane(run))
        shutil.copy(_xplane(run), copy)
        data, _ = tools.xspace_to_tool_data([str(copy)], tool, {"use_saved_result": False})
        _XPROF_CACHE[key] = json.loads(data)
    return _XPROF_CACHE[key]


def _leaves(node):
    if not node.get("children"):
        yield node
    for child in node.get("children", []):
        yield from _leaves(child)


def _module_costs(run: str) -> dict:
    """program id -> ModuleCost, every module of the trace's HLO costed."""
    path = _xplane(run)
    with storage.open_binary(path) as f:
        wf = WireFile(f, storage.size(path))
        out = {}
        for fd in fields(wf, 0, wf.size):
            parts = list(fields(wf, fd.start, fd.end)) if fd.number == _SPACE_PLANES else []
            if parts and _plane_name(wf, parts) == "/host:metadata":
                out.update({p: module_cost_of(wf, m, gpu=True) for p, m in read_modules(wf, parts).items()})
        return out


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_every_hlo_ops_flops_and_bytes_a_run_are_xprofs(name, tmp_path_factory):
    """XProf's rawFlops is one run's FLOPs times every device event of the op (kernels and
    memsets alike, see analysis/cost/xla.py); a run's figure is that over its occurrences. Its
    HBM bytes leave out what a tuple-shaped custom call writes (cuDNN's and cuBLAS's results):
    those are compared with the bytes read."""
    profile = _xprof(ORACLE[name], "op_profile", tmp_path_factory)
    modules = _module_costs(ORACLE[name])
    checked = uncosted = 0
    for node in _leaves(profile["byProgram"]):
        xla, metrics = node.get("xla"), node["metrics"]
        if not xla or not metrics.get("occurrences"):
            continue
        ours = modules[int(xla["programId"])].ops[node["name"]]
        flops = metrics.get("rawFlops", 0) / metrics["occurrences"]
        moved = metrics.get("rawBytesAccessedArray", [0])[0] / metrics["occurrences"]
        if "__cublas$gemm" in xla["expression"]:
            # XProf's GPU cost model does not know ROCm's legacy GEMM target: it reports 0 and 0.
            # tftrace counts the GEMM's 2.M.N.K from its backend config.
            assert flops == 0 and moved == 0 and ours.flops > 0
            uncosted += 1
            continue
        library = " = (" in xla["expression"] and "custom-call(" in xla["expression"]
        assert ours.flops == pytest.approx(flops, rel=0.01, abs=1), node["name"]
        assert (ours.read if library else ours.bytes) == pytest.approx(moved, rel=0.10, abs=16), node["name"]
        checked += 1
    assert checked >= (3 if name != "mi300_gemm" else 1)
    assert uncosted == {"mi300_gemm": 5, "mi355_attention": 1}.get(name, 0)


def test_calls_no_model_can_cost_are_unknown_and_said_so():
    """TransformerEngine's fused attention: XLA cannot see into it; its ops have no FLOPs (not 0)
    and the FLOPs per step say they are a floor."""
    run = analyze(TE, top=None).runs[0]
    te = [o for o in run.ops if "te_fused_attn" in o.name and o.device != "host"]
    assert te and all(o.flops is None for o in te)
    assert "left out" in run.roofline.note and run.flops_per_step > 0


def test_a_convolutions_flops_are_padding_aware_as_xprofs():
    """The issue's fact: conv2d_4's forward, 75.707 GFLOP a run (a naive 2.N.H.W.Cout.Cin.9 is
    2.1% high)."""
    run = analyze(ORACLE["keras_compute"]).runs[0]
    op = next(o for o in run.ops if o.name.endswith("cudnn-conv-bias-activation.10"))
    assert op.flops / 7 == pytest.approx(1_059_900_620_800 / 14, rel=1e-6)  # 7 runs (XProf: 14 events)
    assert op.flops / 7 < 2 * 256 * 64 * 64 * 64 * 64 * 9 / 1.02


@pytest.mark.parametrize("name", ["keras_compute", "mi300_conv", "mi355_attention"])
def test_device_peaks_are_xprofs_roofline_peaks(name, tmp_path_factory):
    props = _xprof(ORACLE[name], "roofline_model", tmp_path_factory)[0]["p"]
    run = analyze(ORACLE[name]).runs[0]
    device = run.per_device[0]
    assert device.peak_flops_per_s / 1e9 == pytest.approx(float(props["peak_flop_rate"]), rel=0.01)
    assert device.peak_bytes_per_s / 2 ** 30 == pytest.approx(float(props["peak_hbm_bw"]), rel=0.01)
    assert device.peak_source and run.roofline.peak_flops_per_s == device.peak_flops_per_s


def test_keras_compute_reports_ops_layers_devices_flops_per_step_and_mfu():
    """The issue's facts: H200, 1.07053e6 GFLOP/s, 4483.67 GiB/s; the convolutions run in TF32
    (fp32 data on tensor cores), whose peak is half of XProf's maximum."""
    report = analyze(ORACLE["keras_compute"])
    run = report.runs[0]
    assert Report.from_dict(report.to_dict()) == report
    device = run.per_device[0]
    assert device.peak_flops_per_s == pytest.approx(132 * 1.98e9 * 4096)
    assert device.precision == "tf32" and device.precision_peak_flops_per_s == pytest.approx(132 * 1.98e9 * 2048)
    convs = [o for o in run.ops if o.type.startswith("cudnn-conv")]
    assert convs and all(o.flops > 0 and o.bytes_accessed > 0 for o in convs)
    layers = {layer.layer: layer.flops_per_step for layer in run.layers}
    assert layers["conv2d_4"] > layers["conv2d_5"] > layers["conv2d_3"] > 0
    # conv2d_4: forward and the two backward convolutions, 75.7 GFLOP each a step
    assert layers["conv2d_4"] == pytest.approx(3 * 75.707e9, rel=0.01)
    assert run.flops_per_step > sum(layers.values())
    step_s = run.steps.mean_ps / 1e12
    assert run.mfu == pytest.approx(run.flops_per_step / step_s / device.peak_flops_per_s, rel=1e-4)
    assert run.roofline.flops_per_s == pytest.approx(run.flops_per_step / step_s)


def test_roofline_rows_are_per_op_owner_and_layer_with_a_bound():
    roof = analyze(ORACLE["keras_compute"]).runs[0].roofline
    assert roof.device == "GPU" and roof.ridge == pytest.approx(1.07053e15 / 4.814304e12, rel=1e-3) and roof.rule
    scopes = {r.scope for r in roof.rows}
    assert scopes >= {"op", "owner", "layer"}
    top = roof.rows[0]
    assert top.scope == "op" and top.bound == "compute" and top.precision == "tf32"
    assert top.flops_per_s == pytest.approx(top.flops / (top.time_ps / 1e12), rel=1e-4)
    assert 0 < top.roofline < 1
    light = [r for r in roof.rows if r.scope == "op" and r.intensity is not None and r.intensity < roof.ridge / 10]
    assert light and all(r.bound in ("memory", "launch") for r in light)
    assert any(r.bound == "launch" and r.time_ps / r.runs < 10_000_000 for r in roof.rows)
    layer = next(r for r in roof.rows if r.scope == "layer" and r.name == "conv2d_4")
    assert layer.bound == "compute" and layer.intensity > 100


def test_command_buffer_modules_are_costed_whole():
    """jax_compute: every kernel inside a CUDA graph (XProf gives no op rows); 17 GEMMs of
    8192^3 a step."""
    run = analyze(sample("gpu_jax", "jax_compute")).runs[0]
    assert run.flops_per_step == pytest.approx(17 * 2 * 8192 ** 3, rel=0.01)
    assert run.mfu == pytest.approx(run.flops_per_step / (run.steps.mean_ps / 1e12) / (132 * 1.98e9 * 4096), rel=1e-4)
    assert "CUDA graphs" in run.roofline.note
    assert all(o.flops is None for o in run.ops if o.device != "host" and o.type == "cublas-gemm")
    module = next(r for r in run.roofline.rows if r.scope == "module")  # the whole module, on the roofline
    assert module.name == "jit_step" and module.runs == 8 and module.bound == "compute"
    assert 300e12 < module.flops_per_s < 330e12  # the issue's ~315 TFLOP/s achieved


def test_a_tpu_traces_own_op_stats_give_its_costs_and_peaks():
    run = analyze(TPU).runs[0]
    trace = load(TPU)
    stated = {trace.names[code]: cost for (_h, code), (cost, _src) in trace.costs.per_run.items()}
    fusion = next(o for o in run.ops if o.type == "loop fusion" and o.flops)
    per_run = next(c for name, c in stated.items() if name == f"hlo:{fusion.name}")
    assert fusion.flops == pytest.approx(per_run.flops * fusion.count)
    assert run.per_device[0].peak_flops_per_s == pytest.approx(918e12)
    assert run.per_device[0].peak_bytes_per_s == pytest.approx(1637.993152512e9)
    assert run.roofline.counted_by == "the TPU's per-op stats" and run.flops_per_step > 0


def test_cpu_modules_use_xlas_target_free_model_and_say_no_peak_is_known():
    run = analyze(sample("jax_zoo", "keras_fit")).runs[0]
    assert run.flops_per_step > 0 and run.mfu is None
    assert "target-free" in run.roofline.counted_by and "no peak known" in run.roofline.source
    assert any(o.flops for o in run.ops)


def test_traces_without_costs_say_none():
    run = analyze(sample("zoo", "heavy_layer")).runs[0]
    assert run.flops_per_step is None and run.mfu is None and run.roofline.rows == ()
    assert all(o.flops is None for o in run.ops)
