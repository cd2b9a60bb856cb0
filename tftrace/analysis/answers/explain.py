"""What one finding rests on: the ops, owners and steps it is about and its slice of the median step's
timeline, each list capped, with a line saying how each was chosen.

A finding names what it is about by its id (`kind/subject`); the rows that go with it are found the
way a person would look: owners of its kind named like its subject (else of its kind, else those
whose name its subject holds, else the owners of its breakdown part), ops in its layer or scope, of
the types or categories its kind is about (else none: host time has no op), the steps its part (or,
for a stall, its length) shows most in, and the timeline's events of those ops and owners."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tftrace.analysis.answers.whatif import find
from tftrace.analysis.findings.ids import slug
from tftrace.analysis.owners.knowledge import BY_KEY
from tftrace.model.answers import Explanation, LeftOut
from tftrace.model.owners import OWNER_KINDS, OwnerRow
from tftrace.model.report import Bottleneck, OpRow, RunReport, StepRow
from tftrace.model.step_view import Lane, StepView

MAX_OPS = 15
MAX_OWNERS = 10
MAX_STEPS = 8
MAX_EVENTS = 120
STALL = 2.0  # a stall's steps: at least this many times the median step
_SUFFIX = re.compile(r"_\d+\Z")
# Op categories a finding's kind is about, where its subject names none of its ops.
_CATEGORIES = {"input": {"input", "transfer"}, "host_to_device": {"transfer", "input"}, "optimizer": {"optimizer"},
               "loss": {"loss"}, "dropout": {"dropout"}, "precision": {"matmul", "convolution"},
               "collective": {"collective"}, "transfer": {"transfer"}}


@dataclass(frozen=True)
class _About:
    """What a finding is about, as predicates on rows."""

    kind: str
    subject: str  # the id's subject, a slug
    scope: bool  # the subject is a scope (layer, loss, metric...) ops sit under
    types: frozenset
    categories: frozenset


def explain(run: RunReport, finding_id: str) -> Explanation:
    (b,) = find(run, [finding_id])
    about = _about(b)
    owners, owners_how = _owners(run.owners, b, about)
    ops, ops_how = _ops(run.ops, b, about)
    steps, steps_how = _steps(run.steps.steps, b)
    names = {o.name for o in ops}
    timeline, events_left, timeline_how = _timeline(run.step_view, about, names, owners)
    left = LeftOut(max(len(ops) - MAX_OPS, 0), max(len(owners) - MAX_OWNERS, 0), max(len(steps) - MAX_STEPS, 0),
                   events_left)
    return Explanation(run.path, run.name, b, tuple(ops[:MAX_OPS]), tuple(owners[:MAX_OWNERS]),
                       tuple(steps[:MAX_STEPS]), timeline, (owners_how, ops_how, steps_how, timeline_how), left)


def _about(b: Bottleneck) -> _About:
    kind, _, subject = b.id.partition("/")
    subject = subject.split("~")[0]
    known = BY_KEY.get(b.kind)
    types = frozenset(known.tf_types | known.xla_types) if known else frozenset()
    scope = b.kind in ("layer", "loss", "metric", "regularizer", "optimizer", "code")
    return _About(b.kind, subject, scope, types, frozenset(_CATEGORIES.get(b.kind, ())))


def _named(name: str, subject: str) -> bool:
    """Does an owner's or layer's name name the subject (`_N` suffixes aside)?"""
    return bool(subject) and subject in (slug(name), slug(_SUFFIX.sub("", name)))


def _owners(rows: tuple[OwnerRow, ...], b: Bottleneck, about: _About) -> tuple[list[OwnerRow], str]:
    same = [o for o in rows if o.kind == about.kind] if about.kind in OWNER_KINDS else []
    named = [o for o in same if _named(o.name, about.subject)]
    if named:
        return named, f"owners: the {about.kind} named {about.subject}"
    if same:
        return same, f"owners: every {about.kind} owner"
    tokens = set(about.subject.replace(":", "-").split("-"))
    held = [o for o in rows if slug(o.name).split(".")[0] in tokens or (about.subject and about.subject in slug(o.name))]
    if held:
        return held, f"owners: those whose name the finding's subject ({about.subject}) holds"
    part = [o for o in rows if o.part == b.part] if b.part else list(rows)
    return part, f"owners: those whose time is mostly {b.part}" if b.part else "owners: all, largest first"


def _in_scope(op: OpRow, subject: str) -> bool:
    return _named(op.layer, subject) or any(_named(s, subject) for s in op.name.split("/")[:-1])


def _ops(rows: tuple[OpRow, ...], b: Bottleneck, about: _About) -> tuple[list[OpRow], str]:
    if about.scope:
        mine = [o for o in rows if _in_scope(o, about.subject) or o.category in about.categories]
        if mine:
            return _by_time(mine), f"ops: in the scope of {about.subject}"
    if about.types:
        return _by_time([o for o in rows if o.type in about.types]), f"ops: of the types {about.kind} is about"
    if about.categories:
        mine = [o for o in rows if o.category in about.categories]
        if about.kind == "precision":
            mine = [o for o in mine if o.device != "host"]
        return _by_time(mine), f"ops: of the categories {', '.join(sorted(about.categories))}"
    named = [o for o in rows if about.subject and (_in_scope(o, about.subject) or slug(o.type) == about.subject)]
    if named:
        return _by_time(named), f"ops: named by {about.subject}"
    if b.part == "compute":
        return _by_time(list(rows)), "ops: every op, most self time first (the finding is about compute)"
    return [], f"ops: none, the finding is about {b.part or 'the step'} time that no op holds"


def _by_time(rows: list[OpRow]) -> list[OpRow]:
    return sorted(rows, key=lambda o: (-o.self_ps, o.name, o.type))


def _steps(rows: tuple[StepRow, ...], b: Bottleneck) -> tuple[list[StepRow], str]:
    if not rows:
        return [], "steps: none found in the trace"
    if b.kind == "stall":
        median = sorted(s.dur_ps for s in rows)[len(rows) // 2]
        long = [s for s in rows if s.dur_ps >= STALL * median]
        return sorted(long, key=lambda s: (-s.dur_ps, s.number)), f"steps: those at least {STALL:g}x the median step"
    if b.part:
        field = f"{b.part}_ps"
        return sorted(rows, key=lambda s: (-getattr(s, field), s.number)), f"steps: most {b.part} time first"
    return sorted(rows, key=lambda s: (-s.dur_ps, s.number)), "steps: the longest first"


def _timeline(view: StepView, about: _About, op_names: set[str], owners: list[OwnerRow]) -> tuple[StepView, int, str]:
    """The median step's lanes and events of what the finding is about, the longest events kept."""
    if not view.lanes:
        return StepView(), 0, "timeline: the report holds no step up close"
    marks = tuple(o.name for o in owners if o.kind == "callback")
    wanted = [_wanted(n, c, about, op_names, marks) for n, c in zip(view.names, view.categories or ("",) * len(view.names))]
    kept = [(lane, e) for lane in view.lanes for e in lane.events if wanted[e.name_id]]
    kept.sort(key=lambda le: -le[1].dur_ps)
    left = max(len(kept) - MAX_EVENTS, 0)
    kept = kept[:MAX_EVENTS]
    ids = sorted({e.name_id for _, e in kept})
    new_id = {old: i for i, old in enumerate(ids)}
    lanes = []
    for lane in view.lanes:
        events = sorted((replace(e, name_id=new_id[e.name_id]) for ln, e in kept if ln is lane), key=lambda e: (e.start_ps, e.depth))
        if events:
            lanes.append(Lane(lane.name, lane.plane, lane.role, lane.busy_ps, tuple(events), lane.hidden))
    spans = about.kind in ("input", "host_to_device")
    slice_ = StepView(view.number, view.dur_ps, view.view_ps, tuple(lanes), view.input_waits if spans else (),
                      view.idle if about.kind in ("idle", "step_python") else (), 0, view.note,
                      tuple(view.names[i] for i in ids),
                      tuple(view.categories[i] for i in ids) if view.categories else ())
    return slice_, left, f"timeline: the median step's events of those ops and owners, the longest {MAX_EVENTS} at most"


def _wanted(name: str, category: str, about: _About, op_names: set[str], marks: tuple[str, ...]) -> bool:
    head, _, typ = name.partition(":")
    if head in op_names or (about.types and typ in about.types) or (about.categories and category in about.categories):
        return True
    if any(name.endswith(m) for m in marks):  # `tftrace callback BatchStats.on_train_batch_end`
        return True
    return about.scope and any(_named(s, about.subject) for s in head.split("/")[:-1])
