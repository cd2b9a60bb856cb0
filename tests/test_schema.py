"""Our own XSpace message classes: TensorFlow-free, and no clash when TensorFlow is loaded."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, sample_file


def test_parses_without_tensorflow_and_coexists_with_tensorflows_own_xplane_pb2():
    code = f"""
import sys
sys.path.insert(0, {ROOT!r})
from tftrace.read.schema import XSpace
assert 'tensorflow' not in sys.modules
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # TF's own classes, same message names
data = open({sample_file('augment', 'gap')!r}, 'rb').read()
ours, theirs = XSpace(), xplane_pb2.XSpace()
ours.ParseFromString(data); theirs.ParseFromString(data)
assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
print('ok', len(ours.planes))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]
