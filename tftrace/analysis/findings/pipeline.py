"""Waiting for input: what the tf.data pipeline spends its work on (reading, decompressing,
parsing, decoding, Python, the map function), what it already does (parallel map, prefetch,
cache), and the fix for what it lacks."""

from __future__ import annotations

import re

from tftrace.analysis.findings.base import Finding, fact, ms, ms_fact, pct_fact
from tftrace.analysis.findings.context import Context
from tftrace.analysis.findings import projection
from tftrace.analysis.findings.host_to_device import host_to_device
from tftrace.analysis.findings import dataloader
from tftrace.analysis.findings.fixes import fix_for, pipeline_fix
from tftrace.analysis.findings.where import hottest_fact
from tftrace.analysis.pipeline_load import cores as load_cores
from tftrace.analysis.stage_runs import stage_runs
from tftrace.analysis.verdict import HIGHLY_INPUT
from tftrace.model.report import InputPipeline

_OP = " (op in tf.data)"
_READ = ("TFRecord", "TextLine", "FixedLengthRecord", "ReadFile", "SSTable", "ParallelInterleave", "Interleave",
         "ListFiles", "MatchingFiles")
_DECODE = ("Decode",)  # DecodeJpeg, DecodePng, DecodeImage, DecodeRaw, DecodeWav...
_PARSE = ("ParseExample", "ParseSingleExample", "ParseSequenceExample", "DecodeCSV", "ParseTensor", "StringToNumber",
          "DecodeJSONExample", "ParseExampleV2", "ParseSingleSequenceExample")
_PYTHON = ("Generator", "PyFunc", "EagerPyFunc", "FlatMap")
_MAP = ("Map", "MapAndBatch")  # a map run inline: its self time is calling the function
CONTENDED = 0.10  # pipeline work spread over the cores, as a share of wall time, that is worth naming
KIND_WORDS = {"read": "reading records from files (and decompressing them, if compressed)",
              "parse": "parsing records", "decode": "decoding", "python": "Python running inside the pipeline",
              "map_ops": "the map function's ops", "map": "calling the map function element by element"}


def stage_kind(name: str) -> str:
    bare = name[:-len(_OP)] if name.endswith(_OP) else name
    if bare.startswith(_PARSE):
        return "parse"
    if bare.startswith(_DECODE):
        return "decode"
    if bare.startswith(_PYTHON):
        return "python"
    if bare.startswith(_READ):
        return "read"
    if name.endswith(_OP):
        return "map_ops"
    if bare in _MAP:
        return "map"
    # Buffering, batching, sources, and parallel stages, whose own events wait for their workers
    # (the workers' ops are counted where they run).
    return "plumbing"


def features(pipeline: InputPipeline) -> dict[str, bool]:
    """What the pipeline already does, from its stage names."""
    names = [s.name for s in pipeline.stages]
    return {"parallel": any(n.startswith("Parallel") for n in names),
            "prefetch": any(n.startswith("Prefetch") for n in names),
            "cache": any("Cache" in n or n.startswith("Snapshot") for n in names)}


# An iterator path where a map stage reads from a batch stage: the map runs on whole batches.
_MAP_OVER_BATCHES = re.compile(r"Map(V2)?(\[\d+\])?::(Padded)?Batch")


def maps_batches(names) -> bool:
    """Does a map of the pipeline run on whole batches (`batch()` before `map()`)?"""
    return any(n.startswith("Iterator::") and _MAP_OVER_BATCHES.search(n) for n in names)


def _map_per_batch(ctx: Context) -> bool:
    """Does the pipeline's map run about once per step, on a whole batch already (Keras' adapter
    slicing NumPy arrays maps batch indices to batches)? Then vectorising it gains nothing."""
    runs = stage_runs(ctx.trace, ["ParallelMapV2", "ParallelMap", "Map"], ctx.n)
    return any(0 < r.calls_per_step <= ONCE_PER_STEP for r in runs.values())


ONCE_PER_STEP = 1.5  # a map's calls per step up to which it maps whole batches


def work_by_kind(pipeline: InputPipeline) -> list[tuple[str, int, list[str]]]:
    """(kind, self ps, its stages) for the pipeline's working stages, largest first."""
    kinds: dict[str, tuple[int, list[str]]] = {}
    # from_generator is a FlatMap over a generator's PyFunc; a FlatMap with no Python under it
    # (Keras' adapter slicing NumPy arrays into batches) only iterates.
    runs_python = any(s.name.startswith(_PYTHON) and not s.name.startswith("FlatMap") for s in pipeline.stages)
    for s in pipeline.stages:
        kind = stage_kind(s.name)
        if kind == "python" and s.name.startswith("FlatMap") and not runs_python:
            kind = "plumbing"
        if kind == "plumbing":
            continue
        ps, names = kinds.get(kind, (0, []))
        kinds[kind] = (ps + s.self_ps, names + [s.name.replace(_OP, "")])
    return sorted(((k, ps, names) for k, (ps, names) in kinds.items()), key=lambda x: (-x[1], x[0]))


