"""Which steps a TraceCallback window holds: chosen windows as given, default ones long enough."""

from __future__ import annotations

from tftrace.capture.window import Window


def _run(window: Window, step_s: float, total: int | None = None, per_call: int = 1) -> list[int]:
    """The calls a window marks (by their first step) when each step takes `step_s` seconds, the
    call has `total` steps and each call runs `per_call` of them."""
    window.fit_to(total)
    steps, elapsed, batch = [], 0.0, window.first
    while total is None or batch < total:
        steps.append(batch)
        elapsed += step_s * per_call
        end = batch + per_call - 1
        if end >= window.last and not window.go_on(elapsed, end, per_call):
            break
        batch += per_call
    return steps


def test_a_default_window_of_slow_steps_is_its_five_steps():
    assert _run(Window(True, 5, 2, min_s=0.1, max_steps=500), step_s=0.05, total=1000) == [2, 3, 4, 5, 6]


def test_a_default_window_of_short_steps_goes_on_until_it_has_lasted_its_time():
    steps = _run(Window(True, 5, 2, min_s=0.1, max_steps=500), step_s=0.001, total=1000)
    assert steps == list(range(2, 102))  # 100 steps of 1 ms: 0.1 s


def test_it_stops_at_its_most_steps_and_before_a_call_s_last_batch():
    assert len(_run(Window(True, 5, 2, min_s=1.0, max_steps=50), step_s=1e-4, total=1000)) == 50
    # At most half the call (the rest at full speed, for `confirm` too), never its last batch (often
    # partial: a retrace), and the default five whatever the call's length.
    assert _run(Window(True, 5, 2, min_s=1.0, max_steps=500), step_s=1e-4, total=40) == list(range(2, 22))
    assert _run(Window(True, 5, 2, min_s=1.0, max_steps=500), step_s=1e-4, total=12) == [2, 3, 4, 5, 6, 7]
    assert _run(Window(True, 5, 2, min_s=1.0, max_steps=500), step_s=1e-4, total=8) == [2, 3, 4, 5, 6]
    # A call of unknown length (a generator, fit's validation pass): where its half and its last
    # batch lie is unknown, so it keeps its five.
    assert _run(Window(True, 5, 2, min_s=1.0, max_steps=30), step_s=1e-4) == [2, 3, 4, 5, 6]


def test_a_chosen_window_is_never_longer_than_asked():
    for spec in ((3, 7), 5):
        window = Window(spec, 5, 2, min_s=10.0, max_steps=500)
        assert len(_run(window, step_s=1e-6, total=1000)) == 5, spec


def test_no_minimum_keeps_the_default_five():
    assert _run(Window(True, 5, 2), step_s=1e-6, total=1000) == [2, 3, 4, 5, 6]


def test_with_several_steps_a_call_the_limits_count_steps_not_calls():
    # steps_per_execution=4 from step 4 on 200 steps: half the call is 100 steps, 25 calls (before
    # this counted calls as steps and took every call to the last).
    calls = _run(Window(True, 5, 4, min_s=1.0, max_steps=500), step_s=1e-5, total=200, per_call=4)
    assert calls == list(range(4, 104, 4)), calls
    calls = _run(Window(True, 5, 4, min_s=1.0, max_steps=500), step_s=1e-5, total=40, per_call=4)
    assert calls == [4, 8, 12, 16, 20], calls  # 20 steps: half of 40

