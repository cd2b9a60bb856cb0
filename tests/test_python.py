"""Python time per function: from the Python tracer's events in a public trace, and from stack
samples of every thread taken during real Keras runs (`python=True`)."""

from __future__ import annotations

import os

import pytest

from conftest import PUBLIC, run_cli, sample, sample_file
from tftrace.analysis.python import code_owner
from tftrace.api import analyze

JAX_WITH_PYTHON_TRACER = os.path.join(PUBLIC, "AMD-AGI__TraceLens", "tests", "traces", "mi300", "jax08_attention")


def test_python_tracer_events_in_a_trace_become_the_python_table():
    run = analyze(JAX_WITH_PYTHON_TRACER, top=None).runs[0]
    py = run.python
    assert "tracer" in py.source and py.total_ps > 0
    rows = {r.function: r for r in py.rows}
    block = rows["transformer_block"]
    assert block.file == "generate_attention_trace.py" and block.line == 29 and block.thread == "main"
    assert block.total_ps > block.self_ps > 0  # it calls attention, gelu...
    assert rows["attention"].total_ps <= block.total_ps
    assert sum(r.share for r in py.rows) <= 1.0 + 1e-6  # self time of all Python time, each function once
    assert py.flame and all(0 <= n.start and n.start + n.width <= 1 + 1e-6 for n in py.flame)


def test_python_table_in_every_format():
    for fmt in ("text", "markdown", "html", "json", "csv"):
        extra = ("--table", "python") if fmt == "csv" else ()
        out = run_cli("analyze", JAX_WITH_PYTHON_TRACER, "--format", fmt, "--no-tensorboard", *extra, check=True).stdout
        assert "transformer_block" in out.replace("\\_", "_"), fmt  # Markdown escapes the underscore


def test_tracer_events_nest_into_stacks_per_thread_line():
    import numpy as np
    from tftrace.analysis.python import _nest, nest_rows
    from tftrace.model.events import Columns
    # line 0: a [0,10) holds b [1,4) (which holds c [2,3)) and c [5,9); a second a [10,12) starts as the
    # first ends. line 1: c [0,10) with the same start as line 0's a (lines never nest into each other).
    line = np.array([0, 0, 0, 0, 0, 1])
    start = np.array([0, 1, 2, 5, 10, 0])
    end = np.array([10, 4, 3, 9, 12, 10])
    frame = np.array([0, 1, 2, 2, 0, 2])
    ev = Columns({"line": line, "start_ps": start, "dur_ps": end - start})
    rows, levels, parent, _own = nest_rows(ev, np.arange(len(line)))
    assert rows.tolist() == list(range(6))  # already in (line, start, longest first) order
    sid, tree = _nest(levels, parent, frame)
    assert parent.tolist() == [-1, 0, 1, 0, -1, -1]
    assert [tree.path(i) for i in sid.tolist()] == [(0,), (0, 1), (0, 1, 2), (0, 2), (0,), (2,)]
    assert len(tree) == 5  # (0,) is made once for both calls of a


def test_stack_tree_sums_count_a_recursive_frame_once():
    import numpy as np
    from tftrace.analysis.stack_tree import from_paths, innermost_marked, outermost_of_frame, subtree_sums
    # f -> g -> f (recursion) and f -> h; samples of 5 ps at f/g/f and 3 ps at f/h.
    tree, nodes = from_paths([(0, 1, 0), (0, 2), (0, 1)])
    assert nodes.tolist() == [2, 3, 1] and len(tree) == 4
    below = subtree_sums(tree, nodes[:2], np.zeros(2, np.int64), np.array([5, 3]), 1)
    assert below[:, 0].tolist() == [8, 5, 5, 3]
    first = outermost_of_frame(tree)
    assert first.tolist() == [True, True, False, True]  # the inner f is f again
    total_f = below[first & (tree.frame == 0), 0].sum()
    assert total_f == 8  # not 13: the recursion is not counted twice
    # The innermost marked frame (h marked, value 7) is inherited by stacks under it, and none above.
    marked = innermost_marked(tree, np.array([False, False, True]), np.array([-1, -1, 7]))
    assert marked.tolist() == [-1, -1, -1, 7]


def test_runs_without_python_data_have_an_empty_python_table():
    run = analyze(sample("augment", "flatten")).runs[0]
    assert run.python.rows == () and run.python.source == ""


