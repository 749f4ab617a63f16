"""The virtual clock and scheduler: order, cancellation, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.clock import Scheduler


def test_timers_fire_in_deadline_then_schedule_order():
    s = Scheduler()
    fired = []
    s.call_at(20, lambda: fired.append(("b", s.now())))
    s.call_at(10, lambda: fired.append(("a", s.now())))
    s.call_at(20, lambda: fired.append(("c", s.now())))
    assert s.advance(15) == 1 and s.now() == 15
    assert s.advance(100) == 2 and s.now() == 115
    assert fired == [("a", 10), ("b", 20), ("c", 20)]


def test_timers_scheduled_by_timers_fire_in_the_same_advance():
    s = Scheduler()
    fired = []

    def tick():
        fired.append(s.now())
        if s.now() < 50:
            s.call_later(10, tick)

    s.call_later(10, tick)
    s.advance(100)
    assert fired == [10, 20, 30, 40, 50]


def test_cancelled_timers_do_not_fire():
    s = Scheduler()
    fired = []
    t = s.call_later(5, lambda: fired.append(1))
    t.cancel()
    assert s.next_deadline() is None
    s.advance(10)
    assert fired == []


def test_run_until_idle_and_its_guard():
    s = Scheduler()
    s.call_later(7, lambda: None)
    assert s.run_until_idle() == 1 and s.now() == 7

    def forever():
        s.call_later(1, forever)

    s.call_later(1, forever)
    with pytest.raises(RuntimeError, match="periodic timer"):
        s.run_until_idle(max_timers=100)


def test_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        Scheduler(-1)
    s = Scheduler(10)
    with pytest.raises(ValueError, match="backwards"):
        s.advance(-1)
    with pytest.raises(ValueError, match="backwards"):
        s.run_until(5)
    with pytest.raises(ValueError, match="delay must be >= 0"):
        s.call_later(-3, lambda: None)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 1000), max_size=40), st.lists(st.integers(0, 300), min_size=1, max_size=10))
def test_every_timer_fires_once_at_its_deadline_whatever_the_steps(deadlines, steps):
    s = Scheduler()
    fired = []
    for i, d in enumerate(deadlines):
        s.call_at(d, lambda i=i: fired.append((s.now(), i)))
    for step in steps:
        s.advance(step)
    s.run_until_idle()
    assert sorted(i for _, i in fired) == list(range(len(deadlines)))
    assert all(t == deadlines[i] for t, i in fired)
    assert [t for t, _ in fired] == sorted(t for t, _ in fired)


def test_background_timers_fire_as_time_passes_but_never_keep_the_model_busy():
    s = Scheduler()
    ticks: list[int] = []
    periodic = s.call_every(60_000, lambda: ticks.append(s.now()), "checkGC")
    s.call_later(10, lambda: ticks.append(-s.now()))
    assert s.next_deadline() == 10 and s.next_wake() == 10 and s.pending() == 1
    s.run_until_idle()
    assert ticks == [-10] and s.now() == 10  # only housekeeping is left: idle
    assert s.next_deadline() is None and s.next_wake() == 60_000
    # a tie with the sweep: the timer scheduled first fires first (the 120 s sweep is armed by the 60 s one)
    s.call_at(120_000, lambda: ticks.append(-s.now()))
    assert s.advance(180_000 - 10) == 4
    assert ticks == [-10, 60_000, -120_000, 120_000, 180_000]
    periodic.cancel()
    s.advance(600_000)
    assert ticks[-1] == 180_000 and s.next_wake() is None
    with pytest.raises(ValueError, match="period must be a positive integer"):
        s.call_every(0, lambda: None)
