"""TraceCallback names the other callbacks' hooks in a window, inside steps that span every callback."""

from __future__ import annotations

import json
import os
import statistics
import time

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import tftrace  # noqa: E402
from tftrace.capture.warn import CaptureWarning  # noqa: E402

pytestmark = pytest.mark.slow
MS = 10**9  # picoseconds


def tiny_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="hidden"),
                              keras.layers.Dense(1, name="out")])
    model.compile("sgd", "mse")
    return model


def fit(callbacks):
    """12 steps of 8 samples."""
    rng = np.random.default_rng(0)
    x, y = rng.random((96, 4)).astype("float32"), rng.random((96, 1)).astype("float32")
    tiny_model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=callbacks)


def window(log_dir):
    """A fit window over steps 2-9."""
    return tftrace.TraceCallback(str(log_dir), fit_steps=(2, 9), evaluate_steps=None, predict_steps=None)


def spans(run, name):
    """(start_ps, dur_ps) of every event called `name`, in time order."""
    trace = tftrace.load(run)
    rows = trace.named(trace.codes([name]))
    return sorted(zip(trace.events["start_ps"][rows].tolist(), trace.events["dur_ps"][rows].tolist()))


def inside(span, steps):
    return any(s <= span[0] and span[0] + span[1] <= s + d for s, d in steps)


def hooks_on_instance(obj):
    return sorted(k for k in vars(obj) if k.startswith("on_"))


class Sleepy(keras.callbacks.Callback):
    """A slow callback; notes whether its hook ran wrapped (it is, only while a window is open)."""

    def __init__(self):
        super().__init__()
        self.wrapped = {}

    def on_train_batch_begin(self, batch, logs=None):
        time.sleep(0.005)

    def on_train_batch_end(self, batch, logs=None):
        self.wrapped[batch] = "on_train_batch_end" in vars(self)
        time.sleep(0.015)


def _lambda_end(batch, logs=None):
    pass


@pytest.fixture(scope="module", params=["before", "after"])
def sleepy_run(request, tmp_path_factory):
    sleepy, lam = Sleepy(), keras.callbacks.LambdaCallback(on_train_batch_end=_lambda_end)
    cb = window(tmp_path_factory.mktemp(request.param))
    fit([sleepy, lam, cb] if request.param == "before" else [cb, sleepy, lam])
    assert len(cb.runs) == 1
    return cb, sleepy, lam


def test_other_callbacks_hooks_are_named_inside_the_step_markers_wherever_they_stand(sleepy_run):
    cb, _sleepy, _lam = sleepy_run
    run = cb.runs[0]
    steps = spans(run, "train")
    assert len(steps) == 8 == len(json.load(open(os.path.join(run, "tftrace_run.json")))["steps"])
    ends = spans(run, "tftrace callback Sleepy.on_train_batch_end")
    begins = spans(run, "tftrace callback Sleepy.on_train_batch_begin")
    assert len(ends) == len(begins) == 8
    assert all(inside(s, steps) for s in ends + begins)
    assert 14 * MS <= statistics.median(d for _s, d in ends) < 40 * MS
    assert min(d for _s, d in ends) >= 14 * MS
    assert len(spans(run, "tftrace callback LambdaCallback.on_train_batch_end")) == 8
    assert not spans(run, "tftrace callback TraceCallback.on_train_batch_end")
    # The step holds the callbacks' 20 ms: host work in the step, not idle time between steps.
    report = tftrace.analyze(run).runs[0]
    assert report.steps.count == 8 and min(s.dur_ps for s in report.steps.steps) >= 20 * MS
    assert report.verdict.bound == "host_overhead" and report.breakdown.idle < 0.1
    assert "Sleepy.on_train_batch_end" in report.bottlenecks[0].title  # the analysis names the callback


