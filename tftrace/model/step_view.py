"""The median step up close, as the report holds it: lanes of events clipped to the step, input
waits and idle gaps (analysis/steps/median_step.py makes it; times in ps from the step's start)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ViewEvent:
    """A box on a lane: one event, or `count` tiny neighbouring events merged (then named after
    the longest of them). Names are kept once per view: `name_id` indexes StepView.names."""

    start_ps: int
    dur_ps: int
    depth: int
    name_id: int
    count: int = 1


@dataclass(frozen=True)
class Lane:
    """A host thread or device stream that did work in the view."""

    name: str
    plane: str
    role: str  # python | compute | data | other | device_ops
    busy_ps: int  # time covered by its outermost events
    events: tuple[ViewEvent, ...] = ()
    hidden: int = 0  # events not drawn: nested deeper than MAX_DEPTH, or short ones beyond its quota


@dataclass(frozen=True)
class Span:
    start_ps: int
    dur_ps: int


@dataclass(frozen=True)
class StepView:
    number: int = -1
    dur_ps: int = 0  # the step
    view_ps: int = 0  # the step plus the idle gap after it
    lanes: tuple[Lane, ...] = ()
    input_waits: tuple[Span, ...] = ()  # waiting for input data (IteratorGetNext, host-to-device copies)
    idle: tuple[Span, ...] = ()  # no thread or stream recorded anything
    hidden_lanes: int = 0
    note: str = ""  # which step this is and what was left out
    names: tuple[str, ...] = ()  # event names, by ViewEvent.name_id
    categories: tuple[str, ...] = ()  # each name's op category, or input, python, framework (runtime,
    # tf.function calls, step markers)
