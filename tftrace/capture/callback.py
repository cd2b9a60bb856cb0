"""TraceCallback: profile chosen windows of Keras fit, evaluate and predict, with step markers."""

from __future__ import annotations

import functools
import time

import keras

from tftrace.capture import backend as backends, guard, marks, session as sessions
from tftrace.capture.call_experiment import CallExperiments
from tftrace.capture.marks import own_ns  # the hooks' own time: this thread's CPU
from tftrace.capture.callback_list import calling_list, loop_frame
from tftrace.capture.step_cost import StepCosts
from tftrace.capture.pacing import Pacer
from tftrace.capture.server import serve
from tftrace.capture.session import ProfilerSession
from tftrace.capture.step_functions import STEP_FUNCTIONS
from tftrace.capture.untraced import AfterWindow
from tftrace.capture.warn import warn as _warn
from tftrace.capture.window import Window
from tftrace.capture.sidecar import describe

MAX_WINDOW_STEPS = 500  # a default window of sub-ms steps: enough for a median, a trace still small
_MODES = {"train": "fit", "test": "evaluate", "predict": "predict"}
# The model attribute each mode's step runs through: guarded while a mode runs (see _begin_mode).
_STEP_FUNCTIONS = {mode: STEP_FUNCTIONS[call] for mode, call in _MODES.items()}


