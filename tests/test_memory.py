"""Memory per allocator: the peak matches XProf's memory_profile, what holds it, and the findings."""

from __future__ import annotations

import json
import os
import shutil
import types

import numpy as np
import pytest

from conftest import PUBLIC, SAMPLES
from tftrace.analysis.memory.allocators import allocators
from tftrace.analysis.findings.registry import memory_findings
from tftrace.api import analyze
from tftrace.read.build import TraceBuilder
from tftrace.model.events import LineInfo
from tftrace.read.loader import load
from tftrace.model.report import Report

GPU = os.path.join(PUBLIC, "tensorflow__profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb")


def _with_memory() -> list[str]:
    """Every xplane.pb in the repository whose host plane records memory events."""
    found = []
    for base in (SAMPLES, PUBLIC):
        for root, _dirs, files in os.walk(base):
            found += [os.path.join(root, f) for f in files if f.endswith(".xplane.pb") and "_corrupt" not in root]
    return sorted(p for p in found if load(p).memory is not None)


TRACES = _with_memory()


def test_the_repository_holds_gpu_tpu_and_cpu_traces_with_memory_events():
    names = {a.name for p in TRACES for a in allocators(load(p), (), (), (), {})}
    assert {"GPU_0_bfc", "GPU_4_bfc", "gpu_host_bfc", "mklcpu", "0"} <= names and len(TRACES) >= 12


def _xprof_memory(path: str, tmp_path) -> dict:
    xprof = pytest.importorskip("xprof.convert.raw_to_tool_data")
    copy = tmp_path / os.path.basename(path)  # XProf writes cache files next to the trace
    shutil.copy(path, copy)
    data, _content_type = xprof.xspace_to_tool_data([str(copy)], "memory_profile", {})
    return json.loads(data)["memoryProfilePerAllocator"]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: os.path.relpath(p, os.path.dirname(PUBLIC)))
def test_every_allocators_peak_and_capacity_match_xprof_memory_profile(path, tmp_path):
    xp = _xprof_memory(path, tmp_path)
    ours = {a.name: a for a in allocators(load(path), (), (), (), {})}
    assert set(ours) == set(xp)
    for name, a in ours.items():
        summary = xp[name]["profileSummary"]
        # XProf's in-window peak (reserved + allocated at the fullest memory event) and capacity there.
        assert a.peak_bytes == pytest.approx(int(summary["peakStats"]["peakBytesInUse"]), rel=0.01), name
        assert a.capacity_bytes == pytest.approx(int(summary["memoryCapacity"]), rel=0.01), name
        # XProf's lifetime peak: the allocator's peak counter on the last memory event it reads
        # (line by line); on TPU the counter counts the heap alone and lies below the in-window peak.
        assert a.lifetime_peak_bytes == int(summary["peakBytesUsageLifetime"]), name
    largest = max(ours.values(), key=lambda a: a.peak_bytes)
    assert largest.at_peak
    assert sum(h.bytes for h in largest.at_peak) == pytest.approx(largest.peak_bytes, rel=0.01)


def test_what_holds_a_bert_gpu_peak_is_named_by_op_layer_shape_and_dtype():
    run = analyze(GPU).runs[0]
    top = run.memory.allocators[0]
    assert (top.name, top.peak_bytes, top.capacity_bytes) == ("GPU_6_bfc", 6210111488, 15477102400)
    first = top.at_peak[0]
    # The 24 transformer layers' dropout masks, one group: the same tensor of repeated blocks.
    assert first.op.endswith("/layer_*/self_attention/dropout_*/dropout/Cast") and first.count == 24
    assert (first.shape, first.dtype, first.kind) == ("[4,16,384,384]", "half", "activation")
    before = [h for h in top.at_peak if h.kind == "before window"]
    assert before and before[0].bytes == 4013337088  # what XProf calls unused preallocated memory
    assert not run.memory.findings  # 40% of capacity: nothing to warn about, compute-bound: no headroom finding


