"""PyTorch profiler (Kineto) traces: found in a logdir, read into the event model, judged in torch's idiom."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil

import numpy as np
import pytest

from conftest import PUBLIC, run_cli
from tftrace import api
from tftrace.analysis.steps.device_link import link_device_work
from tftrace.analysis.steps.found import find_steps
from tftrace.read.kineto import _ps, is_kineto
from tftrace.read.loader import load_run
from tftrace.read.logdir import find_runs

KINETO = os.path.join(PUBLIC, "pytorch__kineto", "tb_plugin", "samples")
WORKERS_0 = os.path.join(KINETO, "resnet50_num_workers_0")
WORKERS_4 = os.path.join(KINETO, "resnet50_num_workers_4")
HTA_DATA = os.path.join(PUBLIC, "facebookresearch__HolisticTraceAnalysis", "tests", "data")
NS = os.path.join(HTA_DATA, "ns_resolution_trace")
AMD = os.path.join(HTA_DATA, "amd_trace")
TRACELENS = os.path.join(PUBLIC, "AMD-AGI__TraceLens", "tests", "traces", "mi300", "resnet_act_checkpoint.json.gz")
# Each public PyTorch trace, as the file it is.
FILES = {"workers_0": WORKERS_0, "workers_4": WORKERS_4, "ns": NS, "amd": AMD, "tracelens": TRACELENS}


def _file(key: str) -> str:
    path = FILES[key]
    if os.path.isfile(path):
        return path
    return os.path.join(path, next(f for f in os.listdir(path) if f.endswith(".json.gz")))


def _profiler_steps(path: str) -> int:
    """`ProfilerStep#N` ranges on the host, counted in the JSON itself."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    return len({e["name"] for e in events if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))
                and e.get("cat") != "gpu_user_annotation"})


@pytest.mark.parametrize("key", sorted(FILES))
def test_a_pytorch_trace_is_found_where_it_lies(key):
    runs = find_runs(FILES[key])
    assert [r.files for r in runs] == [(_file(key),)]
    assert is_kineto(_file(key))