@pytest.mark.parametrize("content,why", [
    (b'{"samples": [[0, 1, 0, 5]], "ticks": "x"}', "no positive interval_s"),
    (b'{"samples": [[0, 1, 0, 5]], "ticks": [1], "interval_s": 0.005, "frames": [], "stacks": [[3]]}',
     "a stack names a frame that is not there"),
    (b'{"samples": [[7, 1, 0, 5]], "ticks": [1], "interval_s": 0.005, "frames": [["a.py", 1, "f"]], '
     b'"stacks": [[0]]}', "a sample's tick is not there"),
    (b"[1, 2]", "not a JSON object"), (b"{", "unreadable Python samples"),
    (b" " * (2 << 20) + b"{}", "more than 1 MB once inflated"),  # a bomb, with the limit lowered
], ids=["types", "frame-ids", "tick-ids", "not-an-object", "not-json", "bomb"])
def test_bad_python_samples_beside_a_trace_are_left_out_with_a_note(tmp_path, content, why):
    import gzip
    import json
    import shutil
    run = tmp_path / "plugins" / "profile" / "run"
    shutil.copytree(os.path.dirname(sample_file("augment", "flatten")), run)
    (run / "tftrace_python.json.gz").write_bytes(gzip.compress(content))
    proc = run_cli("analyze", str(tmp_path), "--format", "json", "--no-tensorboard", env={"TFTRACE_MAX_JSON_MB": "1"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)["runs"][0]
    assert any(why in note and "left out" in note for note in data["notes"]), data["notes"]
    assert data["verdict"]["bound"]  # the trace itself is analysed as ever


@pytest.mark.parametrize("content,why", [
    (b'{"layers": 7, "mode": 5}', "sidecar fields layers, mode malformed"),
    (b'{"layer_params": {"dense": "x"}}', "sidecar field layer_params malformed"),
    (b"[1]", "not a JSON object"), (b"{", "unreadable tftrace sidecar"),
], ids=["types", "nested", "not-an-object", "not-json"])
def test_a_bad_sidecar_beside_a_trace_is_left_out_with_a_note(tmp_path, content, why):
    import json
    import shutil
    run = tmp_path / "plugins" / "profile" / "run"
    shutil.copytree(os.path.dirname(sample_file("augment", "flatten")), run)
    (run / "tftrace_run.json").write_bytes(content)
    proc = run_cli("analyze", str(tmp_path), "--format", "json", "--no-tensorboard")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)["runs"][0]
    assert any(why in note and "left out" in note for note in data["notes"]), data["notes"]
    assert data["verdict"]["bound"]


@pytest.mark.parametrize("path,owner", [
    ("/home/me/project/train.py", "user"), ("/usr/lib/python3/dist-packages/numpy/core/x.py", "numpy"),
    ("/root/.venv/lib/python3.11/site-packages/keras/src/trainers/trainer.py", "keras"),
    ("/usr/lib/python3.11/threading.py", "python"), ("<frozen importlib._bootstrap>", "python"),
    ("ufunc_api.py", "unknown"),
])
def test_code_is_told_apart_from_libraries(path, owner):
    assert code_owner(path) == owner


# -- python=True on real Keras runs --------------------------------------------------------------
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import glob  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import tftrace  # noqa: E402
from tftrace.model.layout import SAMPLES_FILE  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402


def jitter_and_blur(batch):
    """The user's own augmentation: slow per-pixel numpy work, one batch at a time."""
    out = batch
    for _ in range(24):  # ~12 ms a batch: a 5 ms sampler sees it many times in a few steps
        out = np.clip(out + np.random.default_rng(0).normal(0, 0.01, out.shape), 0, 1)
        out = (out + np.roll(out, 1, axis=1) + np.roll(out, 1, axis=2)) / 3
    return out.astype("float32")


def load_image(path):
    """The user's own loading: decode and resize, done in Python before each call."""
    img = np.load(path).astype("float32") / 255.0
    for _ in range(24):
        img = (img + np.roll(img, 1, axis=0)) / 2
    return img.reshape(16, 32, 16, 32, 3).mean(axis=(1, 3))[None]


class Augmented(keras.utils.PyDataset):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x) // 8

    def __getitem__(self, i):
        return jitter_and_blur(self.x[i * 8:(i + 1) * 8]), self.y[i * 8:(i + 1) * 8]