def test_report_with_memory_round_trips_and_renders_in_every_format():
    rep = analyze(GPU)
    assert Report.from_dict(json.loads(json.dumps(rep.to_dict()))) == rep
    mem = rep.to_dict()["runs"][0]["memory"]
    assert {"name", "peak_bytes", "capacity_bytes", "peak_share", "peak_step", "peak_op", "at_peak",
            "steps", "timeline"} <= set(mem["allocators"][0]) and mem["findings"] == []
    from tftrace.render.html import render_html
    from tftrace.render.markdown import render_markdown
    from tftrace.render.text import render_text
    page = render_html(rep)
    assert page.count('data-chart="memory"') == 4 and 'class="peak"' in page and "<script" not in page
    assert "### Memory" in render_markdown(rep) and "What holds GPU_6_bfc at its peak (6.21 GB)" in render_text(rep)


def test_per_step_peaks_and_the_peak_step_on_a_cpu_training_trace():
    run = analyze(os.path.join(SAMPLES, "augment", "flatten")).runs[0]
    a = run.memory.allocators[0]
    assert a.name == "mklcpu" and len(a.steps) == run.steps.count
    assert max(s.peak_bytes for s in a.steps) == a.peak_bytes
    assert a.peak_step in {s.number for s in run.steps.steps}


def _near_full_trace():
    """A hand-built GPU allocator filling to 15.40 of 15.47 GB (the stats TensorFlow records,
    as on the public BERT trace): 4.01 GB of weights before the window, then activations."""
    builder = TraceBuilder("tiny", "xplane")
    capacity, before = 15477102400, 4013337088
    sizes = [2_000_000_000] * 5 + [1_386_662_912]
    n = len(sizes) + 1
    allocated = before + np.concatenate([np.cumsum(sizes), [sum(sizes) - sizes[0]]])
    builder.add_line(LineInfo("host", "/host:CPU", "tf_Compute", "compute"), np.zeros(n, np.int32),
                     np.arange(n, dtype=np.int64) * 10**9, np.zeros(n, np.int64))
    ops = [f"model/encoder/layer_{i}/attention/Softmax" for i in range(5)] + ["model/head/dense/MatMul", ""]
    builder.add_memory({
        "time_ps": np.arange(n, dtype=np.int64) * 10**9, "alloc": np.array([True] * (n - 1) + [False]),
        "allocator": np.array(["GPU_0_bfc"] * n, object), "addr": np.array([*range(1, n), 1], np.uint64),
        "bytes_reserved": np.zeros(n, np.int64), "bytes_allocated": allocated, "bytes_available": capacity - allocated,
        "peak_bytes_in_use": np.maximum.accumulate(allocated), "allocation_bytes": np.array([*sizes, sizes[0]]),
        "requested_bytes": np.array([*sizes, sizes[0]]), "data_type": np.full(n, 19), "group_id": np.full(n, -1),
        "fragmentation": np.zeros(n), "tf_op": np.array(ops, object),
        "shape": np.array(["[64,16,512,512]"] * 5 + ["[64,512,4096]", ""], object),
        "region_type": np.array(["output"] * n, object)})
    return builder.build()


def test_an_allocator_above_90_percent_gets_a_finding_naming_what_holds_it():
    rows = allocators(_near_full_trace(), (0,), (10**13,), (3,), {})
    a = rows[0]
    assert a.peak_bytes == 15400000000 and a.peak_share > 0.99 and a.peak_step == 3
    found = memory_findings(_seen(rows, "compute", "train"))
    assert [f.kind for f in found] == ["near_capacity"]
    f = found[0]
    assert "15.40 GB of 15.48 GB" in f.title and "one step from out of memory" in f.title
    assert "model/encoder/layer_*/attention/Softmax" in f.evidence and "x5" in f.evidence
    assert "batch_size" in f.recommendation and "mixed" in f.recommendation


def test_headroom_on_an_overhead_bound_run_says_how_much_larger_a_batch_fits():
    rows = allocators(load(os.path.join(SAMPLES, "predict_loop", "heavy")), (), (), (), {})
    found = memory_findings(_seen(rows, "host_overhead", "predict"))
    assert [f.kind for f in found] == ["headroom"] and "8x or more" in found[0].title
    assert not memory_findings(_seen(rows, "input", "predict"))  # input work grows with the batch: no promise


def _seen(rows, bound: str, mode: str):
    """What the memory detectors read of a run's Context: its allocators, verdict and call."""
    return types.SimpleNamespace(memory=rows, bound=bound, mode=mode)
