"""How a layer is run, when that, not its size, is what costs: its convolutions between layout
transposes, its inputs cast every step, float64 arithmetic, a loop run op by op instead of a
fused kernel (the knowledge table's entries, read inside one layer)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tftrace.analysis.findings.base import Fact, fact, pct_fact
from tftrace.analysis.owners.knowledge import BY_KEY, known

MIN_OF_LAYER = 0.2  # the pattern's ops must hold this share of the layer's op time
_DROPOUT_FIX = {
    "tensorflow": ("Dropout's masks are drawn op by op: compile the step with XLA (`jit_compile=True`, on a GPU or "
                   "TPU), which fuses the mask into one kernel, drop the Dropout layers whose rate is small, or use a "
                   "lower rate on fewer, smaller activations (after pooling rather than before)."),
    "tensorflow_cpu": ("Dropout's masks are drawn op by op: drop the Dropout layers whose rate is small, or use a "
                       "lower rate on fewer, smaller activations (after pooling rather than before)."),
    "jax": ("Dropout's masks cost random-number work each step: drop the layers whose rate is small, or apply "
            "dropout to fewer, smaller activations (after pooling rather than before)."),
}


@dataclass(frozen=True)
class HowRun:
    kind: str  # the finding's kind: a knowledge key, or "precision"
    title: str  # the end of the finding's title
    facts: tuple[Fact, ...]
    fix: str
    share: float = 1.0  # of the layer's op time, the ops the pattern is: what its fix removes


def _by_layer(ctx) -> dict[str, list]:
    """The op table's entries (input stages left out) by their layer: asked once per layer."""
    out: dict[str, list] = {}
    for e in ctx.table:
        if e.layer and e.category != "input":
            out.setdefault(e.layer, []).append(e)
    return out


def how_run(ctx, layer: str) -> HowRun | None:
    """What about how a layer runs costs it the most, if anything does."""
    entries = ctx.once(_by_layer).get(layer, ())
    total = sum(e.self_ps for e in entries)
    if total <= 0:
        return None
    by_key: dict[str, int] = {}
    types: dict[str, set] = {}
    xla = ctx.xla
    dropout = sum(e.self_ps for e in entries if e.category == "dropout")
    if dropout >= MIN_OF_LAYER * total and ctx.mode != "predict":
        return HowRun("dropout", f"{dropout / total:.0%} of it making dropout masks",
                      (pct_fact("of the layer's op time in dropout's random masks", dropout / total),
                       fact("what puts it there", "each Dropout draws a random mask the size of its input every "
                            "training step (RandomUniform, a compare, a cast and a multiply)")),
                      _DROPOUT_FIX["jax" if ctx.jax else "tensorflow_cpu" if ctx.on_cpu else "tensorflow"],
                      dropout / total)
    for e in entries:
        if e.category == "dropout":
            continue
        k = known(e.type, xla)
        if k is not None:
            by_key[k.key] = by_key.get(k.key, 0) + e.self_ps
            types.setdefault(k.key, set()).add(e.type)
    framework = "jax" if ctx.jax else "tensorflow"
    for key in ("layout", "casts", "while_loop", "debug_ops", "python_op"):
        share = by_key.get(key, 0) / total
        if share >= MIN_OF_LAYER:
            entry = BY_KEY[key]
            facts = (pct_fact(f"of the layer's op time in {', '.join(sorted(types[key]))}", share),
                     fact("what puts it there", entry.why))
            found = HowRun(key, f"{share:.0%} of it {entry.title}", facts, entry.fixes[framework], share)
            return _recurrence(ctx, layer, entries, found) if key == "while_loop" else found
    loop = _loop(ctx, entries)
    if loop is not None:
        return _recurrence(ctx, layer, entries, loop)
    policy = ctx.owners.program.layer_policies.get(layer, "") or ctx.owners.program.dtype_policy
    if "float64" in policy:
        return HowRun("precision", "its arithmetic in float64",
                      (fact("dtype policy", policy), fact("what puts it there", "the layer computes in float64: "
                            "twice the memory traffic of float32, and no fused oneDNN or GPU tensor-core kernel")),
                      ("Compute in float32: drop `dtype='float64'` from the layer (or "
                       "`keras.config.set_floatx('float32')`), and give the data float32 in the input pipeline."))
    return None


_RECURRENT = re.compile(r"(?:^|/)(?:bidirectional|lstm|gru|simple_rnn|rnn|forward_\w+|backward_\w+)(?:_\d+)?(?:/|$)|"
                        r"(?:lstm|gru|simple_rnn)_cell", re.I)
_RECURRENT_CLASSES = ("LSTM", "GRU", "SimpleRNN", "RNN", "Bidirectional", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")


def _recurrence(ctx, layer: str, entries, loop: HowRun) -> HowRun:
    """A recurrent layer's loop is its recurrence over time steps, which no batch-wise rewrite
    removes: its lever is unrolling it (short, fixed-length sequences) or, on a GPU, the fused
    kernel; a map over a batch's elements keeps the vectorising fix."""
    cls = ctx.owners.program.layer_classes.get(layer, "")
    # Without the sidecar's class, the layer's or its ops' names (a stock capture's `lstm_cell`).
    recurrent = cls in _RECURRENT_CLASSES if cls else bool(
        _RECURRENT.search(layer) or any(_RECURRENT.search(e.name) for e in entries[:50]))
    if ctx.jax or not recurrent:
        return loop
    fix = ("Its loop is the recurrence over time steps, run one step at a time: unroll it (`unroll=True` on the "
           "LSTM/GRU, on the layer a Bidirectional wraps too) where sequences are short and of fixed length, which "
           "removes the loop's per-step machinery; shorter sequences or fewer units shrink what each step does; on a "
           "GPU, keep LSTM/GRU on their fused cuDNN kernel (default activations, recurrent_dropout=0).")
    title = loop.title.replace("one element at a time", "one time step at a time")
    return HowRun(loop.kind, title, loop.facts, fix, loop.share)


LOOP_RUNS = 0.5  # of a layer's op runs inside a graph while loop: the loop is how it runs


def _loop(ctx, entries) -> HowRun | None:
    """A layer whose ops run mostly inside a graph while loop (tf.map_fn, a Python loop traced
    into tf.while_loop, a recurrent layer without its fused kernel): per iteration, op by op."""
    runs = sum(e.count for e in entries)
    inside = [e for e in entries if "/while/" in e.name or e.type in BY_KEY["while_loop"].tf_types]
    looped = sum(e.count for e in inside)
    if not runs or looped < LOOP_RUNS * runs:
        return None
    entry = BY_KEY["while_loop"]
    per_step = looped / max(ctx.n, 1)
    facts = (fact("op runs per step inside the loop", round(per_step, 1)),
             pct_fact("of the layer's op runs", looped / runs), fact("what puts it there", entry.why))
    fix = ("Vectorise the loop: apply the function to the whole batch at once (`tf.vectorized_map`, or the same "
           "ops on the batch axis) instead of `tf.map_fn` over its elements; keep LSTM/GRU on their fused kernel.")
    return HowRun("while_loop", f"its ops run one element at a time in a graph loop ({per_step:.0f} op runs "
                                "per step)", facts, fix if not ctx.jax else entry.fixes["jax"])
