"""PyTorch's input: the DataLoader a step waits for, named with its workers and fixed in torch's idiom."""

from __future__ import annotations

from tftrace.analysis.findings.fixes import fix_for
from tftrace.model.events import Trace

_SERIAL = "_SingleProcessDataLoaderIter"  # `num_workers=0`: batches load in the training process
_WORKERS = "_MultiProcessingDataLoaderIter"
_PAGEABLE = "Memcpy HtoD (Pageable"  # a copy from pageable memory: the batch was not pinned


def title(trace: Trace, device: bool) -> str:
    """The input finding's title on a PyTorch run (`device`: one with a GPU, which idles)."""
    serial = any(_SERIAL in n for n in trace.names)
    head = "Device idle while the host waits for the DataLoader" if device else "Waiting for the DataLoader"
    return head + (", loading in the training process (num_workers=0)" if serial else "")


def fix(trace: Trace, device: bool) -> str:
    """Workers for a DataLoader without them, more for one with; pinned memory where copies to the
    GPU come from pageable memory."""
    pageable = any(n.startswith(_PAGEABLE) for n in trace.names)
    pin = (", and pin its batches (`pin_memory=True`; then `batch.to(device, non_blocking=True)`) so the copies "
           "to the GPU run from page-locked memory, overlapping the kernels" if pageable else "")
    waits = "the GPU waits" if device else "each step waits"
    if any(_WORKERS in n for n in trace.names):
        return fix_for("dataloader", "workers", workers="worker processes", pin=pin, waits=waits)
    return fix_for("dataloader", "serial", pin=pin, waits=waits)
