"""PyTorch/XLA on a TPU, on a trace built by hand from PyTorch/XLA's documented event names (no public
PyTorch/XLA trace could be found to copy: tests/torch_xla_trace.py): the run reads as training, its
ops get categories, phases and layers from PyTorch/XLA's HLO metadata, and its causes come with
fixes in PyTorch/XLA's idiom."""

from __future__ import annotations

import os

import pytest

from torch_xla_trace import write_trace
from tftrace import api

# Words of other families' fixes that must not appear in a PyTorch/XLA run's.
_FOREIGN = ("tf.data", "tf.function", "steps_per_execution", "jax.jit", "num_workers", "torch.profiler.record_function")


def _run(tmp_path, **kwargs):
    run_dir = tmp_path / "logs" / "plugins" / "profile" / "2026_01_01_00_00_00"
    os.makedirs(run_dir)
    write_trace(str(run_dir / "tpu-vm.xplane.pb"), **kwargs)
    (run,) = api.analyze(str(tmp_path / "logs"), top=None).runs
    return run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("torch_xla"))


def test_a_pytorch_xla_training_run_reads_as_training_on_its_tpu(run):
    assert run.framework == "pytorch_xla" and run.mode == "train"
    assert run.devices == ("/device:TPU:0",)
    assert run.steps.count == 8 and run.steps.source.startswith("device module 'train_step.312'")


def test_ops_get_categories_phases_and_layers_from_pytorch_xlas_hlo_metadata(run):
    ops = {o.name: o for o in run.ops}
    assert (ops["fusion.1"].category, ops["fusion.1"].phase, ops["fusion.1"].layer) == ("convolution", "forward", "conv1")
    assert (ops["fusion.3"].category, ops["fusion.3"].layer) == ("matmul", "fc")
    assert (ops["fusion.13"].category, ops["fusion.13"].phase) == ("convolution", "backward")
    assert (ops["fusion.12"].category, ops["fusion.12"].phase) == ("activation", "backward")
    assert ops["fusion.4"].category == "loss" and ops["fusion.10"].category == "loss"
    assert ops["fusion.14"].category == ops["fusion.15"].category == "optimizer"
    assert {(r.kind, r.phase) for r in run.owners} >= {("loss", "forward"), ("loss", "backward"), ("optimizer", "")}


def test_its_causes_come_with_fixes_in_pytorch_xlas_idiom(run):
    found = {b.kind: b for b in run.bottlenecks}
    assert {"lazy_tracing", "recompilation", "graph_break"} <= set(found), list(found)
    assert "torch_xla.compile" in found["lazy_tracing"].recommendation
    assert "PT_XLA_DEBUG_LEVEL" in found["recompilation"].recommendation and "drop_last=True" in found[
        "recompilation"].recommendation
    assert "xm.add_step_closure" in found["graph_break"].recommendation
    assert "xm.mark_step()" in found["graph_break"].recommendation
    for b in run.bottlenecks:
        assert not any(word in b.recommendation for word in _FOREIGN), (b.kind, b.recommendation)
    # The recompile: 40 ms once in the window (the first compile, before the first step, is the warm-up).
    assert "compiled the step's graph 1 more time" in found["recompilation"].title


def test_a_step_that_reads_no_value_and_keeps_its_shapes_has_neither_cause(tmp_path):
    run = _run(tmp_path, recompile_at=(), item=False)
    kinds = {b.kind for b in run.bottlenecks}
    assert run.mode == "train" and not {"recompilation", "graph_break"} & kinds, kinds


def test_tensorflow_and_jax_runs_are_not_read_as_pytorch_xla():
    from conftest import PUBLIC
    for path in (os.path.join(PUBLIC, "openxla__xprof", "xprof", "convert", "test_xplanes"),
                 os.path.join(PUBLIC, "tensorflow__profiler")):
        (other,) = api.analyze(path).runs
        assert other.framework == "" and not any(b.kind in ("lazy_tracing", "graph_break") for b in other.bottlenecks)
