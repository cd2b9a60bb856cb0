"""The median step up close (analysis/steps/median_step.py) and its SVG timeline in the HTML report."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import sample
from test_html import chart
from tftrace.analysis.steps import median_step as sv
from tftrace.analysis.breakdown import event_classes
from tftrace.api import analyze
from tftrace.render import render
from tftrace.model.report import Report
from tiny import tiny_trace

US = 1_000_000  # ps


def view_of(events, starts_us, durs_us, idle_us=None):
    trace = tiny_trace(events)
    n = len(starts_us)
    idle = np.asarray(idle_us if idle_us is not None else [0] * n, np.int64) * US
    return sv.step_view(trace, np.asarray(starts_us, np.int64) * US, np.asarray(durs_us, np.int64) * US, idle,
                        tuple(range(10, 10 + n)), event_classes(trace)[0])


def lane(view, name):
    return next(ln for ln in view.lanes if ln.name == name)


def name_of(view, event) -> str:
    return view.names[event.name_id]


def category_of(view, event) -> str:
    return view.categories[event.name_id]


STEPS = [  # three steps of 100, 300 and 200 us; the median is the third (number 12)
    ("python", "train", 0, 100), ("python", "train", 110, 300), ("python", "train", 500, 200),
    ("python", "IteratorGetNext:IteratorGetNext", 505, 40),
    ("python", "StatefulPartitionedCall:StatefulPartitionedCall", 560, 120),
    ("python", "model/dense/MatMul:MatMul", 570, 50),
    ("tf_Compute/123", "model/dense/MatMul:_MklMatMul", 480, 60),  # starts before the step: clipped
    ("tf_Compute/123", "model/dense/Relu:Relu", 650, 10),
    ("tf_data_private_threadpool/7", "Iterator::Root::Prefetch", 600, 20),
    ("python", "after", 740, 20),  # in the idle gap after the step (the next step starts at 760)
]


def test_the_median_step_clipped_and_relative_to_its_start():
    view = view_of(STEPS, [0, 110, 500, 760], [100, 300, 200, 250], [0, 10, 90, 60])
    assert view.number == 12 and view.dur_ps == 200 * US and view.view_ps == 260 * US
    assert "step 12, the median of 4 steps" in view.note and "0.06 ms idle gap" in view.note
    assert [ln.role for ln in view.lanes] == ["python", "compute", "data"]
    py = lane(view, "python")
    names = {(name_of(view, e), e.depth): e for e in py.events}
    assert names[("train", 0)].start_ps == 0 and names[("train", 0)].dur_ps == 200 * US
    assert category_of(view, names[("IteratorGetNext:IteratorGetNext", 1)]) == "input"
    matmul = names[("model/dense/MatMul:MatMul", 2)]
    assert (matmul.start_ps, matmul.dur_ps, category_of(view, matmul)) == (70 * US, 50 * US, "matmul")
    assert category_of(view, names[("StatefulPartitionedCall:StatefulPartitionedCall", 1)]) in ("framework", "other")
    assert category_of(view, names[("train", 0)]) == "framework"
    assert names[("after", 0)].start_ps == 240 * US
    compute = lane(view, "tf_Compute/123").events
    assert (compute[0].start_ps, compute[0].dur_ps) == (0, 40 * US)  # 480-540 clipped to 500-540
    assert category_of(view, lane(view, "tf_data_private_threadpool/7").events[0]) == "input"
    assert len(set(view.names)) == len(view.names) == len(view.categories)
    assert py.busy_ps == 220 * US  # the step marker plus the event after it
    assert [(s.start_ps, s.dur_ps) for s in view.input_waits] == [(5 * US, 40 * US)]
    assert [(s.start_ps, s.dur_ps) for s in view.idle] == [(200 * US, 40 * US)]


def test_tiny_events_merge_and_lanes_stay_within_the_budget():
    events = [("python", "train", 0, 1000)]
    events += [("python", f"op{i}:Add", 10 + i * 0.5, 0.2) for i in range(400)]  # 400 tiny adds in 200 us
    events += [("tf_Compute/1", f"k{i}:Mul", i * 3, 2) for i in range(300)]  # 300 visible muls
    view = view_of(events, [0], [1000])
    py = lane(view, "python")
    merged = [e for e in py.events if e.count > 1]
    assert merged and sum(e.count for e in py.events if e.depth == 1) == 400
    assert all(category_of(view, e) == "elementwise" and name_of(view, e).endswith(":Add") for e in merged)
    compute = lane(view, "tf_Compute/1")
    assert len(compute.events) == sv.MAX_EVENTS and compute.hidden == 300 - sv.MAX_EVENTS
    assert sum(len(ln.events) for ln in view.lanes) <= sv.MAX_BOXES
    assert "short boxes over the budget" in view.note
    for ln in view.lanes:
        assert all(0 <= e.start_ps and e.start_ps + e.dur_ps <= view.view_ps for e in ln.events)
        assert all(e.depth < sv.MAX_DEPTH for e in ln.events)


def test_deep_nesting_is_cut_and_counted():
    events = [("python", f"level{d}", d, 100 - 2 * d) for d in range(8)]
    view = view_of(events, [0], [100])
    assert sorted(e.depth for e in view.lanes[0].events) == list(range(sv.MAX_DEPTH))
    assert view.lanes[0].hidden == 8 - sv.MAX_DEPTH and "nested deeper" in view.note


def test_no_steps_no_view():
    assert view_of([("python", "x", 0, 5)], [], []) == sv.StepView()


@pytest.fixture(scope="module")
def flatten():
    return analyze(sample("augment", "flatten"))


def test_real_run_view_is_small_and_round_trips(flatten):
    run = flatten.runs[0]
    view = run.step_view
    assert view.lanes[0].name == "python" and view.input_waits
    assert view.number in [s.number for s in run.steps.steps]
    assert sorted(s.dur_ps for s in run.steps.steps)[(len(run.steps.steps) - 1) // 2] == view.dur_ps
    assert len(json.dumps(flatten.to_dict()["runs"][0]["step_view"])) < 40_000
    assert Report.from_dict(flatten.to_dict()) == flatten


def test_timeline_chart_in_the_report(flatten):
    view = flatten.runs[0].step_view
    page = render(flatten, "html")
    svg = chart(page, "timeline")
    assert svg.count('<g class="lane"') == len(view.lanes)
    assert svg.count('<rect class="ev"') == sum(len(ln.events) for ln in view.lanes)
    assert svg.count('<g class="input-wait">') == len(view.input_waits)
    assert "One step up close: step" in page and "step end" in svg
    assert re.search(r"<title>IteratorGetNext[^<]*: [0-9.]+ ms \(input\)</title>", svg)
    assert "http" not in svg


def test_hostile_event_and_thread_names_stay_escaped(flatten):
    import dataclasses
    from test_html import HOSTILE_ATTR, HOSTILE_SCRIPT, parse
    run = flatten.runs[0]
    lane0 = run.step_view.lanes[0]
    bad = dataclasses.replace(lane0, name=HOSTILE_SCRIPT + "/1")
    view = run.step_view
    first = lane0.events[0].name_id
    view = dataclasses.replace(view, lanes=(bad,) + view.lanes[1:], note=HOSTILE_ATTR,
                               names=view.names[:first] + (HOSTILE_SCRIPT + HOSTILE_ATTR,) + view.names[first + 1:],
                               categories=view.categories[:first] + (HOSTILE_ATTR,) + view.categories[first + 1:])
    report = dataclasses.replace(flatten, runs=(dataclasses.replace(run, step_view=view),))
    page = render(report, "html")
    parsed = parse(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert not [a for a in parsed.attrs if a.startswith("on")]
    assert HOSTILE_SCRIPT + HOSTILE_ATTR in "".join(parsed.text)