def detect(ctx: Context) -> list[Finding]:
    b, tl = ctx.breakdown, ctx.tl
    out = []
    where, in_fn = hottest_fact(ctx, ("input pipeline",))
    kinds = work_by_kind(ctx.pipeline)
    has = {**features(ctx.pipeline), "batched": maps_batches(ctx.trace.names) or _map_per_batch(ctx)}
    has["calls"] = not has["batched"] and _calls_dominate(kinds)
    title, facts = _what(ctx, kinds, has)
    if in_fn:
        title = f"Input pipeline{in_fn}" + (f" ({ctx.pipeline.slowest} stage)" if ctx.pipeline.slowest else "")
    fix = pipeline_fix([k for k, ps, _ in kinds[:2] if ps >= 0.15 * (sum(p for _, p, _ in kinds) or 1)], has)
    waits_in = "IteratorGetNext"
    if ctx.torch:  # no tf.data: the DataLoader is what the step waits for
        device = tl.device_busy is not None
        title, facts, waits_in = dataloader.title(ctx.trace, device), (), "the DataLoader"
        fix = dataloader.fix(ctx.trace, device)
    if tl.device_busy is None:
        out += _on_the_host(ctx, kinds, title, facts + where, fix, waits_in, has["calls"])
    if tl.device_busy is not None and b.input > 0 and not ctx.jax:  # JAX runs: host_to_device.detect
        out.append(host_to_device(ctx))
    wait = tl.fraction(tl.input_wait) if tl.input_wait is not None else 0.0
    if wait > 0:
        facts_wait = (pct_fact(f"share of step time the device runs nothing while the host waits in {waits_in}", wait),
                      ms_fact("per step", tl.input_wait.sum() / ctx.n))
        head = title if ctx.torch else "Device idle while the host waits for input data" + title[len("Input pipeline"):]
        step = ctx.projected(tl.input_wait.sum())
        p = projection.Projection(step, "overlap",
                                  f"the step less the device's wait for input ({ms(tl.input_wait.sum() / ctx.n)} per "
                                  "step): the batch ready when the step starts, the model's step setting the pace",
                                  step)
        out.append(Finding("input", head,
                           wait, facts_wait + facts + where, fix, p.step_ps, "host_overhead",
                           subject=_subject(ctx, kinds), **p.fields()))
    return out


CALLS = 0.8  # of a map's work in calling its function per element: vectorising it is the fix that pays


def _calls_dominate(kinds) -> bool:
    """Does calling the map function per element, not the ops it runs, hold most of the map's work?"""
    work = dict((k, ps) for k, ps, _ in kinds)
    calls, ops = work.get("map", 0), work.get("map_ops", 0)
    return calls > 0 and calls >= CALLS * (calls + ops)


