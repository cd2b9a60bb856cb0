"""A run folder's layout, as capture writes it and read finds it: where the profiler puts runs,
the trace files it writes per host, and the files tftrace saves beside them."""

PROFILE_DIR = ("plugins", "profile")  # <logdir>/plugins/profile/<run>/, as TensorBoard's Profile tab reads it
# One file per host (PyTorch: per rank); a longer suffix before the one it ends in, so that a
# file's host is its name without its whole suffix.
TRACE_SUFFIXES = (".xplane.pb", ".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json")
# Other Chrome-trace JSON names PyTorch traces are saved under (`*_kineto.json.gz`, `trace.json`):
# read when their first bytes say PyTorch (read/kineto.py).
JSON_SUFFIXES = (".json.gz", ".json")
SIDECAR = "tftrace_run.json"  # the model's metadata (layers, parameters, versions, how the window ended)
SAMPLES_FILE = "tftrace_python.json.gz"  # every thread's Python stacks, sampled during the window
EXPERIMENT = "tftrace_experiment.json"  # the figures `confirm` timed apart after the capture
