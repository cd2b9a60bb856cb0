"""Reading real traces: samples, the public traces, and every kind of bad input."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from conftest import BROKEN, SAMPLE_RUNS, PUBLIC, run_cli, sample, sample_file, public_traces
from tftrace.analysis.classify import CATEGORIES
from tftrace.analysis.ops import op_stats
from tftrace.analysis.run import analyze_trace
from tftrace.model.errors import TraceReadError
from tftrace.read.loader import load, load_run
from tftrace.read.logdir import find_runs

GOOD_PUBLIC = [p for p in public_traces() if p != BROKEN]


# This legacy file holds one `train_function` call and its runtime events, but no op events.
NO_OPS = "tfprofiler_local_missing_metadata"


@pytest.mark.parametrize("path", GOOD_PUBLIC, ids=lambda p: os.path.relpath(p, PUBLIC)[:60])
def test_every_good_public_trace_reads_into_a_sensible_op_table(path):
    trace = load_run(find_runs(path)[0])
    assert len(trace.events) > 0
    stats = op_stats(trace, top=None)
    if NO_OPS in path:
        assert not stats.ops
        assert analyze_trace(trace, "x").steps.source == "function 'train_function'"
        return
    assert stats.ops, "no ops found"
    assert all(o.self_ps >= 0 and o.count > 0 for o in stats.ops)
    assert all(o.category in CATEGORIES for o in stats.ops)
    # One total for the share column: all op self time, host and device together.
    assert sum(o.share for o in stats.ops) == pytest.approx(1.0, abs=1e-3)
    assert sum(o.self_ps for o in stats.ops) == stats.host_self_ps + stats.device_self_ps


@pytest.mark.parametrize("path,kind", [
    ("tensorflow__profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb", "GPU"),
    ("openxla__xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb", "TPU"),
    ("AMD-AGI__TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb", "GPU"),
])
def test_device_ops_appear_as_device_ops(path, kind):
    stats = op_stats(load(os.path.join(PUBLIC, path)), top=None)
    device_ops = [o for o in stats.ops if o.device != "host"]
    assert device_ops and all(o.device == kind for o in device_ops)
    assert stats.device_self_ps > 0
    # Derived lines (name scopes, modules, steps) repeat op time: they must not become ops.
    names = {o.name for o in device_ops}
    assert not any(n.startswith("jit_") and "(" in n for n in names)


def test_gpu_kernels_are_attributed_to_the_tf_ops_that_launched_them():
    stats = op_stats(load(os.path.join(PUBLIC, "tensorflow__profiler")), top=None)
    gpu = [o for o in stats.ops if o.device == "GPU"]
    assert any(o.type == "RandomUniform" and o.category == "dropout" for o in gpu)
    assert any(o.layer == "bert_encoder_1" for o in gpu)


def test_legacy_json_traces_read_ops_with_types_and_categories():
    ampere = op_stats(load(os.path.join(PUBLIC, "AmpereComputingAI__ampere_model_library")), top=None)
    fused = [o for o in ampere.ops if o.type == "_DLSSuperNode"]
    assert fused and any(o.category == "matmul" and "MatMul" in o.name for o in fused)
    trace = load(os.path.join(PUBLIC, "awslabs__sagemaker-debugger", "tests", "profiler", "resources",
                              "tfprofiler_timeline_traces"))
    assert trace.format == "trace_json"
    ops = op_stats(trace, top=None).ops
    assert any(o.type == "GatherV2" and o.category == "reshape" for o in ops)
    loss = [o for o in ops if o.name.startswith("sparse_categorical_crossentropy/")]
    assert loss and all(o.category == "loss" and o.layer == "" for o in loss)
    assert any(o.layer == "dense_2" and o.phase == "backward" for o in ops)


@pytest.mark.parametrize("scenario,variant", SAMPLE_RUNS)
def test_sample_traces_are_small_real_xspace_files(scenario, variant):
    path = sample_file(scenario, variant)
    assert os.path.getsize(path) < 1_000_000
    trace = load(sample(scenario, variant))
    # Captured the stock ways (profiler start/stop, Keras' TensorBoard callback): no sidecar.
    stock = scenario == "stock" and variant != "trace_nosteps"
    assert trace.hosts and bool(trace.sidecar.get("layer_names")) != stock


def test_a_run_with_several_host_files_is_one_run_with_several_hosts(tmp_path):
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    shutil.copy(sample_file("augment", "gap"), run / "worker0.xplane.pb")
    shutil.copy(sample_file("augment", "flatten"), run / "worker1.xplane.pb")
    runs = find_runs(str(tmp_path))
    assert len(runs) == 1 and len(runs[0].files) == 2
    assert len(load_run(runs[0]).hosts) == 1 or len(load_run(runs[0]).hosts) == 2


def test_logdir_at_any_depth_finds_keras3_train_and_validation_folders(tmp_path):
    for sub in ("train", "validation"):
        dst = tmp_path / "logs" / sub / "plugins" / "profile" / "run"
        dst.mkdir(parents=True)
        shutil.copy(sample_file("augment", "gap"), dst / "host.xplane.pb")
    names = [r.name for r in find_runs(str(tmp_path))]
    assert names == ["logs/train/plugins/profile/run", "logs/validation/plugins/profile/run"]


def _bad_inputs(tmp_path):
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    data = open(sample_file("augment", "gap"), "rb").read()
    truncated = tmp_path / "truncated.xplane.pb"
    truncated.write_bytes(data[: len(data) // 2])
    text = tmp_path / "notes.xplane.pb"
    text.write_text("this is not a trace\n")
    badgz = tmp_path / "bad.trace.json.gz"
    badgz.write_bytes(b"\x1f\x8b\x08\x00garbage")
    badjson = tmp_path / "bad.trace.json"
    badjson.write_text('{"not": "a trace"}')
    nofolder = tmp_path / "nothing_here"
    nofolder.mkdir()
    return {
        "missing": (str(tmp_path / "nope"), "no such file"),
        "no traces": (str(nofolder), "no profiler traces"),
        "empty": (str(empty), "empty"),
        "truncated": (str(truncated), "truncated or corrupt"),
        "not a trace": (str(text), "not a readable"),
        "bad gzip": (str(badgz), "gzip"),
        "bad json": (str(badjson), "traceEvents"),
        "other file": (os.path.join(sample("capture_samples.py")), "not a trace file"),
        "broken public": (BROKEN, "truncated or corrupt"),
    }


def test_bad_input_gives_one_line_error_naming_file_and_exit_2(tmp_path):
    for label, (path, words) in _bad_inputs(tmp_path).items():
        proc = run_cli("analyze", path, "--no-tensorboard")
        assert proc.returncode == 2, label
        err = proc.stderr.strip()
        assert "Traceback" not in proc.stderr and len(err.splitlines()) == 1, (label, proc.stderr)
        assert err.startswith("tftrace: error: ") and words in err, (label, err)
        assert os.path.basename(path) in err, (label, err)


def test_library_raises_trace_read_error_for_bad_files(tmp_path):
    for label, (path, _words) in _bad_inputs(tmp_path).items():
        with pytest.raises(Exception) as info:
            load(path)
        assert isinstance(info.value, TraceReadError) or type(info.value).__name__ == "NoTracesError", label


def _digest(folder):
    out = {}
    for root, _dirs, files in os.walk(folder):
        for f in files:
            p = os.path.join(root, f)
            out[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def test_logdir_with_one_broken_run_reports_good_runs_and_names_the_broken_one(tmp_path):
    for name in ("good", "broken"):
        (tmp_path / "plugins" / "profile" / name).mkdir(parents=True)
    shutil.copy(sample_file("augment", "gap"), tmp_path / "plugins/profile/good/host.xplane.pb")
    shutil.copy(BROKEN, tmp_path / "plugins/profile/broken/host.xplane.pb")
    before = _digest(tmp_path)
    proc = run_cli("analyze", str(tmp_path), "--format", "json", "--no-tensorboard")
    assert proc.returncode == 0, proc.stderr
    runs = {r["name"]: r for r in json.loads(proc.stdout)["runs"]}
    assert runs["plugins/profile/good"]["ops"] and not runs["plugins/profile/good"]["error"]
    assert "host.xplane.pb" in runs["plugins/profile/broken"]["error"]
    assert _digest(tmp_path) == before, "analyze must never write into the input files"


def test_analyze_never_modifies_inputs_even_when_writing_summaries(copy_of):
    logdir = copy_of(sample("augment", "gap"))
    before = _digest(logdir)
    run_cli("analyze", logdir, check=True)
    after = _digest(logdir)
    assert {p: d for p, d in after.items() if p in before} == before


def test_legacy_json_with_odd_values_reads_what_it_can(tmp_path):
    events = [{"ph": "M", "pid": [1], "name": "process_name", "args": {"name": "/host:CPU"}},
              {"ph": "X", "pid": [1], "tid": {"t": 2}, "ts": 10, "dur": 5, "name": "a/MatMul:MatMul"},
              {"ph": "X", "pid": 1, "tid": 2, "ts": "nan", "dur": 5, "name": "dropped"},
              {"ph": "X", "pid": 1, "tid": 2, "ts": 1e300, "dur": 5, "name": "dropped too"},
              {"ph": "X", "pid": 1, "tid": 2, "ts": 20, "dur": 2**80, "name": "b/Relu:Relu",
               "args": {"step_num": 2**90, "_r": "x"}},
              "not an event"]
    path = tmp_path / "odd.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = load(str(path))
    assert sorted(trace.names[c] for c in trace.events["name"]) == ["a/MatMul:MatMul", "b/Relu:Relu"]
    assert {o.type for o in op_stats(trace, top=None).ops} == {"MatMul", "Relu"}


def test_a_trace_with_absolute_timestamps_reads_like_a_relative_one(tmp_path):
    """Unix-ns line timestamps would overflow picoseconds in 64 bits: such a file's times count
    from its first line instead, and the analysis is the same."""
    from tftrace.read.schema import XSpace
    space = XSpace.FromString(open(sample_file("augment", "gap"), "rb").read())
    for plane in space.planes:
        for line in plane.lines:
            line.timestamp_ns += 1_796_279_742_441_594_308
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(space.SerializeToString())
    shutil.copy(os.path.join(os.path.dirname(sample_file("augment", "gap")), "tftrace_run.json"), run)
    from tftrace.api import analyze
    shifted, original = analyze(str(tmp_path)).runs[0], analyze(sample("augment", "gap")).runs[0]
    import dataclasses
    same_steps = [dataclasses.replace(s, start_ps=0) for s in shifted.steps.steps] == \
        [dataclasses.replace(s, start_ps=0) for s in original.steps.steps]  # times count from another origin
    assert same_steps and shifted.ops == original.ops
    assert shifted.breakdown == original.breakdown


def test_a_plane_of_metadata_only_is_not_parsed(tmp_path, monkeypatch):
    """`/host:metadata` holds each XLA module's HLO proto, hundreds of MB where a jitted function
    closes over a large array: the reader skips it, and the analysis is the one without it."""
    from tftrace.read import xspace
    from tftrace.read.schema import XSpace
    original = "sample_traces/jax_zoo/jax_compute/plugins/profile/run/sample.xplane.pb"
    space = XSpace.FromString(open(original, "rb").read())
    meta = next(p for p in space.planes if p.name == "/host:metadata")
    big = meta.event_metadata[max(meta.event_metadata) + 1]
    big.name = "jit_step(1)"
    big.stats.add(metadata_id=1).bytes_value = bytes(20 << 20)  # a 20 MB constant
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    (run / "sample.xplane.pb").write_bytes(space.SerializeToString())
    parsed = []
    real = xspace.XPlaneLazy.FromString
    monkeypatch.setattr(xspace, "XPlaneLazy", type("Spy", (), {
        "FromString": staticmethod(lambda data: parsed.append(len(data)) or real(data))}))
    from tftrace.api import analyze
    with_metadata = analyze(str(tmp_path)).runs[0]
    assert max(parsed) < 1 << 20
    assert with_metadata.steps == analyze("sample_traces/jax_zoo/jax_compute").runs[0].steps


def _xplane_files():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for top in ("sample_traces", os.path.join("tests", "data")):
        for root, _dirs, files in os.walk(os.path.join(here, top)):
            found += [os.path.join(root, f) for f in files if f.endswith(".xplane.pb")]
    return sorted(found)


def test_the_c_and_numpy_decoders_read_every_line_of_every_repository_trace_alike(monkeypatch):
    """Both line decoders (read/_events.c; numpy alone where it is not built) on every XSpace in
    the repository: the same events, times and stats flags, line by line."""
    from google.protobuf.message import DecodeError

    from tftrace.read import lines, native, wire
    from tftrace.read.wire import WireError, WireFile, fields
    assert native.events is not None, "the C decoder is not built (pip install -e .)"
    compared = 0
    for path in _xplane_files():
        with open(path, "rb") as f:
            wf = WireFile(f, os.path.getsize(path))
            try:
                planes = [fd for fd in fields(wf, 0, wf.size) if fd.number == 1]
                datas = [wire.value(wf, p) for fd in planes for p in fields(wf, fd.start, fd.end) if p.number == 3]
            except WireError:
                continue  # the broken public file
        for data in datas:
            got = {}
            for which in ("c", "numpy"):
                if which == "numpy":
                    monkeypatch.setattr(native, "events", None)
                try:
                    got[which] = lines.decode_line(data, None)
                except (WireError, DecodeError) as e:
                    got[which] = type(e)
                monkeypatch.undo()
            c, numpy = got["c"], got["numpy"]
            if isinstance(c, type) or isinstance(numpy, type):
                assert isinstance(c, type) and isinstance(numpy, type), path
                continue
            assert (c.name, c.display_name, c.base_ns) == (numpy.name, numpy.display_name, numpy.base_ns), path
            for col in ("metadata_id", "start_ps", "duration_ps", "has_stats", "tags"):
                assert np.array_equal(getattr(c, col), getattr(numpy, col)), (path, col)
            compared += len(c)
    assert compared > 1_000_000


def test_the_c_and_numpy_readers_build_the_same_trace_from_every_repository_xspace(monkeypatch):
    """Whole files: with the C decoder, events are slotted and the thread pool's bookkeeping left
    out as it reads, and op self times found in one pass; without it, numpy does all of it. Same
    Trace."""
    from tftrace.read import native
    from tftrace.read.loader import load
    assert native.events is not None, "the C decoder is not built (pip install -e .)"
    for path in _xplane_files():
        try:
            c = load(path)
        except TraceReadError:
            continue
        monkeypatch.setattr(native, "events", None)  # lines, op self times and message walks in numpy
        numpy = load(path)
        monkeypatch.undo()
        assert c.names == numpy.names and c.lines == numpy.lines and c.ops == numpy.ops, path
        for table in ("events", "stats"):
            a, b = getattr(c, table), getattr(numpy, table)
            assert a.columns == b.columns, path
            for col in a.columns:
                assert np.array_equal(a[col], b[col]), (path, table, col)
