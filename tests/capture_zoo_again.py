"""Capture a zoo program again, as `sample_traces/capture_zoo.py` does, in a process of its own:
`python tests/capture_zoo_again.py LOGDIR [--fixed]`. The slow program is the zoo's own
(`prog_slow_callback`: a callback with ~20 ms of Python on every batch); `--fixed` captures its fixed
twin, the same model and fit without that callback (the zoo times that twin, it does not capture it)."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "sample_traces")]

import capture_zoo  # noqa: E402


def fixed(logdir: str) -> None:
    import keras
    import tftrace
    x, y = capture_zoo._images(1024)
    model = capture_zoo.small_cnn("cb_cnn")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    capture_zoo.fit_ms_per_step(model, x, y, 16, 4)
    model.fit(x, y, batch_size=16, epochs=1, steps_per_epoch=14, verbose=0,
              callbacks=[tftrace.TraceCallback(logdir, fit_steps=(3, 12))])


if __name__ == "__main__":
    import keras
    keras.utils.set_random_seed(0)
    if "--fixed" in sys.argv:
        fixed(sys.argv[1])
    else:
        capture_zoo.prog_slow_callback()["capture"](sys.argv[1])