def _on_the_host(ctx: Context, kinds, title: str, facts: tuple, fix: str, waits_in: str,
                 vectorise: bool = False) -> list[Finding]:
    """The input finding of a host-only run: the wait for input, and the pipeline's work where it
    takes the cores from the model's ops."""
    b, tl = ctx.breakdown, ctx.tl
    work = sum(ps for _, ps, _ in kinds)
    cores = load_cores(ctx.trace)
    wait = (pct_fact("share of step time waiting for input", b.input), ms_fact(f"per step waiting in {waits_in}",
                                                                               tl.input.sum() / ctx.n))
    if ctx.paced == "cores":
        # Its work fills the cores: steps last as long as the CPU work of pipeline and model
        # together, and without the pipeline's they shrink to the model's share of it.
        load = ctx.load
        cpu = (pct_fact(f"share of the {load.cores} cores' time the pipeline's work takes", load.core_share),
               ms_fact("the model's op work per step beside it", load.model_ps / ctx.n))
        share = min(load.cpu_share, 1 - b.idle)
        p = projection.removed(ctx, share * ctx.wall_ps, "the pipeline's share of the cores' work, which sets "
                               "the step's pace")
        return [Finding("input", title, share, wait + cpu + facts, fix, p.step_ps, "input",
                        subject=_subject(ctx, kinds), **p.fields())]
    # On the host the pipeline's threads share the cores with the model's ops: its work while
    # the model computes slows the model down, though the model does not wait for it.
    contended = work * (1 - b.input) / cores if b.input < HIGHLY_INPUT else 0
    if ctx.paced:
        # The pipeline sets the pace and works beside the model's ops on the same cores: with
        # it gone, those ops run without it, at most `cores` times faster for sharing them.
        # Python's time counts no CPU: most of it is waiting for the GIL, not using a core.
        cpu_ps = sum(ps for kind, ps, _ in kinds if kind != "python")
        contended = min(cpu_ps * (1 - b.input) / cores, tl.compute.sum() * (1 - 1 / cores))
    share = min(b.input + contended / ctx.wall_ps, 1 - b.idle)
    removed = tl.input.sum() + contended
    floor = 0.0
    # Made parallel (the fix's first way where the map is not), the pipeline's work still runs on
    # the same cores as the model's ops; vectorised (its first way where calling the function per
    # element is most of the work), most of that work goes.
    if not has_parallel(ctx) and not vectorise and work > 0 and kinds and kinds[0][0] in ("map", "map_ops"):
        # Made parallel, the pipeline's work still runs on the same cores as the model's ops: the
        # step cannot drop below both together spread over the cores.
        model = ctx.load.model_ps if ctx.load is not None else tl.compute.sum()
        floor = (work + model) / cores
        removed = min(removed, max(ctx.wall_ps - floor, 0))
    if contended / ctx.wall_ps >= CONTENDED:
        wait += (ms_fact(f"pipeline work per step on {cores} cores shared with the model", work / ctx.n),)
        if b.input < CONTENDED:
            title = "Input pipeline competes with the model for the CPU:" + title[len("Input pipeline:"):]
    if share <= 0:
        return []
    if floor:
        p = projection.Projection(ctx.projected(removed), "overlap",
                                  f"the pipeline's work ({ms(work / ctx.n)} per step) run in parallel beside the "
                                  f"model's: the step no shorter than both spread over the {cores} cores",
                                  round(floor / ctx.n))
    elif kinds and kinds[0][0] == "python":  # its stage time is mostly waiting for the GIL: no CPU floor to state
        step = ctx.projected(removed)
        p = projection.Projection(step, "overlap",
                                  f"the step less its wait for input ({ms(tl.input.sum() / ctx.n)} per step): the "
                                  "Python run in workers beside the model, so the batch is ready when the step "
                                  "starts and the model's step sets the pace", step)
    else:
        p = projection.removed(ctx, removed, "the wait for input and the cores' time the pipeline takes from the "
                               "model's ops")
    return [Finding("input", title, share, wait + facts, fix, p.step_ps, "input", subject=_subject(ctx, kinds),
                    **p.fields())]


def _subject(ctx: Context, kinds) -> str:
    """What an input finding is about: the DataLoader, or the pipeline's heaviest kind of work."""
    if ctx.torch:
        return "DataLoader"
    return kinds[0][0] if kinds else "input pipeline"


def has_parallel(ctx: Context) -> bool:
    return features(ctx.pipeline)["parallel"]


def _what(ctx: Context, kinds, has) -> tuple[str, tuple]:
    """The title naming where the pipeline's work goes, and the facts behind it."""
    total = sum(ps for _, ps, _ in kinds)
    if not kinds or total <= 0:
        return "Input pipeline: waiting for input", ()
    top, ps, names = kinds[0]
    facts = [fact("pipeline work by kind", ", ".join(f"{KIND_WORDS[k]} {ms(p / ctx.n)} per step ({p / total:.0%}; "
                                                      f"{', '.join(n[:3])})" for k, p, n in kinds[:3]))]
    present = [k for k, v in has.items() if v and k != "calls"]
    facts.append(fact("the pipeline already has", ", ".join(
        {"parallel": "a parallel map", "prefetch": "prefetch", "cache": "a cache",
         "batched": "a map over whole batches"}[k] for k in present) or "nothing of "
        "parallel map, prefetch or cache"))
    if ctx.pipeline.slowest:
        top_stage = next(s for s in ctx.pipeline.stages if s.name == ctx.pipeline.slowest)
        facts.append(fact("slowest tf.data stage", f"{top_stage.name}, {ms(top_stage.self_ps)} self time "
                                                  f"({top_stage.share:.0%} of pipeline time)"))
    why = _why(ctx, names, has)
    if why is not None:
        facts.append(fact(f"how {why.stage} runs", why.phrase()))
    title = f"Input pipeline: {KIND_WORDS[top]} ({', '.join(names[:3])})"
    if why is not None and why.parallel < 1.2 and why.stage in _SEQUENTIAL and why.calls_per_step >= 2:
        title += f", {why.calls_per_step:g} calls per step one at a time"
    return title, tuple(facts)


_SEQUENTIAL = ("Map", "MapAndBatch", "Generator", "FlatMap", "Interleave", "TFRecord", "PyFunc")


def _why(ctx: Context, names: list[str], has: dict):
    """How the first stage of the top kind that the iterator events show runs: its calls per
    step, their cost, their threads and how many ran at once."""
    stages = [n for n in names if not n.endswith(_OP.strip())][:3] + ["Map", "ParallelMapV2", "ParallelMap"]
    runs = stage_runs(ctx.trace, stages, ctx.n)
    return next((runs[n] for n in stages if n in runs), None)
