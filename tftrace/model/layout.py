"""A run folder's layout, as capture writes it and read finds it: where the profiler puts runs,
the trace files it writes per host, and the files tftrace saves beside them."""

PROFILE_DIR = ("plugins", "profile")  # <logdir>/plugins/profile/<run>/, as TensorBoard's Profile tab reads it
TRACE_SUFFIXES = (".xplane.pb", ".trace.json.gz", ".trace.json")  # one file per host
SIDECAR = "tftrace_run.json"  # the model's metadata (layers, parameters, versions, how the window ended)
SAMPLES_FILE = "tftrace_python.json.gz"  # every thread's Python stacks, sampled during the window
EXPERIMENT = "tftrace_experiment.json"  # the figures `confirm` timed apart after the capture
