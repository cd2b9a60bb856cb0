"""The interrupt scenario both capture runners play (tests/jax_capture_run.py, torch_capture_run.py):
an exception and a Ctrl-C inside fit windows keep each window, cut short; a later window opens."""

from __future__ import annotations

import os
import signal
import time

import tftrace


def cut_windows(keras, model, data, out: str) -> dict:
    """`model()` a fresh compiled Keras model, `data()` its (x, y); runs under `out`."""
    x, y = data()
    seen = {}

    class Raises(keras.callbacks.Callback):
        def __init__(self, act):
            super().__init__()
            self.act = act

        def on_train_batch_end(self, batch, logs=None):
            if batch == 4:
                self.act()

    def boom():
        raise ValueError("a callback's own error")

    # Python's own SIGINT handler, as in a terminal: a process started in the background (CI, `cmd &`)
    # inherits SIGINT ignored, and then raise_signal would do nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name, act in (("valueerror", boom), ("sigint", lambda: (signal.raise_signal(signal.SIGINT), time.sleep(5)))):
        cb = tftrace.TraceCallback(os.path.join(out, name), fit_steps=(2, 10), evaluate_steps=None)
        try:
            model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb, Raises(act)])
            seen[name] = {"raised": None}
        except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt is the point
            seen[name] = {"raised": type(e).__name__}
        seen[name]["runs"] = cb.runs
    # The profiler is free again: a later window opens.
    cb = tftrace.TraceCallback(os.path.join(out, "after"), fit_steps=(1, 2), evaluate_steps=None)
    model().fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    seen["after"] = {"runs": cb.runs}
    return seen