def _model(shape=(32, 32, 3)):
    model = keras.Sequential([keras.Input(shape), keras.layers.Flatten(), keras.layers.Dense(4)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data(n=96):
    rng = np.random.default_rng(0)
    return rng.random((n, 32, 32, 3)).astype("float32"), rng.integers(0, 4, n)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three captures with python=True: fit from a PyDataset, fit from from_generator, and a
    predict loop that loads each image itself."""
    tmp = tmp_path_factory.mktemp("python")
    x, y = _data()
    out = {}
    model = _model()
    # Ten steps of the twelve: one step slowed by the machine (a shared CI core) stays a small
    # share beside the pipeline's, which every step pays.
    cb = tftrace.TraceCallback(str(tmp / "pydataset"), fit_steps=(2, 11), evaluate_steps=None, predict_steps=None,
                               python=True)
    model.fit(Augmented(x, y), epochs=1, verbose=0, callbacks=[cb])
    out["pydataset"] = cb.runs[0]

    def batches():
        while True:
            for i in range(0, len(x), 8):
                yield jitter_and_blur(x[i:i + 8]), y[i:i + 8]
    spec = (tf.TensorSpec((None, 32, 32, 3)), tf.TensorSpec((None,), tf.int64))
    ds = tf.data.Dataset.from_generator(batches, output_signature=spec)
    cb = tftrace.TraceCallback(str(tmp / "generator"), fit_steps=(2, 8), evaluate_steps=None, predict_steps=None,
                               python=True)
    model.fit(ds, steps_per_epoch=10, epochs=1, verbose=0, callbacks=[cb])
    out["generator"] = cb.runs[0]

    # Each image's loading (~9 ms) outlasts Python's 5 ms switch interval, after which the sampler's
    # waiting thread takes the GIL. At 256x256 (~2 ms a load) one CI run's ticks all fell in the
    # steps' quick_execute, where TensorFlow lets the GIL go, and none in the loading between them.
    paths = []
    for i in range(16):
        paths.append(str(tmp / f"img{i}.npy"))
        np.save(paths[-1], (np.random.default_rng(i).random((512, 512, 3)) * 255).astype("uint8"))
    small = _model((16, 16, 3))
    small.predict_on_batch(load_image(paths[0]))
    with tftrace.trace(str(tmp / "loop"), label="loop", python=True) as t:
        for path in paths:
            small.predict_on_batch(load_image(path))
    out["loop"] = t.run_dir
    return out


@pytest.mark.parametrize("kind", ["pydataset", "generator"])
def test_the_top_bottleneck_names_the_users_augmentation_in_the_input_pipeline(runs, kind):
    assert os.path.isfile(os.path.join(runs[kind], SAMPLES_FILE))
    run = analyze(runs[kind]).runs[0]
    top = run.bottlenecks[0]
    assert top.kind == "input" and "jitter_and_blur" in top.title and "test_python.py" in top.evidence
    rows = [r for r in run.python.rows if r.function == "jitter_and_blur"]
    assert rows and all(r.thread == "input pipeline" and r.owner == "user" for r in rows)
    assert "sampled every 5 ms" in run.python.source
    assert any(n.function == "jitter_and_blur" for n in run.python.flame if n.thread == "input pipeline")


def test_a_predict_loop_names_the_users_loading_function(runs):
    run = analyze(runs["loop"]).runs[0]
    assert run.steps.count == 16 and run.steps.source == "function 'one_step_on_data_distributed'"
    top = run.bottlenecks[0]
    assert top.kind == "idle" and "load_image" in top.title and "test_python.py" in top.evidence, \
        [(b.kind, b.title, b.evidence[:200]) for b in run.bottlenecks]
    load = next(r for r in run.python.rows if r.function == "load_image")
    assert load.thread == "main" and load.where == "between steps" and load.owner == "user"


def test_python_false_samples_nothing_and_the_default_samples_within_its_budget(tmp_path):
    x, y = _data(48)
    off = tftrace.TraceCallback(str(tmp_path / "off"), fit_steps=(1, 3), evaluate_steps=None, predict_steps=None,
                                python=False)
    _model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[off])
    assert not glob.glob(os.path.join(off.runs[0], SAMPLES_FILE))
    assert analyze(off.runs[0]).runs[0].python.rows == ()
    default = tftrace.TraceCallback(str(tmp_path / "on"), fit_steps=(1, 4), evaluate_steps=None, predict_steps=None)
    pause = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: time.sleep(0.01))  # a window of ~40 ms
    _model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[pause, default])
    with gzip.open(os.path.join(default.runs[0], SAMPLES_FILE), "rt") as f:
        data = json.load(f)
    wall_ns = data["ticks"][-1] - data["ticks"][0] + data["interval_s"] * 1e9 if data["ticks"] else 0
    assert data["samples"] and data["sampler_busy_ns"] <= 0.02 * wall_ns + 5e6, (data["sampler_busy_ns"], wall_ns)
    assert analyze(default.runs[0]).runs[0].python.rows


def test_a_clash_with_another_profiler_warns_once_and_training_goes_on(tmp_path):
    x, y = _data(48)
    before = threading.active_count()
    tf.profiler.experimental.start(str(tmp_path / "theirs"))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cb = tftrace.TraceCallback(str(tmp_path / "ours"), fit_steps=(1, 3), python=True)
            history = _model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    finally:
        tf.profiler.experimental.stop()
    assert len(history.history["loss"]) == 1 and not cb.runs
    assert len([w for w in caught if issubclass(w.category, CaptureWarning)]) == 1
    assert threading.active_count() <= before  # no sampler left running


def test_nesting_hands_a_childs_time_from_its_parent_and_takes_no_rows():
    import numpy as np
    from tftrace.analysis.python import nest_rows
    ev = {"line": np.zeros(4, np.int16), "start_ps": np.array([0, 1, 5, 20]), "dur_ps": np.array([10, 2, 1, 3])}
    rows, levels, parent, own = nest_rows(ev, np.array([3, 2, 1, 0]))  # any order in
    assert rows.tolist() == [0, 1, 2, 3] and parent.tolist() == [-1, 0, 0, -1] and own.tolist() == [7, 2, 1, 3]
    assert [len(x) for x in nest_rows(ev, np.zeros(0, np.int64))] == [0, 0, 0, 0]