class TraceCallback(keras.callbacks.Callback):
    """Capture profiler traces of chosen steps of `fit`, `evaluate` and `predict`.

    Each window becomes its own run, `<log_dir>/plugins/profile/<time>_<fit|evaluate|predict>...`,
    readable by `tftrace analyze` and by TensorBoard's Profile tab. Every captured step is
    wrapped in `tf.profiler.experimental.Trace("train"|"test"|"predict", step_num=n, _r=1)`
    (on Keras' JAX backend: `jax.profiler.StepTraceAnnotation(..., step_num=n)`, the windows
    driven by `jax.profiler.start_trace`/`stop_trace`; on torch: `record_function("ProfilerStep#n")`
    in a `torch.profiler.profile` window, and each layer's call in `record_function(layer.name)`),
    which spans every callback's batch hooks that run on the loop's thread, wherever this callback
    stands in the list. It reads no logs and adds no sync: Keras 3 keeps dispatching the callbacks'
    end hooks on its worker thread (where a backend allows it), and outside its windows it only
    checks whether one begins; inside them on JAX each step ends once the step before it has run
    (`pacing.Pacer`). While a window is open, the other callbacks' hooks are marked
    `tftrace callback <Class>.<hook>`. Other Keras backends (numpy): one warning, and training goes
    on uncaptured.
    A window cut short (Ctrl-C, or an exception anywhere in the call) is saved before the
    exception goes on, marked `cut_short` in its sidecar.
    Once a call that captured a window is over, its step's FLOPs (by the backend's own counter),
    the batch's shapes and the CPU's measured peaks go into the run's sidecar (`cost`,
    `host_peaks`; docs/cost-capture.md).

    Args:
        log_dir: the TensorBoard log directory.
        fit_steps: steps of each chosen epoch to profile: an (first, last) pair, a count after
            `warmup`, True for the default window, or None to skip training.
        epochs: which epochs (0-based) get a fit window; default: the first only.
        evaluate_steps, predict_steps: the same for evaluate and predict calls (and the
            validation pass of fit); default: a window in the first call.
        warmup: steps skipped before a default window (they hold tracing and compilation).
        window: steps in a default window, at least.
        min_window_ms: a default window goes on past its `window` steps until it has lasted this
            long (at most 500 steps and half a call of known length, never its last batch): the
            steps right after the profiler starts run slower, and five steps of a sub-millisecond
            model last a few milliseconds, so their median timed the profiler's start-up.
        host_tracer_level, python_tracer_level, device_tracer_level: the profiler's levels.
            (TensorFlow 2.21 ignores levels passed from Python: it logs "host_tracer_level
            expects an i value" and profiles at its defaults; they are passed on regardless.
            JAX takes host_tracer_level; its Python tracer is set by `python_tracer`.)
        python_tracer: the profiler's own Python tracer, True to ask for it (every Python call an
            event; it slows Python-heavy steps many times over); None (the default) or False: off on
            JAX (JAX's own default is on), the profiler's default on TensorFlow (off). The
            sampler (`python`) names the Python functions instead, for under 1% of the time.
        python: sample every thread's Python stacks while a window is open ("auto", the
            default: every 5 ms while that costs under 1% of the time, less often otherwise;
            True: every 5 ms; a number: that interval in seconds; False: off), so the report
            names the Python functions behind input and per-step time, tf.data's threads included.
        server_port: start TensorFlow's profiler server on this port when training begins, so
            `tftrace capture host:port ...` can capture this worker from outside.
        confirm: after the call (fit, evaluate, predict) that captured a window, time its input
            pipeline alone (a fresh iterator) and its step alone (on one batch held in memory),
            about the window's length each, and save the figures beside the run
            (`tftrace_experiment.json`): `tftrace analyze` then says whether they confirm the
            trace's verdict. For predict, also `model.predict` against direct calls on one batch.
            The model's weights, optimizer state and metrics are put back bit for bit; a failure
            is a warning, never an exception in your training. `self.experiments` holds the results.
    """

    def __init__(self, log_dir: str, fit_steps=True, epochs=(0,), evaluate_steps=True, predict_steps=True,
                 warmup: int = 2, window: int = 5, host_tracer_level: int = 2, python_tracer_level: int = 0,
                 device_tracer_level: int = 1, max_windows: int = 8, python: bool | float | str = "auto",
                 server_port: int | None = None, confirm: bool = False, python_tracer: bool | None = None,
                 min_window_ms: float = 100.0):
        super().__init__()
        self.python_tracer = python_tracer
        # The profiler follows Keras' backend; one Keras has no profiler of ours (torch, numpy).
        try:
            self._backend = str(keras.backend.backend())
        except Exception:
            self._backend = backends.TENSORFLOW
        self._unsupported = self._backend not in backends.NAMES
        self._opened_at = 0.0
        self.log_dir = str(log_dir)
        self.python = python
        self.server_port = server_port
        self.epochs = None if epochs is None else set(epochs)
        self._specs = {"train": fit_steps, "test": evaluate_steps, "predict": predict_steps}
        self._warmup, self._window_len = warmup, window
        self._min_window_s = min_window_ms / 1e3
        self._levels = dict(host_tracer_level=host_tracer_level, python_tracer_level=python_tracer_level,
                            device_tracer_level=device_tracer_level)
        self.max_windows = max_windows
        self.runs: list[str] = []
        self._epoch = 0
        self._windows: dict[str, Window] = {}
        self._done: set[str] = set()
        self._session: ProfilerSession | None = None
        self._session_mode = ""
        self._marker = None
        self._disabled = False
        self._in_fit = False
        # Keras skips every end hook when something raises inside fit, evaluate or predict, so the
        # calls an exception can pass through (the step functions, the CallbackList's hooks) are
        # guarded while a call runs: the window is closed and kept, then the exception goes on.
        self._guards = guard.Guards(self._abort)
        self._sigint = guard.SigintGuard(self._interrupted)
        self._callbacks = None  # the CallbackList that calls our hooks
        # The step marker opens in that list's batch-begin hook and closes in its batch-end hook, so
        # it spans every callback's (`_wrap_steps`); only modes listed here, else in our own hooks.
        self._list_modes: set[str] = set()
        self._async: frozenset[str] = frozenset()  # modes whose end hooks Keras 3 runs on its worker thread
        self._steps = marks.Patches()
        self._spe = 1  # the model's steps_per_execution, read as each call begins
        self._pacer = Pacer(self._backend)  # inside windows, steps paced by the device (JAX)
        self._marks = marks.Patches()  # the other callbacks' hooks, named while a window is open
        self._modes: list[str] = []  # running now: fit's validation pass runs evaluate inside fit
        self._experiments = CallExperiments(confirm, self._pacer)  # confirm=True's clocks and experiments
        self._after: AfterWindow | None = None  # the call's steps after its window, timed untraced
        self._costs = StepCosts(self._backend)  # each captured step's FLOPs and the host's peaks, after the call

    # -- window bookkeeping -------------------------------------------------------------------
    def _begin_mode(self, mode: str) -> None:
        self._end_after(synced=False)  # fit's validation pass (no list wrapped: no last batch's end hook)
        if self._unsupported and not self._disabled:
            self._disabled = True  # warned once per callback: every call would say the same
            _warn(f"capture is not available on Keras' {self._backend} backend (tftrace drives TensorFlow's, "
                  "JAX's and PyTorch's profilers); training goes on without a trace")
        if not (mode == "test" and self._modes == ["train"]):
            self._begin_call()  # outermost: fit, or evaluate/predict on their own
        self._modes.append(mode)
        window = Window(self._specs[mode], self._window_len, self._warmup, self._min_window_s, MAX_WINDOW_STEPS)
        if window.default:  # a window the user chose is theirs; a default one adapts to short calls
            window.fit_to(self._total_steps(mode))
        self._windows[mode] = window
        self._experiments.begin(mode)
        self._guards.wrap(self._keras_model, _STEP_FUNCTIONS[mode])

    def _begin_call(self) -> None:
        self._reset()  # whatever an earlier call left when it raised where no guard saw it
        self._spe = self._steps_per_execution()  # fixed for the call: not read again per batch
        if self._callbacks is not None:
            self._async = frozenset(m for m in _MODES if getattr(self._callbacks, f"_async_{m}", False))
            self._wrap_steps()
            # The batch hooks the step wrappers took are guarded by them (one wrapper less a batch).
            stepped = {f"on_{m}_batch_{end}" for m in self._list_modes for end in ("begin", "end")}
            for attr in dir(type(self._callbacks)):
                if attr.startswith("on_") and attr not in stepped:
                    self._guards.wrap(self._callbacks, attr)

    def _wrap_steps(self) -> None:
        """Mark each step around all the callbacks' batch hooks, as tf.keras' `train` TraceMe does:
        from our own hooks, a callback listed before us would begin its batch outside the step, one
        after us end it outside, and that time would read as idle instead of host overhead. The
        list's end hook is where the step ends, on the thread running the loop, also where Keras 3
        hands the callbacks' end hooks to its worker thread (then they run beside the next step)."""
        for mode in _MODES:
            calls, hook = self._callbacks, f"on_{mode}_batch_"
            if self._steps.put(calls, hook + "begin", functools.partial(self._step_begin, mode=mode)) \
                    and self._steps.put(calls, hook + "end", functools.partial(self._step_end, mode=mode)):
                self._list_modes.add(mode)

    def _step_begin(self, fn, mode: str):
        def on_batch_begin(batch, logs=None):  # a CallbackList's signature: no packing of arguments
            try:
                if mode in self._list_modes:
                    session = self._session
                    if session is None:  # outside a window: only whether one opens here
                        self._batch_begin(mode, batch)
                    else:
                        began = own_ns()
                        self._batch_begin(mode, batch)
                        if self._session is session:  # in the window: our own time
                            session.hooks_ns += own_ns() - began
                return fn(batch, logs)
            except BaseException as e:
                self._raised(e)
                raise
        return on_batch_begin

    def _step_end(self, fn, mode: str):
        def on_batch_end(batch, logs=None):
            try:
                out = fn(batch, logs)
                session = self._session
                if session is not None and mode in self._list_modes:
                    if self._marker is not None:  # not timed as ours: it waits while the device is behind
                        self._pacer.step_ended(logs)
                    began = own_ns()
                    self._batch_end(mode, batch, logs=logs)
                    if self._session is session:  # not the window's last step (its wait) and stop
                        session.hooks_ns += own_ns() - began
                elif self._after is not None and mode == self._after.mode:  # the steps after the window, untraced
                    if batch >= self._after.last:
                        self._end_after(synced=False)
                    else:
                        self._after.turn()
                return out
            except BaseException as e:
                self._raised(e)
                raise
        return on_batch_end

    def _unwrap_steps(self) -> None:
        self._list_modes.clear()
        self._steps.restore()

    def _reset(self) -> None:
        self._sigint.disarm()
        self._guards.restore()
        self._unwrap_steps()  # after the guards: theirs wrap ours
        self._marks.restore()
        self._unmark()
        if self._session is not None:
            if self._session.active:
                sessions.close_abandoned()
            self._session = None
        self._modes.clear()
        self._windows.clear()
        self._experiments.clear()
        self._costs.clear()  # a call an exception ended counts nothing
        self._after = None  # a stretch an exception cut short times nothing
        self._in_fit = False

    @property
    def _keras_model(self):
        """The model as set, without Keras' `model` property: on JAX that copies the trainer's whole
        state into the variables each time it is read (a sync the capture must not add per batch)."""
        model = getattr(self, "_model", None)  # tf.keras: a plain `model` attribute only
        return model if model is not None else self.model

    def _total_steps(self, mode: str) -> int | None:
        # Inside fit, params describe the fit: a validation pass's length is unknown here.
        if mode == "test" and self._in_fit:
            return None
        steps = (self.params or {}).get("steps")
        return int(steps) if steps else None

    def _steps_per_execution(self) -> int:
        try:
            return max(int(getattr(self._keras_model, "steps_per_execution", 1) or 1), 1)
        except (TypeError, ValueError):
            return 1

    def _wanted(self, mode: str) -> bool:
        if self._disabled or len(self.runs) >= self.max_windows or mode not in self._windows:
            return False
        if mode == "train":
            return self.epochs is None or self._epoch in self.epochs
        return mode not in self._done

    def _batch_begin(self, mode: str, batch: int) -> None:
        if self._session is None:
            # Outside a window this is all a batch costs: it runs before every step of the call.
            w = self._windows.get(mode)
            if w is None or w.first is None or batch > w.last or batch + self._spe - 1 < w.first:
                return
            # With steps_per_execution > 1 one call runs several steps: a chosen window opens on any
            # overlap; a default one at the first call past its warm-up (an earlier call compiles).
            if not self._wanted(mode) or (w.default and batch < w.first):
                return
            w.reached = True
            self._open(mode)
        elif not self._wanted(mode):
            return
        if self._session is not None and self._session.label.startswith(_MODES[mode]):
            self._mark(mode, batch)

    def _batch_end(self, mode: str, batch: int, completed: bool = True, logs=None) -> None:
        session = self._session
        if session is None or not session.label.startswith(_MODES[mode]):
            self._unmark(completed=completed)
            return
        w = self._windows[mode]
        at_last = batch >= w.last
        closing = at_last and not w.go_on(time.perf_counter() - self._opened_at, batch, self._spe)
        if closing:  # paced, each step holds the device work of the one before: the last its own too
            self._pacer.last_step(logs)
        self._unmark(completed=completed)
        if closing:
            self._close(mode)
        elif at_last:
            session.planned = w.planned(self._spe)

    def _open(self, mode: str) -> None:
        label = _MODES[mode] + (f"_epoch{self._epoch + 1}" if mode == "train" else "")
        session = ProfilerSession(self.log_dir, label, **self._levels, python=self.python,
                                  python_tracer=self.python_tracer, backend=self._backend)
        # Known before the window starts, so whoever closes it (us, the next capture, interpreter
        # exit) saves the same sidecar.
        session.sidecar = self._describe(mode)
        session.planned = self._windows[mode].planned(self._steps_per_execution())
        if self._pacer.on:
            session.cost["paced"] = True
        session.on_stop.append(self._marks.restore)  # also when the window is abandoned, closed elsewhere
        # The frame running the loop (Keras' fit/evaluate/predict, or the user's own): while it runs,
        # a capture started elsewhere must leave this window alone; once gone, the window is abandoned.
        frame = loop_frame(self._callbacks, (globals(), vars(guard)))
        if session.start(alive=lambda: frame is None or guard.running(frame)):
            self._session, self._session_mode = session, mode
            self._opened_at = time.perf_counter()
            self._sigint.arm()
            self._mark_callbacks()
            if session.profiler.name == backends.TORCH:  # no layer names in torch's trace otherwise
                from tftrace.capture.torch_profiler import mark_layers
                mark_layers(self._marks, self._keras_model, session.sidecar, clock=session)
        else:
            self._disabled = True  # warned once; do not retry every step

    def _mark_callbacks(self) -> None:
        if self._callbacks is None:
            return  # no list found: the other callbacks are unknown
        try:
            marks.mark_callbacks(self._marks, self._callbacks, TraceCallback, self._session.profiler.region,
                                 self._session)
        except Exception:  # the names are a bonus: the window goes on without them
            self._marks.restore()

    def _mark(self, mode: str, batch: int) -> None:
        try:
            self._marker = self._session.profiler.step(mode, int(batch))
            self._marker.__enter__()
            self._session.steps.append(int(batch))
        except Exception:
            self._marker = None

    def _unmark(self, completed: bool = False) -> None:
        if self._marker is not None:
            marker, self._marker = self._marker, None
            try:
                marker.__exit__(None, None, None)
            except Exception:
                return
            if completed:
                self._complete()

    def _complete(self) -> None:
        """The marked step counts as completed once our own end hook runs (with the marker spanning
        all callbacks, it still closes later): a cut-short window counts its steps as before."""
        session = self._session
        if session is not None and session.steps and session.completed[-1:] != session.steps[-1:]:
            session.completed.append(session.steps[-1])

    def _close(self, mode: str, reason: str = "", cut_short: str | None = None) -> None:
        self._sigint.disarm()
        self._pacer.clear()
        self._marks.restore()
        session, self._session = self._session, None
        if session is None:
            return
        self._unmark()
        if reason:
            _warn(f"{reason}; the {session.label} profile captured so far is kept")
        run = session.stop(cut_short=cut_short)
        if run:
            self.runs.append(run)
            self._costs.captured(run, mode)
            if cut_short is None:
                self._experiments.captured(mode, run, len(session.steps), time.perf_counter() - self._opened_at)
                if session.steps:
                    self._after = AfterWindow.arm(run, mode, session.steps[-1] + self._spe - 1,
                                                  self._total_steps(mode), self._pacer.settle, self._spe)
        if mode != "train":
            self._done.add(mode)

    def _describe(self, mode: str) -> dict:
        try:
            batch = (self.params or {}).get("batch_size")
            return describe(self._keras_model, mode=_MODES[mode], batch_size=batch,
                            callbacks=list(getattr(self._callbacks, "callbacks", None) or ()))
        except Exception as e:  # metadata is a bonus; never fail the capture for it
            return {"mode": _MODES[mode], "error": f"{type(e).__name__}: {e}"}

    def _end_after(self, synced: bool) -> None:
        after, self._after = self._after, None
        if after is not None:
            after.end(synced)

    def _end_mode(self, mode: str) -> None:
        self._end_after(synced=False)  # evaluate's or predict's outputs may still be on their way
        self._guards.restore(self._keras_model, _STEP_FUNCTIONS[mode])
        w = self._windows.get(mode)
        if w is not None and w.enabled and not w.reached and not w.default and self._wanted(mode):
            _warn(f"the {_MODES[mode]} window (steps {w.first}-{w.last}) lies beyond the steps that ran; "
                  "nothing was captured for it")
        if self._session is not None and self._session.label.startswith(_MODES[mode]):
            # A default window simply ends with a short call; a chosen one deserves a warning.
            short = self._windows[mode].default and self._session.steps
            self._close(mode, *(() if short else ("the window reached past the last step", "end of data")))
        self._windows.pop(mode, None)
        self._costs.mode_ended(self._keras_model, mode)  # the batch its step took, read from the call's data
        if mode in self._modes:
            self._modes.remove(mode)
        if not self._modes:
            self._guards.restore()
            self._unwrap_steps()

    # -- an exception anywhere in the call must not leave the profiler running ------------------
    def _raised(self, exc: BaseException) -> None:
        """As a guard does, for the batch hooks our step wrappers hold: a loop's normal end passes."""
        if not guard.normal_end(exc):
            self._abort(exc)

    def _abort(self, exc: BaseException) -> None:
        """Something raised out of a guarded call: Keras skips the end hooks, so close the window
        here (the exception goes on unchanged). Never raises: that would replace the user's error."""
        try:
            self._cut(type(exc).__name__)
            self._reset()
        except Exception as e:
            _warn(f"could not close the window after {type(exc).__name__} ({type(e).__name__}: {e})")

    def _interrupted(self) -> None:
        """Ctrl-C inside a window: save it before KeyboardInterrupt unwinds (see SigintGuard)."""
        try:
            self._cut("KeyboardInterrupt")
        except Exception as e:
            _warn(f"could not close the window after KeyboardInterrupt ({type(e).__name__}: {e})")

    def _cut(self, by: str) -> None:
        if self._session is not None:
            mode = self._session_mode
            self._close(mode, f"{_MODES[mode]} raised {by}", cut_short=by)

    # -- what the callback list may skip for us: we never read a batch's logs ---------------------
    # Keras 3: our end hooks do not stop its asynchronous dispatch of the callbacks' end hooks (a
    # callback overriding one turns it off for the whole call: the host then waits for each step's
    # logs). tf.keras: the logs stay tensors for us (else it converts them every batch, a sync).
    async_safe = True
    _supports_tf_logs = True

    def _implements_train_batch_hooks(self) -> bool:
        return True

    def _implements_test_batch_hooks(self) -> bool:
        return True

    def _implements_predict_batch_hooks(self) -> bool:
        return True

    # -- Keras hooks ----------------------------------------------------------------------------
    def _own_begin(self, mode: str, batch: int) -> None:
        if mode in self._list_modes and not self._experiments.on:
            return  # the list's begin hook marks the step
        if mode not in self._list_modes:  # no list wrapped: mark the step from here, as a fallback
            if self._marker is not None:  # its end hook ran on Keras' worker thread, or not at all
                self._unmark(completed=True)
            self._batch_begin(mode, batch)
        self._experiments.tick(mode, batch, traced=self._session is not None)

    def _own_end(self, mode: str, batch: int) -> None:
        """Our end hook, declared `async_safe`: Keras 3 may call it on its worker thread, so there it
        does nothing (the step ends in the list's end hook, or at the next begin hook where no list
        is wrapped). Called in turn with the others, it counts the step as completed (the marker
        still spans the hooks after ours); only a loop calling the hooks itself ends its step here."""
        if mode in self._async:
            return
        if mode in self._list_modes:
            if self._marker is not None:
                self._complete()
            return
        self._batch_end(mode, batch)

    def set_model(self, model):
        super().set_model(model)
        self._callbacks = calling_list(self)
        if self.server_port is not None and not self._unsupported:
            serve(self.server_port, self._backend)

    def on_train_begin(self, logs=None):
        self._begin_mode("train")
        self._in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._experiments.new_epoch("train")

    def on_train_batch_begin(self, batch, logs=None):
        self._own_begin("train", batch)

    def on_train_batch_end(self, batch, logs=None):
        self._own_end("train", batch)

    def on_epoch_end(self, epoch, logs=None):
        self._end_after(synced=True)  # Keras has read every step's logs
        self._experiments.end("train")
        if self._session is not None and self._session.label.startswith("fit"):
            short = self._windows["train"].default and self._session.steps
            self._close("train", *(() if short else ("the epoch ended inside the fit window", "epoch end")))

    def on_train_end(self, logs=None):
        self._end_mode("train")
        self._in_fit = False
        self._experiments.after("train", _MODES["train"], self.model)
        self._costs.call_ended(self._keras_model)  # last: nothing of the call is timed after this

    def on_test_begin(self, logs=None):
        self._begin_mode("test")

    def on_test_batch_begin(self, batch, logs=None):
        self._own_begin("test", batch)

    def on_test_batch_end(self, batch, logs=None):
        self._own_end("test", batch)

    def on_test_end(self, logs=None):
        self._experiments.end("test")
        self._end_mode("test")
        if not self._in_fit:  # fit's validation pass: fit's own experiment covers the call
            self._experiments.after("test", _MODES["test"], self.model)
            self._costs.call_ended(self._keras_model)

    def on_predict_begin(self, logs=None):
        self._begin_mode("predict")

    def on_predict_batch_begin(self, batch, logs=None):
        self._own_begin("predict", batch)

    def on_predict_batch_end(self, batch, logs=None):
        self._own_end("predict", batch)

    def on_predict_end(self, logs=None):
        self._experiments.end("predict")
        self._end_mode("predict")
        self._experiments.after("predict", _MODES["predict"], self.model)
        self._costs.call_ended(self._keras_model)

    # -- confirm=True ------------------------------------------------------------------------------
    @property
    def confirm(self) -> bool:
        return self._experiments.on

    @confirm.setter
    def confirm(self, on: bool) -> None:
        self._experiments.on = bool(on)

    @property
    def experiments(self) -> list:
        """One Experiment per confirmed call (`confirm=True`)."""
        return self._experiments.experiments
