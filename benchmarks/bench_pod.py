"""A synthetic 16-host run (1M events a host): serial vs --workers 2 vs a Dask LocalCluster, with
the main process's peak memory: `python benchmarks/bench_pod.py [--hosts 16] [--repeat 1]`.

The hosts are links to the two 1M-event traces make_traces.py writes (captured, keras_tb),
alternating, in a temporary run folder. Each way runs in a fresh process, which reports its
own wall time, its peak RSS (ru_maxrss: the main process only, not its workers) and a hash of
the JSON report.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from make_traces import trace_path  # noqa: E402

_CHILD = r"""
import hashlib, json, resource, sys, time
import tftrace.api, tftrace.render
from tftrace.malloc import keep_freed_memory
keep_freed_memory()  # as the command does
way, path = sys.argv[1], sys.argv[2]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
client = cluster = None
if way == "dask":
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
t = time.perf_counter()
report = tftrace.api.analyze(path, workers=2 if way == "workers" else 1, client=client)
text = tftrace.render.render(report, "json")
took = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"way": way, "s": took, "peak_mb": peak / 1024, "base_mb": base / 1024,
                  "json": hashlib.sha256(text.encode()).hexdigest()[:16]}))
if client is not None:
    client.close(); cluster.close()
"""


def make_run(folder: str, hosts: int, data: str | None) -> str:
    run = os.path.join(folder, "plugins", "profile", "run")
    os.makedirs(run)
    sources = [trace_path(n) if data is None else os.path.join(data, n, "plugins", "profile", "run", "host.xplane.pb")
               for n in ("captured", "keras_tb")]
    for i in range(hosts):
        os.symlink(sources[i % 2], os.path.join(run, f"host{i:02d}.xplane.pb"))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--ways", default="serial,workers,dask")
    ap.add_argument("--data", help="where make_traces.py wrote the traces (default benchmarks/data)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = make_run(tmp, args.hosts, args.data)
        env = {**os.environ, "PYTHONPATH": ROOT}
        for _ in range(args.repeat):
            for way in args.ways.split(","):
                out = subprocess.run([sys.executable, "-c", _CHILD, way, path], capture_output=True, text=True,
                                     env=env, check=True).stdout
                print(out.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