def test_pytorch_json_under_any_name_is_found_by_its_contents_and_other_json_is_not(tmp_path):
    with gzip.open(_file("amd"), "rb") as f:
        (tmp_path / "trace.json").write_bytes(f.read())  # a plain `.json`, PyTorch inside
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    (tmp_path / "chrome.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]}')
    (tmp_path / "tftrace_run.json").write_text('{"schemaVersion": 1}')  # tftrace's own sidecar
    runs = find_runs(str(tmp_path))
    assert [os.path.basename(f) for r in runs for f in r.files] == ["trace.json"]
    assert load_run(runs[0]).format == "kineto"


@pytest.mark.parametrize("key", sorted(FILES))
def test_steps_are_the_profiler_steps(key):
    trace = load_run(find_runs(_file(key))[0])
    steps = find_steps(trace)
    assert steps.count == _profiler_steps(_file(key)) > 0
    assert set(steps.names) == {"ProfilerStep"}  # one marker, its number in `numbers`
    assert steps.source == "marker 'ProfilerStep'"
    assert trace.format == "kineto"


@pytest.mark.parametrize("key", sorted(FILES))
def test_kernels_on_stream_lines_ops_on_host_threads_tied_by_correlation(key):
    trace = load_run(find_runs(_file(key))[0])
    device_lines = [ln for ln in trace.lines if ln.role == "device_ops"]
    assert device_lines and all(ln.plane.startswith("/device:GPU:") and ln.name.startswith("Stream #")
                                for ln in device_lines)
    host = {ln.plane for ln in trace.lines if not ln.on_device}
    assert host == {"/host:CPU"}
    assert any(op.kind == "torch" and op.name.startswith("aten::") for op in trace.ops.values())
    steps = find_steps(trace)
    work = link_device_work(trace, np.asarray(steps.starts), np.asarray(steps.ends), np.asarray(steps.numbers), False)
    assert work.how == "correlation"
    assert (work.step >= 0).mean() > 0.5  # most device work is linked to the step that launched it


def test_nanosecond_decimals_are_read_exactly():
    assert _ps("1712195495519695.8") == 1712195495519695_800000
    assert _ps("63.813") == 63_813_000
    assert _ps("0.0000005") == 1 and _ps("0.0000004") == 0  # rounded to the picosecond
    assert _ps("1.5e3") == 1_500_000_000 and _ps(25) == 25_000_000
    assert _ps("nan") is None and _ps("x") is None and _ps(None) is None
    # The ns trace's times are whole nanoseconds apart: float microseconds would not keep that
    # (1.7e15 us has a float step of 0.25 us).
    trace = load_run(find_runs(NS)[0])
    assert (trace.events["start_ps"] % 1000 == 0).all() and (trace.events["dur_ps"] % 1000 == 0).all()
    assert len(trace.profile_start_ns) == 1


# HTA's own test traces (more GPUs, ranks and eras), for its temporal breakdown only.
HTA_MORE = {"negative_queue": os.path.join(HTA_DATA, "negative_queue_length_values_check", "rank0.json.gz"),
            "sampled": os.path.join(HTA_DATA, "trace_filter", "sampled_rank-0.json.gz"),
            "alexnet": os.path.join(HTA_DATA, "critical_path", "alexnet",
                                    "benchmark_result_2869224_1695835535_trace.json.gz")}


def test_gpu_idle_compute_and_other_match_hta_within_two_points_on_every_trace_it_parses(tmp_path):
    """HTA's temporal breakdown is the oracle: it counts the device work launched before the last
    ProfilerStep began, from the first kernel's start to the last one's end (analysis/kineto_window);
    so does tftrace's devices table on PyTorch traces (a note says so)."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as e:
        pytest.skip(f"HolisticTraceAnalysis cannot be imported ({e}); pip install HolisticTraceAnalysis")
    compared, refused = [], []
    for key, path in sorted({**{k: _file(k) for k in FILES}, **HTA_MORE}.items()):
        folder = tmp_path / key
        folder.mkdir()
        shutil.copy(path, folder)
        try:
            hta = TraceAnalysis(trace_dir=str(folder)).get_temporal_breakdown(visualize=False).iloc[0]
        except Exception as e:  # HTA 0.5 cannot parse the TraceLens trace (a TypeError in its parser)
            refused.append((key, type(e).__name__))
            continue
        (run,) = api.analyze(path).runs
        (device,) = [d for d in run.per_device if d.busy_ps]
        ours = {"idle": 100 * (1 - device.busy_ps / device.span_ps),
                "compute": 100 * device.compute_ps / device.span_ps,
                "non_compute": 100 * (device.busy_ps - device.compute_ps) / device.span_ps}
        for part, value in ours.items():
            assert abs(value - hta[f"{part}_time_pctg"]) <= 2, (key, part, value, hta[f"{part}_time_pctg"])
        steps = _profiler_steps(path)
        assert any(n.startswith("GPU busy and idle (devices table) as HTA's") for n in run.notes) == (steps >= 2), key
        compared.append(key)
    assert len(compared) >= 7 and [k for k, _ in refused] == ["tracelens"], (compared, refused)


def test_the_last_profiler_step_is_left_out_of_the_gpu_figures_as_hta_leaves_it():
    """On the HTA trace whose idle tftrace once put 5 points under HTA's (64.4% against 69.4%): the
    last iteration's kernels, launched after the last ProfilerStep began, are not counted."""
    (run,) = api.analyze(HTA_MORE["negative_queue"]).runs
    (device,) = [d for d in run.per_device if d.busy_ps]
    assert abs(100 * (1 - device.busy_ps / device.span_ps) - 69.44) < 0.05


def test_resnet_with_no_dataloader_workers_is_input_bound_and_told_to_add_workers():
    (run,) = api.analyze(WORKERS_0).runs
    assert run.framework == "pytorch"
    top = run.bottlenecks[0]
    assert top.kind == "input" and "DataLoader" in top.title
    assert "num_workers" in top.recommendation and "pin_memory" in top.recommendation
    assert "tf.data" not in top.recommendation and "prefetch(" not in top.recommendation
    assert top.share > 0.2
    assert "highly input-bound as well" in run.verdict.text  # the device's wait for input, said beside the bound
    (fixed,) = api.analyze(WORKERS_4).runs
    assert not any(b.kind == "input" and b.share > 0.05 for b in fixed.bottlenecks)
    assert fixed.steps.median_ps < 0.8 * run.steps.median_ps


def test_diff_shows_the_input_wait_gone():
    proc = run_cli("diff", WORKERS_0, WORKERS_4, "--format", "json", check=True)
    diff = json.loads(proc.stdout)
    assert diff["step_time"]["delta_pct"] < -20 and diff["step_time"]["significant"]
    wait = diff["input_wait"]
    assert wait["baseline"] > 0.25 and wait["candidate"] < 0.05
    text = run_cli("diff", WORKERS_0, WORKERS_4, check=True).stdout
    assert "device idle waiting for input" in text


def test_several_pytorch_files_in_one_folder_are_its_ranks(tmp_path):
    for rank, key in enumerate(("workers_0", "workers_4")):
        shutil.copy(_file(key), tmp_path / f"rank{rank}.1623143089861.pt.trace.json.gz")
    (tmp_path / "empty.pt.trace.json").write_text('{"schemaVersion": 1, "traceEvents": []}')
    proc = run_cli("analyze", str(tmp_path), "--no-tensorboard")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "hosts: rank0.1623143089861, rank1.1623143089861" in proc.stdout
    (run,) = api.analyze(str(tmp_path)).runs
    assert any("empty.pt.trace.json: a PyTorch trace with no timed events" in n for n in run.notes)  # left out, named
    assert run_cli("analyze", str(tmp_path), "--no-tensorboard", "--workers", "2").returncode == 0


def test_one_workers_files_of_different_times_are_runs_of_their_own(tmp_path):
    """tensorboard_trace_handler names a file `<worker>.<time>.pt.trace.json`: one worker's files are
    its profiling cycles (a schedule's repeats, a last cycle closed at exit), not ranks."""
    for key in ("workers_0", "workers_4"):  # both written by `worker0`
        shutil.copy(_file(key), tmp_path)
    runs = find_runs(str(tmp_path))
    assert [r.name for r in runs] == ["worker0.1623143089861.pt.trace.json.gz", "worker0.1623212756351.pt.trace.json.gz"]
    assert all(len(r.files) == 1 for r in runs)
    report = api.analyze(str(tmp_path))
    assert [r.steps.count for r in report.runs] == [6, 6] and not any(b.kind == "straggler" for r in report.runs
                                                                       for b in r.bottlenecks)


@pytest.mark.parametrize("content", [b"", b"{", b'{"traceEvents": [{"ph": "X", "ts": 1, "dur"', b"\x1f\x8b\x08\x00junk"])
def test_a_broken_pytorch_file_gives_one_line_and_exit_2(tmp_path, content):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_bytes(content)
    proc = run_cli("analyze", str(path), "--no-tensorboard")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_truncated_gzip_gives_one_line_and_exit_2(tmp_path):
    data = open(_file("amd"), "rb").read()
    path = tmp_path / "rank-0.pt.trace.json.gz"
    path.write_bytes(data[: len(data) // 2])
    proc = run_cli("analyze", str(path), "--no-tensorboard")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_odd_values_in_events_are_left_out_not_raised(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": "²", "dur": 1},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 10 ** 30},
              {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#" + "9" * 30, "pid": 1, "tid": 1,
               "ts": 5, "dur": 100, "args": {"correlation": 2 ** 70}},
              {"ph": "X", "cat": "kernel", "name": ["k"], "pid": "x", "tid": None, "ts": 1e300, "dur": -5,
               "args": {"device": 2 ** 80, "stream": "s", "correlation": "7"}},
              {"ph": "f", "cat": "ac2g", "id": 2 ** 90, "pid": 1, "tid": 1, "ts": 10},
              {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 12.5, "dur": 1.25,
               "args": {"device": 0, "stream": 7, "correlation": 3}},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 11,
               "dur": 1, "args": {"correlation": 3}}, 7, None, "x"]
    path = tmp_path / "odd.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    proc = run_cli("analyze", str(path), "--no-tensorboard", "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    trace = load_run(find_runs(str(path))[0])
    # Kept: the op with its too-long duration (as 0), the step, the kernel and its launch; the
    # events at times no clock holds (`"²"`, 1e300 us) are left out.
    assert len(trace.events) == 4 and trace.devices == ("/device:GPU:0",)


def test_a_gpu_still_running_earlier_steps_is_busy_not_waiting_for_the_host():
    """TraceLens' DDP rank: the host runs ahead, each step's window opens while the GPU still runs
    the steps before it; the GPU is busy 97% of the time (HTA cannot read this file)."""
    (run,) = api.analyze(TRACELENS).runs
    (device,) = [d for d in run.per_device if d.busy_ps]
    assert device.busy > 0.95
    assert run.breakdown.host_overhead < 0.05 and run.breakdown.compute > 0.9
    assert run.bottlenecks[0].kind != "device_idle"


def test_a_corrupt_json_gz_in_a_logdir_is_not_a_trace_and_raises_nothing(tmp_path):
    data = bytearray(gzip.compress(b'{"schemaVersion": 1, "traceEvents": []}' * 1000))
    data[20:40] = b"\xff" * 20  # the deflate stream broken
    (tmp_path / "x_kineto.json.gz").write_bytes(bytes(data))
    (tmp_path / "notes.json").write_bytes(b"\xff\xfe not json")
    proc = run_cli("analyze", str(tmp_path), "--no-tensorboard")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "no profiler traces" in proc.stderr


def test_torch_ops_get_categories_and_phases_from_their_names():
    (run,) = api.analyze(WORKERS_0, top=None).runs
    host = {}  # by its name, outside the optimizer's step (where every op is the optimizer's): its largest row
    for o in sorted((o for o in run.ops if o.device == "host" and o.phase != "optimizer"), key=lambda o: o.self_ps):
        host[o.name] = o
    expect = {"aten::add_": "elementwise", "aten::cudnn_convolution": "convolution", "aten::cudnn_batch_norm":
              "normalization", "aten::addmm": "matmul", "aten::max_pool2d_with_indices": "pooling",
              "aten::copy_": "transfer", "aten::empty": "other",
              "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__": "input"}
    assert {n: host[n].category for n in expect} == expect
    assert host["aten::cudnn_convolution_backward_input"].phase == "backward"
    assert host["aten::cudnn_convolution"].phase == "forward"


@pytest.mark.parametrize("key,flows", [("ns", True), ("workers_0", False), ("workers_4", False)])
def test_backward_kernels_are_linked_to_the_forward_ops_that_made_them(key, flows):
    """Each backward function (autograd's wrapper and the function share its sequence number) is linked
    to the forward op that made it: through its `fwdbwd` flow (the HTA trace: 905 flows), else by the
    sequence number (2021's traces have none); the kernels it launches are backward too: about two
    thirds of a training step's GPU time."""
    from tftrace.analysis.eager_layers import eager_layers
    from tftrace.analysis.torch_links import backward_links
    trace = load_run(find_runs(_file(key))[0])
    links = backward_links(trace)
    functions, linked, flowed = links.functions()
    assert functions > 500 and linked == functions and flowed == (functions if flows else 0), (functions, linked, flowed)
    st, ev = trace.stats, trace.events
    seq = dict(zip(st["event"].tolist(), st["seq"].tolist()))
    fwd = dict(zip(st["event"].tolist(), st["fwd_thread"].tolist()))
    for b, f in zip(links.backward.tolist(), links.forward.tolist()):
        assert seq[f] == seq[b] and fwd[f] == 0 < fwd[b] and ev["start_ps"][f] < ev["start_ps"][b]
    label, labels = eager_layers(trace, ())
    kernels = np.flatnonzero(trace.on_lines(lambda ln: ln.role == "device_ops"))
    backward = np.array([label[r] >= 0 and labels[label[r]].phase == "backward" for r in kernels.tolist()])
    share = ev["dur_ps"][kernels][backward].sum() / ev["dur_ps"][kernels].sum()
    assert 0.5 < share < 0.8, share


def test_a_2021_trace_with_call_stacks_names_the_model_lines_behind_forward_and_backward_kernels():
    """The ResNet-50 trace was recorded with with_stack=True (2021: each op's `Call stack`): each op is
    the model line that called into torch (torchvision's resnet.py), its backward ops and kernels too."""
    (run,) = api.analyze(WORKERS_0, top=None).runs
    code = [r for r in run.owners if r.kind == "code" and r.name.endswith(")") and "resnet.py:" in r.name]
    assert {r.phase for r in code} >= {"forward", "backward"}
    backward = sum(r.op_ps for r in code if r.phase == "backward")
    assert backward > 0.4 * sum(r.op_ps for r in run.owners if r.part == "compute"), backward
