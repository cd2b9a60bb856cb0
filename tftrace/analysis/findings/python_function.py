"""A Python function of the user's that holds much of each step (a numpy batch loader, per-step
logging), named from the Python tracer's events or stack samples: evidence, not a bucket."""

from __future__ import annotations

from tftrace.analysis.findings.base import Finding, fact, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
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
    findings): a main-thread function whose time in the steps no other cause claimed."""
    if not ctx.jax or ctx.python is None or not ctx.python.flame:
        return []
    node = _heavy_function(ctx.python.flame)
    if node is None:
        return []
    b = ctx.breakdown
    if b.host_overhead + b.idle < 0.5:  # a compute- or input-bound step: its Python mostly waits
        return []
    ps = _in_steps(ctx, node)  # the flame spans the whole capture; the steps hold only part of it
    room = b.host_overhead + b.idle - explained
    share = min(ps / ctx.wall_ps, room)
    if share < MIN_SHARE:
        return []
    where = f"{node.file}:{node.line}"
    facts = (ms_fact(f"time in {node.function}() per step", ps / ctx.n), pct_fact("share of wall time", ps / ctx.wall_ps),
             fact("where", where), fact("seen by", ctx.python.source))
    part = "host_overhead" if b.host_overhead >= b.idle else "idle"
    title = f"Python function {node.function}() ({where}): {share:.0%} of each step"
    p = _projection(ctx, node.function, share)
    return [Finding("python_function", title, share, facts, fix_for("python_function", fn=node.function),
                    p.step_ps, part, subject=f"{node.file}:{node.function}", **p.fields())]


# Words in a function's name that say it makes the step's input: moved off the step's path it
# still runs, beside the step, so the step becomes the longer of the two; other per-step Python
# (logging, metrics in numpy) the fix runs less often, and it goes.
_MAKES_INPUT = ("load", "read", "batch", "data", "fetch", "sample", "augment", "preprocess", "decode", "next",
                "getitem", "generate", "make", "prepare", "collate", "input")


def _projection(ctx: Context, function: str, share: float) -> projection.Projection:
    per = share * ctx.per_step_ps
    kept = _kept(ctx)
    if any(w in function.lower() for w in _MAKES_INPUT):
        rest = ctx.per_step_ps - per if kept <= 0 else min(ctx.per_step_ps - per, kept)
        return projection.overlap(ctx, per, rest, f"{function}()", "the rest of the step")
    p = projection.removed(ctx, share * ctx.wall_ps, f"{function}()'s time")
    if kept > 0 and kept < p.step_ps:  # the tracer slows the rest of the loop's Python: what a step keeps
        return projection.Projection(round(kept), "removed", p.how + "; the rest of the step as the jitted call "
                                     "and its work take it (the Python tracer slows the loop's other Python)")
    return p


def _in_steps(ctx: Context, node: FlameNode) -> int:
    """The function's time on the main thread inside steps and between them."""
    return sum(r.total_ps for r in ctx.python.rows if r.thread == "main" and r.where in _IN_STEPS
               and (r.function, r.file, r.line) == (node.function, node.file, node.line))


_IN_STEPS = ("inside steps", "between steps")


def _kept(ctx: Context) -> float:
    """What a step keeps without the Python around it: the jitted call, the work it runs, the
    input wait and the gaps. The Python tracer slows the rest of JAX's Python dispatch several
    times over (about 0.5-0.9 us an event here), so the traced remainder overstates it."""
    return (float(ctx.trace.events["dur_ps"][jit_calls(ctx)].sum()) + ctx.tl.compute.sum() + ctx.tl.input.sum()
            + ctx.tl.idle.sum()) / ctx.n


def _heavy_function(flame: tuple[FlameNode, ...]) -> FlameNode | None:
    """Down the main thread's heaviest chain of calls from its heaviest root, the deepest
    function of the root's own file (the user's script that runs the loop) that still holds most
    of its caller's time; None when that function only calls into a framework's loop."""
    main = [n for n in flame if n.thread == "main"]
    roots = [i for i, n in enumerate(main) if n.depth == 0 and not _library(main[i])]
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


def _library(node: FlameNode) -> bool:
    """A root frame that is not the user's script: the standard library's (a `with` block's
    `__exit__`, a thread's `run`) or the profiler's own start and stop."""
    return node.owner == "python" or node.file.rsplit("/", 1)[-1] in _LIBRARY_FILES


_LIBRARY_FILES = ("contextlib.py", "threading.py", "functools.py", "runpy.py", "profiler.py", "<builtins>")


def _heaviest_child(nodes: list[FlameNode], i: int) -> int | None:
    """The first child box of node i (the layout puts the heaviest child right after it)."""
    if i + 1 < len(nodes) and nodes[i + 1].depth == nodes[i].depth + 1:
        return i + 1
    return None
