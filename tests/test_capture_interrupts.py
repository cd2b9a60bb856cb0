"""Capture survives interrupts: Ctrl-C or an error inside a window keeps the trace and frees the profiler.

Each scenario runs in its own Python process (this file, run as a script), all started at once: a
real SIGINT needs a process whose handler is Python's own (background processes start with SIGINT
ignored), and a profiler left running would poison every later capture in the same process.
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest

from conftest import ROOT
from tftrace.analysis.steps.cut_short import window_note


# -- window_note: the line a report carries for a cut-short window (pure, no TensorFlow) ------------
def test_a_full_window_gets_no_note():
    assert window_note({"steps": [2, 3, 4]}, 3) == ""
    assert window_note({}, 0) == ""


def test_a_window_cut_by_an_exception_says_by_what_after_how_many_of_the_planned_steps():
    note = window_note({"steps": [2, 3, 4, 5], "cut_short": {"by": "KeyboardInterrupt", "steps_completed": 4,
                                                             "steps_planned": 39}}, 4)
    assert note == ("this window was cut short by KeyboardInterrupt after 4 of 39 planned steps; "
                    "its figures rest on those 4 steps, not on a full window")


def test_the_step_running_at_the_cut_is_named_as_partial():
    sidecar = {"steps": [0, 1, 2], "cut_short": {"by": "ValueError", "steps_completed": 2, "partial_step": 2}}
    note = window_note(sidecar, 3)
    assert note.startswith("this window was cut short by ValueError after 2 completed steps")
    assert "step 2 ran only in part" in note
    assert "2 of the 4 steps found" in window_note(sidecar, 4)
    assert "only 1 of those steps were found" in window_note(sidecar, 1)


def test_cuts_that_are_not_exceptions_read_as_words():
    def note(by, **cut):
        return window_note({"steps": [5, 6, 7], "cut_short": {"by": by, **cut}}, 3)
    assert "cut short by the end of the epoch after 3 of 16 planned steps" in note(
        "epoch end", steps_completed=3, steps_planned=16)
    assert "cut short by the interpreter's exit" in note("interpreter exit", steps_completed=3)
    assert "did not see" in note("unknown", steps_completed=3)


def test_a_window_without_step_markers_or_with_no_step_done():
    unmarked = {"steps": [], "cut_short": {"by": "GeneratorExit", "steps_completed": 0}}
    assert window_note(unmarked, 0) == ("this window was cut short by GeneratorExit; "
                                        "it holds only the part of the run before that")
    early = {"steps": [2], "cut_short": {"by": "KeyboardInterrupt", "steps_completed": 0, "steps_planned": 5,
                                         "partial_step": 2}}
    assert "after 0 of 5 planned steps; step 2 ran only in part" in window_note(early, 1)
    assert "no step completed" in window_note({**early, "steps": []}, 0)
    assert window_note({"cut_short": "garbled"}, 3) == ""


# -- the scenarios, each run in a child process -------------------------------------------------------
def _kill_self():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)  # the handler runs here: KeyboardInterrupt ends the sleep


def _callback(hook: str, at: int, act):
    import keras

    class Other(keras.callbacks.Callback):
        pass

    def fire(self, batch, logs=None):
        if batch == at:
            act()
    setattr(Other, hook, fire)
    return Other()


def _model():
    import keras
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="hidden"),
                              keras.layers.Dense(1, name="out")])
    model.compile("sgd", "mse")
    return model


def _data(n=64):
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.random((n, 4)).astype("float32"), rng.random((n, 1)).astype("float32")


def _fit(log_dir, act):
    import tftrace
    x, y = _data()
    other = _callback("on_train_batch_end", 5, act)
    _model().fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[
        tftrace.TraceCallback(log_dir, fit_steps=(2, 40), evaluate_steps=None, predict_steps=None), other])


def _raise(exc, raised):
    def act():
        raised["exc"] = exc
        raise exc
    return act


def _fit_sigint(log_dir, raised):
    _fit(log_dir, _kill_self)


def _fit_keyboardinterrupt(log_dir, raised):
    _fit(log_dir, _raise(KeyboardInterrupt(), raised))


def _fit_valueerror(log_dir, raised):
    _fit(log_dir, _raise(ValueError("a callback's own error"), raised))


def _predict_sigint(log_dir, raised):
    import tftrace
    x, _y = _data()
    # The interrupting callback runs first: step 5 is cut mid-way, as a real Ctrl-C would.
    _model().predict(x, batch_size=4, verbose=0, callbacks=[
        _callback("on_predict_batch_end", 5, _kill_self), tftrace.TraceCallback(log_dir, predict_steps=(2, 40))])


def _predict_sigint_from_outside(log_dir, raised):
    """The parent sends SIGINT at a random moment after batch 3: it lands wherever predict is,
    often in Keras' own batch fetching, which no wrapped call covers."""
    import tftrace
    x, _y = _data(4096)
    model = _model()
    ready = _callback("on_predict_batch_end", 3, lambda: print("READY", flush=True))
    for attempt in range(4):  # TensorFlow swallows a KeyboardInterrupt landing inside some of its C calls
        model.predict(x, batch_size=1, verbose=0, callbacks=[
            tftrace.TraceCallback(os.path.join(log_dir, str(attempt)), predict_steps=(2, 100000)), ready])