def test_hooks_are_wrapped_only_while_the_window_is_open_and_put_back_after(sleepy_run):
    cb, sleepy, lam = sleepy_run
    assert sleepy.wrapped == {b: 2 <= b <= 9 for b in range(12)}
    assert hooks_on_instance(sleepy) == [] and sleepy.on_train_batch_end.__func__ is Sleepy.on_train_batch_end
    assert vars(lam)["on_train_batch_end"] is _lambda_end  # LambdaCallback's own attribute, the same object
    assert hooks_on_instance(cb._callbacks) == []  # the CallbackList's step markers and guards are gone


class Boom(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 4:
            self.raised = ValueError("a callback's own error")
            raise self.raised


def test_a_callback_raising_in_a_window_reaches_the_user_unchanged_and_is_put_back(tmp_path):
    boom, cb = Boom(), window(tmp_path)
    with pytest.warns(CaptureWarning, match="raised ValueError"):
        with pytest.raises(ValueError) as caught:
            fit([boom, cb])
    assert caught.value is boom.raised
    innermost = caught.traceback[-1]  # the traceback still ends where it was raised
    assert innermost.name == "on_train_batch_end" and innermost.path.name == "test_capture_callbacks.py"
    assert hooks_on_instance(boom) == [] and hooks_on_instance(cb._callbacks) == []
    (run,) = cb.runs
    sidecar = json.load(open(os.path.join(run, "tftrace_run.json")))
    assert sidecar["cut_short"] == {"by": "ValueError", "steps_completed": 2, "steps_planned": 8, "partial_step": 4}
    assert len(spans(run, "tftrace callback Boom.on_train_batch_end")) == 3  # steps 2, 3 and the one that raised
    tf.profiler.experimental.start(str(tmp_path / "after"))  # the profiler was stopped
    tf.profiler.experimental.stop()


def test_model_checkpoint_saves_show_as_its_longer_batch_ends(tmp_path):
    checkpoint = keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt.weights.h5"), save_weights_only=True, save_freq=3)
    cb = window(tmp_path / "logs")
    fit([checkpoint, cb])
    marks = spans(cb.runs[0], "tftrace callback ModelCheckpoint.on_train_batch_end")
    assert len(marks) == 8  # steps 2-9; it saves after steps 2, 5 and 8
    durations = [d for _s, d in marks]
    longest = sorted(range(8), key=lambda i: -durations[i])[:3]
    assert sorted(longest) == [0, 3, 6]
    rest = [d for i, d in enumerate(durations) if i not in longest]
    assert min(durations[i] for i in longest) > 10 * statistics.median(rest)


def test_a_loop_calling_the_hooks_itself_still_marks_its_steps(tmp_path):
    """No CallbackList to find: the step markers open and close in TraceCallback's own hooks."""
    model = tiny_model()
    cb = tftrace.TraceCallback(str(tmp_path), predict_steps=(1, 3))
    cb.set_model(model)
    cb.on_predict_begin()
    x = np.zeros((8, 4), "float32")
    for i in range(5):
        cb.on_predict_batch_begin(i)
        model(x, training=False)
        cb.on_predict_batch_end(i)
    cb.on_predict_end()
    assert cb._callbacks is None and len(cb.runs) == 1
    assert len(spans(cb.runs[0], "predict")) == 3


class Counter(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_predict_batch_end(self, batch, logs=None):
        self.batches += 1


def test_a_window_left_open_where_no_guard_sees_puts_the_hooks_back_when_closed(tmp_path):
    """Keras 3 fetches predict's batches outside every call tftrace guards: a failing generator
    leaves the window open until the next capture closes it, and that puts the hooks back too."""
    x = np.zeros((4, 4), "float32")

    def batches():
        for i in range(16):
            if i == 8:
                raise ValueError("bad batch")
            yield (x,)
    counter, cb = Counter(), tftrace.TraceCallback(str(tmp_path / "window"), predict_steps=(2, 12))
    with pytest.raises(Exception):
        tiny_model().predict(batches(), steps=16, verbose=0, callbacks=[counter, cb])
    assert hooks_on_instance(counter) == ["on_predict_batch_end"] and cb.runs == []
    with pytest.warns(CaptureWarning, match="left open"):
        with tftrace.trace(str(tmp_path / "next")):
            pass
    assert hooks_on_instance(counter) == [] and counter.batches == 8
