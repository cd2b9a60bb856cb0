"""Parse event names: TF op `name:type`, eager ops, tf.data stages, device kernels."""

from __future__ import annotations

import re
from typing import NamedTuple

# TF graph op names and types, as TensorFlow writes them into `name:type` event names.
_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>\-]*\Z")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*\Z")
_EAGER_PREFIX = "EagerLocalExecute: "
_FUNCTION_TYPES = ("__inference_", "__forward_", "__backward_")
# PJRT's host callbacks, named `Kind:What` like a TF op though they are runtime machinery.
_RUNTIME_CALLBACKS = ("ThenExecuteCallback",)
# TraceCallback names each other callback's hooks `tftrace callback <Class>.<hook>` in the trace;
# the analysis reads them back (capture and analysis share this one spelling).
CALLBACK_MARK = "tftrace callback "
# A torch module's call: torch.profiler's with_stack names it so, and tftrace's capture names its ranges alike.
TORCH_MODULE = "nn.Module: "
_MEMCPY = ("MemcpyHToD", "MemcpyDToH", "MemcpyDToD", "MemcpyHToH", "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "MemcpyP2P")


# The scopes Keras' optimizers run their updates in (`adam/`, `sgd_1/`; JAX's `jit(train_step)/adam/`).
OPTIMIZER_SCOPES = {"adam", "adamw", "sgd", "rmsprop", "adagrad", "adadelta", "adamax", "nadam",
                    "ftrl", "lion", "optimizer", "sgd_optimizer", "momentum", "lamb", "adafactor"}
_SUFFIXED = re.compile(r"_\d+\Z")


def in_optimizer(path: str) -> bool:
    """Does a scope path (`jit(train_step)/adam_1/add`, `StatefulPartitionedCall/sgd/Mul`) run
    inside an optimizer's scope?"""
    return any(_SUFFIXED.sub("", s).lower() in OPTIMIZER_SCOPES for s in path.split("/"))


# Where a kernel or HLO name says "convolution" (and `loop_convert_fusion`, a type conversion, does not).
_CONV_MARKS = ("convolution", "convolve", "conv_", "conv-", "-conv", "conv1d", "conv2d", "conv3d", "fprop", "dgrad",
               "wgrad", "nhwc", "nchw")


def names_convolution(lower: str) -> bool:
    """Does a lowercase kernel or HLO name name a convolution?"""
    return any(k in lower for k in _CONV_MARKS) or lower.startswith("conv") and not lower.startswith("convert")


# JAX records each call of a jitted function on the calling thread as `PjitFunction(<name>)`.
JIT_CALL = "PjitFunction("


def jit_function(event_name: str) -> str | None:
    """`PjitFunction(train_step)` -> `train_step`; None for any other event."""
    if event_name.startswith(JIT_CALL) and event_name.endswith(")"):
        return event_name[len(JIT_CALL):-1]
    return None


# PyTorch's wait for the next batch: `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`.
DATALOADER = "DataLoader.__next__"
# Ops that wait for the next batch of input data (the iterator's, a TPU's infeed, a DataLoader's).
INPUT_TYPES = {"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional", "OptionalGetValue",
               "MultiDeviceIteratorGetNextFromShard", "InfeedDequeue", "InfeedDequeueTuple", DATALOADER}
H2D = ("memcpyh2d", "memcpyhtod")  # device copy op types (lowercase prefixes) that carry input into a device


class Op(NamedTuple):
    """What an event name says about the op it times."""

    name: str
    type: str
    kind: str  # "tf" (graph op), "eager" (op run eagerly), "data" (tf.data stage), "memcpy", "device"
    # (a device kernel or op), "xla" (an XLA op run by the host: XLA:CPU's thunks), "torch" (a PyTorch
    # op on the host: `aten::conv2d`)
    source: str = ""  # XLA ops: the framework's scope path (JAX `jit(f)/jvp(dense)/dot_general`)
    precision: str = ""  # device kernels: the arithmetic their name tells (fp32, tf32, bf16, fp16, fp8)
    code: str = ""  # XLA ops: the Python stack that made the op, innermost first (`loss_fn@train.py:42 < main@train.py:9`)


def is_input_event(name: str, op: Op | None) -> bool:
    """The event waits for input data: an iterator's next batch, or a copy into the device."""
    if name.lower().startswith("iteratorgetnext"):
        return True
    if op is None:
        return False
    return op.type in INPUT_TYPES or (op.kind == "device" and op.type.lower().startswith(H2D))


def parse_host_event(event_name: str) -> Op | None:
    """The op a host event times, or None when the event is runtime machinery, not an op."""
    if event_name.startswith(_EAGER_PREFIX):
        op_type = event_name[len(_EAGER_PREFIX):]
        # An eagerly called tf.function is not an op: its ops run (and are timed) inside it.
        if op_type.startswith(_FUNCTION_TYPES) or not _TF_TYPE.match(op_type):
            return None
        return Op(op_type, op_type, "eager")
    if event_name.startswith("Iterator::"):
        return Op(event_name, stage_name(event_name), "data")
    if event_name.startswith(_RUNTIME_CALLBACKS):  # `ThenExecuteCallback:GetEvent...` reads as name:Type
        return None
    head, sep, tail = event_name.partition(":")
    if not sep:
        return _memcpy(event_name)
    if _TF_TYPE.match(tail) and _TF_NAME.match(head):
        return Op(head, tail, "tf")
    return None


def _memcpy(event_name: str) -> Op | None:
    for prefix in _MEMCPY:
        if event_name.lower().startswith(prefix.lower()):
            return Op(event_name, prefix, "memcpy")
    return None


def parse_tf_op(label: str) -> tuple[str, str] | None:
    """`scope/name:Type` (a `tf_op` stat) as (name, type), or None if it is not one."""
    head, sep, tail = label.partition(":")
    if sep and tail and _TF_TYPE.match(tail) and _TF_NAME.match(head):
        return head, tail
    return None


_ANNOTATION_ARGS = re.compile(r"#[^#]*#")


def strip_annotation(annotation: str) -> str:
    """A GPU kernel annotation `outer::op:Type#k=v#` reduced to its innermost `op:Type`."""
    parts = [p for p in _ANNOTATION_ARGS.sub("", annotation).split("::") if p]
    return parts[-1] if parts else ""


def stage_name(event_name: str) -> str:
    """A tf.data iterator event `Iterator::Prefetch::Map` as its own stage, `Map`."""
    return event_name.rsplit("::", 1)[-1]