def _trace_sigint(log_dir, raised):
    import tftrace
    model = _model()
    x, _y = _data(8)
    with tftrace.trace(log_dir, label="loop", model=model):
        for i in range(40):
            with tftrace.step("predict", i):
                model(x, training=False)
                if i == 5:
                    _kill_self()


def _predict_data_error(log_dir, raised):
    """A generator that fails mid-window: Keras 3 fetches predict's batches outside every call
    tftrace wraps, so this window is left open until the next capture."""
    import tftrace
    x, _y = _data()

    def batches():
        for i in range(16):
            if i == 8:
                raise ValueError("bad batch")
            yield (x[i * 4:(i + 1) * 4],)
    _model().predict(batches(), steps=16, verbose=0, callbacks=[tftrace.TraceCallback(log_dir, predict_steps=(2, 12))])


def _nested_captures(log_dir, raised):
    """Captures inside a live window (and a window inside a live trace) are skipped with a warning;
    neither cuts the one already running."""
    import tftrace
    x, y = _data()
    inner = {}

    def trace_inside():
        with tftrace.trace(os.path.join(log_dir, "inner"), label="inner") as t:
            pass
        inner["run"] = t.run_dir
    model = _model()
    fit_cb = tftrace.TraceCallback(log_dir, fit_steps=(2, 8), evaluate_steps=None, predict_steps=None)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0,
              callbacks=[fit_cb, _callback("on_train_batch_end", 4, trace_inside)])
    with tftrace.trace(os.path.join(log_dir, "outer"), label="outer") as outer:
        window = tftrace.TraceCallback(os.path.join(log_dir, "skipped"), predict_steps=(1, 3))
        model.predict(x, batch_size=4, verbose=0, callbacks=[window])
    return {"fit_runs": fit_cb.runs, "inner": inner["run"], "outer": outer.run_dir, "skipped": window.runs}


SCENARIOS = {f.__name__[1:]: f for f in (_fit_sigint, _fit_keyboardinterrupt, _fit_valueerror, _predict_sigint,
                                         _predict_sigint_from_outside, _trace_sigint, _predict_data_error,
                                         _nested_captures)}


def _traces(log_dir):
    return sorted(glob.glob(os.path.join(log_dir, "**", "*.xplane.pb"), recursive=True))


def _generator_exit(log_dir) -> str | None:
    """A trace() inside a generator that its consumer closes early."""
    import tftrace
    model = _model()
    x, _y = _data(8)
    t = tftrace.trace(log_dir, label="gen")

    def predictions():
        with t:
            for i in range(40):
                with tftrace.step("predict", i):
                    out = model(x, training=False)
                yield out
    gen = predictions()
    for _ in range(3):
        next(gen)
    gen.close()
    return t.run_dir


