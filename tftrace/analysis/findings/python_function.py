"""A Python function of the user's that holds much of each step (a numpy batch loader, per-step
logging), named from the Python tracer's events or stack samples: evidence, not a bucket."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings.fixes import fix_for
from tftrace.analysis.findings.op_by_op import jit_calls
from tftrace.model.report import FlameNode

MIN_SHARE = 0.2  # of wall time: less is left to the generic findings
CHAIN = 0.8  # a callee holding this much of its caller's time is where the time goes, not the caller
# Where a framework's loop enters: a function of the user's that spends its time in one of these
# files is driving the framework (a script calling fit), not doing Python work of its own.
_FRAMEWORK_FILES = ("trainer.py", "training.py", "callback_list.py", "epoch_iterator.py", "traceback_utils.py",
                    "polymorphic_function.py", "profiler.py", "pjit.py", "api.py", "data_adapter_utils.py")


def detect(ctx: Context, explained: float) -> list[Finding]:
    """Only where a JAX loop ran (TF loops name the function in their step_python and gaps
    findings): a main-thread function whose time no other cause claimed."""
    if not ctx.jax or ctx.python is None or not ctx.python.flame:
        return []
    node = _heavy_function(ctx.python.flame)
    if node is None:
        return []
    b = ctx.breakdown
    if b.host_overhead + b.idle < 0.5:  # a compute- or input-bound step: its Python mostly waits
        return []
    room = b.host_overhead + b.idle - explained
    share = min(node.ps / ctx.wall_ps, room)
    if share < MIN_SHARE:
        return []
    where = f"{node.file}:{node.line}"
    facts = (ms_fact(f"time in {node.function}() per step", node.ps / ctx.n), pct_fact("share of wall time", node.ps / ctx.wall_ps),
             fact("where", where), fact("seen by", ctx.python.source))
    part = "host_overhead" if b.host_overhead >= b.idle else "idle"
    title = f"Python function {node.function}() ({where}): {share:.0%} of each step"
    return [Finding("python_function", title, share, facts, fix_for("python_function", fn=node.function),
                    _projected(ctx, share), part, subject=f"{node.file}:{node.function}")]


def _projected(ctx: Context, share: float) -> int:
    """The step without the function. In a JAX loop what is left is at least the jitted call and
    the work it runs; the Python tracer slows the rest of JAX's Python dispatch several times over
    (about 0.5-0.9 us an event here), so the traced remainder overstates it: take the smaller."""
    left = ctx.projected(share * ctx.wall_ps)
    kept = (float(ctx.trace.events["dur_ps"][jit_calls(ctx)].sum()) + ctx.tl.compute.sum() + ctx.tl.input.sum()
            + ctx.tl.idle.sum()) / ctx.n
    return min(left, round(kept)) if kept > 0 else left


def _heavy_function(flame: tuple[FlameNode, ...]) -> FlameNode | None:
    """Down the main thread's heaviest chain of calls from its heaviest root, the deepest
    function of the root's own file (the user's script that runs the loop) that still holds most
    of its caller's time; None when that function only calls into a framework's loop."""
    main = [n for n in flame if n.thread == "main"]
    roots = [i for i, n in enumerate(main) if n.depth == 0]
    if not roots:
        return None
    i = max(roots, key=lambda k: (main[k].ps, -k))
    home = main[i].file
    if home.endswith(_FRAMEWORK_FILES) or home.startswith("<") or home == "builtins":
        return None
    best = i
    while True:
        child = _heaviest_child(main, i)
        if child is None or main[child].ps < CHAIN * main[i].ps:
            break
        i = child
        # The user's own named function: a comprehension or lambda is part of the one around it.
        if main[i].file == home and not main[i].function.startswith("<"):
            best = i
    child = _heaviest_child(main, best)
    if child is not None and main[child].ps >= CHAIN * main[best].ps and main[child].file.endswith(_FRAMEWORK_FILES):
        return None
    return main[best]


def _heaviest_child(nodes: list[FlameNode], i: int) -> int | None:
    """The first child box of node i (the layout puts the heaviest child right after it)."""
    if i + 1 < len(nodes) and nodes[i + 1].depth == nodes[i].depth + 1:
        return i + 1
    return None
