"""Two files of one capture give one answer: the trace viewer JSON that XProf exports from an
XSpace (the `*.trace.json.gz` TensorFlow used to write beside it) leads with the same owner, finds
the same steps and the same breakdown as the XSpace itself, on a GPU run and on a CPU run."""

from __future__ import annotations

import gzip
import os
import shutil

import pytest

from conftest import PUBLIC, sample
from tftrace import analyze

xprof = pytest.importorskip("xprof.convert.raw_to_tool_data")

GPU = os.path.join(PUBLIC, "tensorflow__profiler", "demo", "plugins", "profile", "GPU-multi-worker")
CASES = {"tf_gpu_public": GPU, "tf_cpu_zoo_metric": sample("zoo", "metric_auc", "plugins", "profile", "run"),
         "tf_cpu_zoo_checkpoint": sample("zoo", "checkpoint", "plugins", "profile", "run")}


def _as_trace_json(run_dir: str, out) -> str:
    """A run folder holding only the trace viewer JSON XProf makes of `run_dir`'s XSpace (and the
    sidecar tftrace wrote beside it, if any)."""
    work = out / "xspace"
    shutil.copytree(run_dir, work)  # XProf writes caches beside the file it reads
    xspace = next(str(work / f) for f in os.listdir(work) if f.endswith(".xplane.pb"))
    data = xprof.xspace_to_tool_data([xspace], "trace_viewer", {})
    data = data[0] if isinstance(data, tuple) else data
    folder = out / "json" / "plugins" / "profile" / "run"
    folder.mkdir(parents=True)
    with gzip.open(folder / (os.path.basename(xspace)[:-len(".xplane.pb")] + ".trace.json.gz"), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    for name in os.listdir(run_dir):
        if name.startswith("tftrace_") and name.endswith(".json"):
            shutil.copy(os.path.join(run_dir, name), folder / name)
    return str(out / "json")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_xspace_and_its_trace_json_give_the_same_answer(case, tmp_path):
    xspace = analyze(CASES[case], top=None).runs[0]
    legacy = analyze(_as_trace_json(CASES[case], tmp_path), top=None).runs[0]
    assert legacy.steps.count == xspace.steps.count
    assert legacy.verdict.bound == xspace.verdict.bound
    for part in ("input", "compute", "host_overhead", "idle"):
        assert getattr(legacy.breakdown, part) == pytest.approx(getattr(xspace.breakdown, part), abs=0.03), part
    assert legacy.owners[0].kind == xspace.owners[0].kind and legacy.owners[0].name == xspace.owners[0].name
    assert legacy.bottlenecks[0].id == xspace.bottlenecks[0].id, (legacy.bottlenecks[0].title,
                                                                  xspace.bottlenecks[0].title)