def _capture_warnings(caught) -> list[str]:
    from tftrace.capture.warn import CaptureWarning
    return [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]


def child(scenario: str, log_dir: str) -> None:
    """Run one scenario; print what the caller saw as one JSON line."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import tftrace
    window_dir = os.path.join(log_dir, "window")
    out, raised = {"caught": None}, {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["returned"] = SCENARIOS[scenario](window_dir, raised)
        except BaseException as e:  # what reaches the caller, whatever it is
            tb = e.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            out.update(caught=type(e).__name__, same=e is raised.get("exc"), innermost=tb.tb_frame.f_code.co_name,
                       traces_at_catch=_traces(window_dir))
        out["warnings_at_catch"] = _capture_warnings(caught)
        with tftrace.trace(os.path.join(log_dir, "after"), label="after") as t:
            _model().predict(_data(8)[0], verbose=0)
        out["after"] = t.run_dir
        if scenario == "trace_sigint":
            out["generator_exit"] = _generator_exit(os.path.join(log_dir, "gen"))
        if scenario == "predict_data_error":  # a second window left open, now until the interpreter exits
            try:
                SCENARIOS[scenario](os.path.join(log_dir, "at_exit"), raised)
            except Exception:
                pass
    out["warnings"] = _capture_warnings(caught)
    print("RESULT " + json.dumps(out), flush=True)


# -- the parent side ------------------------------------------------------------------------------------
class Child:
    """One scenario's process; a reader thread answers READY with a SIGINT a moment later."""

    def __init__(self, scenario: str, log_dir: str):
        self.log_dir = log_dir
        # One thread each: seven TensorFlow processes share a small machine.
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "tests")])}
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), scenario, log_dir], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._stderr: list[str] = []
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("READY"):
                time.sleep(random.uniform(0.0, 0.3))
                self.proc.send_signal(signal.SIGINT)

    def result(self, timeout: float = 300) -> dict:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for t in self._threads:
            t.join(10)
        results = [x for x in self.lines if x.startswith("RESULT ")]
        assert results, f"the child printed no result (exit {self.proc.returncode}):\n{''.join(self._stderr)[-3000:]}"
        return json.loads(results[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("interrupts")
    started = {name: Child(name, str(root / name)) for name in SCENARIOS}
    yield started
    for c in started.values():
        if c.proc.poll() is None:
            c.proc.kill()


def _window_run(log_dir: str) -> str:
    runs = sorted({os.path.dirname(p) for p in _traces(os.path.join(log_dir, "window"))})
    assert len(runs) == 1, runs
    return runs[0]


def _check(c: Child, caught: str, by: str, completed: int, planned: int | None = None, partial: int | None = None,
           same: bool = True, warning: str = "raised") -> dict:
    """The exception reached the caller, the window was saved before it did and reads as a cut-short
    run with its steps, and a capture right after wrote its own trace."""
    from tftrace.api import analyze
    out = c.result()
    assert out["caught"] == caught
    if same:
        assert out["same"], "the caller got another exception object than the one raised"
    run = _window_run(c.log_dir)
    saved = [os.path.dirname(p) for p in out["traces_at_catch"]]
    assert saved == [run], "the window was not saved before the caller saw the exception"
    sidecar = json.load(open(os.path.join(run, "tftrace_run.json")))
    expected = {"by": by, "steps_completed": completed}
    expected.update({} if planned is None else {"steps_planned": planned})
    expected.update({} if partial is None else {"partial_step": partial})
    assert sidecar["cut_short"] == expected
    report = analyze(run).runs[0]
    found = report.steps.count
    assert found == completed + (partial is not None)
    assert window_note(sidecar, found).startswith(f"this window was cut short by {by}")
    assert report.cut_short == window_note(sidecar, found)  # the report says so, in every format
    assert out["after"] and _traces(out["after"]) and not out["after"].startswith(run)
    assert len(out["warnings"]) == 1 and warning in out["warnings"][0], out["warnings"]
    assert out["warnings_at_catch"] == out["warnings"]  # said before the caller saw the exception
    return out


def test_a_real_sigint_inside_a_fit_window(children):
    out = _check(children["fit_sigint"], "KeyboardInterrupt", "KeyboardInterrupt", 4, planned=39, same=False)
    assert "fit raised KeyboardInterrupt; the fit_epoch1 profile captured so far is kept" in out["warnings"][0]


def test_keyboardinterrupt_from_another_callback_inside_a_fit_window(children):
    out = _check(children["fit_keyboardinterrupt"], "KeyboardInterrupt", "KeyboardInterrupt", 4, planned=39)
    assert out["innermost"] == "act"  # the traceback still ends where it was raised


def test_valueerror_from_another_callback_inside_a_fit_window(children):
    out = _check(children["fit_valueerror"], "ValueError", "ValueError", 4, planned=39)
    assert out["innermost"] == "act"


def test_a_real_sigint_inside_a_predict_window_cuts_its_step(children):
    _check(children["predict_sigint"], "KeyboardInterrupt", "KeyboardInterrupt", 3, planned=39, partial=5, same=False)


def test_a_sigint_from_outside_wherever_it_lands_in_predict(children):
    from tftrace.api import analyze
    c = children["predict_sigint_from_outside"]
    out = c.result()
    assert out["caught"] == "KeyboardInterrupt"
    # One run per attempt that was interrupted (an attempt whose KeyboardInterrupt TensorFlow
    # swallowed ran on, but its window was still saved at the Ctrl-C).
    saved = sorted({os.path.dirname(p) for p in out["traces_at_catch"]})
    assert saved and _traces(out["after"])
    for run in saved:
        sidecar = json.load(open(os.path.join(run, "tftrace_run.json")))
        assert sidecar["cut_short"]["by"] == "KeyboardInterrupt"
        assert analyze(run).runs[0].steps.count >= sidecar["cut_short"]["steps_completed"] >= 2


def test_a_real_sigint_inside_trace_with_steps(children):
    out = _check(children["trace_sigint"], "KeyboardInterrupt", "KeyboardInterrupt", 5, partial=5, same=False,
                 warning="the traced block raised KeyboardInterrupt")
    gen_run = out["generator_exit"]
    assert gen_run and _traces(gen_run)
    cut = json.load(open(os.path.join(gen_run, "tftrace_run.json")))["cut_short"]
    assert cut == {"by": "GeneratorExit", "steps_completed": 3}


def test_a_window_left_open_where_no_guard_sees_is_closed_by_the_next_capture_or_at_exit(children):
    from tftrace.api import analyze
    c = children["predict_data_error"]
    out = c.result()
    assert out["caught"] == "InvalidArgumentError" and out["traces_at_catch"] == []
    assert len(out["warnings"]) >= 1 and "left open" in out["warnings"][0] and "kept" in out["warnings"][0]
    run = _window_run(c.log_dir)
    sidecar = json.load(open(os.path.join(run, "tftrace_run.json")))
    assert sidecar["cut_short"]["by"] == "unknown" and sidecar["mode"] == "predict"
    assert analyze(run).runs[0].steps.count >= 1
    assert out["after"] and _traces(out["after"])
    (at_exit,) = {os.path.dirname(p) for p in _traces(os.path.join(c.log_dir, "at_exit"))}
    assert json.load(open(os.path.join(at_exit, "tftrace_run.json")))["cut_short"]["by"] == "interpreter exit"


def test_captures_inside_a_live_window_are_skipped_and_cut_nothing(children):
    out = children["nested_captures"].result()
    assert out["caught"] is None
    got = out["returned"]
    assert len(got["fit_runs"]) == 1 and got["inner"] is None and got["skipped"] == []
    sidecar = json.load(open(os.path.join(got["fit_runs"][0], "tftrace_run.json")))
    assert "cut_short" not in sidecar and sidecar["steps"] == [2, 3, 4, 5, 6, 7, 8]
    assert got["outer"] and _traces(got["outer"])
    assert [w.split(";")[0] for w in out["warnings"]] == [
        "tftrace: another tftrace capture (fit_epoch1) is running", "tftrace: another tftrace capture (outer) is running"]


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
