# Whole commands, interleaved: a bare parse, tftrace analyze at HEAD (run in a worktree at /tmp/wt) and at the commit before the diagnosis detectors (/tmp/wt_base, 416094b).
# Set up: python benchmarks/make_traces.py; git worktree add /tmp/wt HEAD; git worktree add /tmp/wt_base 416094b
T=$(cd "$(dirname "$0")" && pwd)/data/captured/plugins/profile/run/host.xplane.pb
PB=$(python -c "import importlib.util as u; print(u.find_spec('tensorflow').submodule_search_locations[0])")/tsl/profiler/protobuf/xplane_pb2.py
export PYTHONPYCACHEPREFIX=/tmp/tftrace-bench-pycache
unset PYTHONDONTWRITEBYTECODE
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
for i in 1 2 3 4 5 6 7; do
  p=$(t python -c "import importlib.util,sys
spec=importlib.util.spec_from_file_location('x','$PB'); m=importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
m.XSpace.FromString(open('$T','rb').read())")
  new=$(cd /tmp/wt && t python -m tftrace analyze $T --format json --no-tensorboard)
  old=$(cd /tmp/wt_base && t python -m tftrace analyze $T --format json --no-tensorboard)
  echo "parse $p new $new old $old"
done
