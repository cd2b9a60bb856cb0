"""Capture the held-out real programs (`real/<name>/program.py`, keras-io examples) the ways users do.

`python sample_traces/capture_real.py capture [--only NAME ...]` runs each program's fit once with
tftrace's `TraceCallback` (or, for the two listed in STOCK, Keras' own `TensorBoard(profile_batch=
...)`) into `real/<name>/plugins/profile/run/`, and once more with `TraceCallback(confirm=True)`
into `real/<name>_confirm/plugins/profile/run/`. `python sample_traces/time_real.py` then times
every top-3 finding's fix without the profiler (`real/truth.json`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "real")
PROGRAMS = ["text_cnn", "vae", "recommender", "xception", "bilstm", "transformer"]
# Captured with Keras' own TensorBoard callback, the batches it profiles (Keras counts them from
# the fit's first, across epochs): in the second epoch, as the others' windows.
STOCK = {"bilstm": (18, 21), "transformer": (18, 23)}
# The epoch TraceCallback captures: the second, once the first has traced the step and filled the
# text pipeline's cache (the steady state the timings measure).
CAPTURED_EPOCH = 1


def load(name: str):
    """The program's module, imported from its file (each under its own module name)."""
    spec = importlib.util.spec_from_file_location(f"real_{name}", os.path.join(REAL, name, "program.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(program, changes: dict | None = None):
    """(model, fit keyword arguments, the program's own callbacks), seeded alike every time."""
    import keras
    keras.utils.set_random_seed(0)
    data = program.data(changes)
    model = program.model(changes)
    own = program.callbacks() if hasattr(program, "callbacks") else []
    return model, data, own


def _runs(logdir: str) -> list[str]:
    out = []
    for folder, _dirs, files in os.walk(logdir):
        if any(f.endswith(".xplane.pb") for f in files):
            out.append(folder)
    return sorted(out)


def capture(name: str, confirm: bool = False) -> str:
    """Run the program's fit with its profiler callback; move the one run into the repository."""
    import keras

    import tftrace
    program = load(name)
    model, data, own = build(program)
    logdir = tempfile.mkdtemp(prefix=f"tftrace_real_{name}_")
    if name in STOCK and not confirm:
        tracer = keras.callbacks.TensorBoard(logdir, profile_batch=STOCK[name])
    else:
        tracer = tftrace.TraceCallback(logdir, epochs=(CAPTURED_EPOCH,), evaluate_steps=None,
                                       predict_steps=None, confirm=confirm)
    model.fit(**data, epochs=program.EPOCHS, verbose=0, callbacks=[*own, tracer])
    runs = _runs(logdir)
    if len(runs) != 1:
        sys.exit(f"{name}: expected one captured run in {logdir}, got {runs}")
    dst = os.path.join(REAL, name + ("_confirm" if confirm else ""), "plugins", "profile", "run")
    shutil.rmtree(os.path.dirname(os.path.dirname(dst)), ignore_errors=True)  # <name>/plugins, never the program
    os.makedirs(os.path.dirname(dst))
    shutil.move(runs[0], dst)
    for f in os.listdir(dst):  # a stable host name, so a regenerated file diffs cleanly
        if f.endswith(".xplane.pb") and f != "sample.xplane.pb":
            os.rename(os.path.join(dst, f), os.path.join(dst, "sample.xplane.pb"))
    shutil.rmtree(logdir, ignore_errors=True)
    return dst


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["capture", "confirm", "both", "one"])
    parser.add_argument("--only", nargs="*", default=PROGRAMS)
    parser.add_argument("--confirm", action="store_true", help="with `one`: the confirm=True capture")
    args = parser.parse_args(argv)
    if args.what == "one":  # one capture in this process
        print(args.only[0], "->", capture(args.only[0], confirm=args.confirm), flush=True)
        return
    # Each capture in a fresh process: Keras numbers layers by how many of a kind the process has
    # made, and a finding's id names its layer, so a capture made after another would rename it.
    for name in args.only:
        for confirm in {"capture": [False], "confirm": [True], "both": [False, True]}[args.what]:
            cmd = [sys.executable, os.path.abspath(__file__), "one", "--only", name] + (["--confirm"] if confirm else [])
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
