"""The broker's in-memory delayed-delivery tracker in both forms, and the fastutil-ordered hash map under it."""

from __future__ import annotations

import copy

import pytest
from golden_files import golden_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.delayed.in_memory import (
    InMemoryDelayedDeliveryTracker,
    PriorityQueueDelayedDeliveryTracker,
    TimeBitmapDelayedDeliveryTracker,
    timestamp_precision_bit_cnt,
)
from pulsarlab.broker.delayed.long_hash_map import LongOpenHashMap, LongOpenHashSet, array_size, max_fill, mix
from pulsarlab.clock import Scheduler
from pulsarlab.conformance import Mismatch
from pulsarlab.conformance.delayed import check_in_memory
from pulsarlab.profiles import DelayedTrackerForm

FORMS = ["3.0", "4.1"]  # PRIORITY_QUEUE and TIME_BITMAP
SLOW = settings(max_examples=50, deadline=None)


class Dispatcher:
    """Counts readMoreEntries calls."""

    def __init__(self) -> None:
        self.reads = 0

    def read_more_entries(self) -> None:
        self.reads += 1


def _tracker(profile: str, tick: int, strict: bool = False, lookahead: int = 0, start: int = 0):
    scheduler = Scheduler(start)
    dispatcher = Dispatcher()
    tracker = InMemoryDelayedDeliveryTracker(
        scheduler,
        dispatcher.read_more_entries,
        profile=profile,
        tick_time_millis=tick,
        is_delayed_delivery_deliver_at_time_strict=strict,
        fixed_delay_detection_lookahead=lookahead,
    )
    return scheduler, tracker, dispatcher


def test_profile_picks_the_form():
    assert isinstance(_tracker("3.0", 1)[1], PriorityQueueDelayedDeliveryTracker)
    assert isinstance(_tracker("4.0", 1)[1], PriorityQueueDelayedDeliveryTracker)
    assert _tracker("4.1", 1)[1].form is DelayedTrackerForm.TIME_BITMAP


# --- reference §10.1 test facts -------------------------------------------------------------------


@pytest.mark.parametrize("profile", FORMS)
def test_abstract_delivery_tracker_test(profile):
    scheduler, tracker, _ = _tracker(profile, tick=1)
    assert not tracker.has_message_available()
    for ledger, entry, at in [(1, 2, 20), (2, 1, 10), (3, 3, 30), (4, 5, 50), (5, 4, 40)]:
        assert tracker.add_message(ledger, entry, at)
    assert not tracker.has_message_available()
    assert tracker.number_of_delayed_messages() == 5
    assert tracker.get_scheduled_messages(10) == []
    scheduler.advance(15)
    assert not tracker.add_message(6, 6, 10)  # already due: deliver now
    assert tracker.number_of_delayed_messages() == 5
    assert tracker.has_message_available()
    assert len(tracker.get_scheduled_messages(10)) == 1
    scheduler.advance(45)
    assert tracker.number_of_delayed_messages() == 4
    assert tracker.has_message_available()
    assert len(tracker.get_scheduled_messages(1)) == 1
    assert tracker.number_of_delayed_messages() == 3
    assert len(tracker.get_scheduled_messages(3)) == 3
    assert tracker.number_of_delayed_messages() == 0
    assert not tracker.has_message_available()
    assert tracker.get_scheduled_messages(10) == []


@pytest.mark.parametrize("profile", FORMS)
def test_with_timer_targets_the_earliest_message(profile):
    scheduler, tracker, dispatcher = _tracker(profile, tick=1)
    assert tracker.add_message(2, 2, 20)
    assert tracker.timer.deadline == 20
    assert tracker.add_message(1, 1, 10)
    assert tracker.timer.deadline == 10
    assert tracker.add_message(3, 3, 30)
    assert tracker.timer.deadline == 10 and scheduler.pending() == 1
    scheduler.advance(15)
    assert dispatcher.reads == 1 and tracker.timer is None


@pytest.mark.parametrize("profile", FORMS)
def test_add_within_tick_time_is_rejected_when_not_strict(profile):
    _, tracker, _ = _tracker(profile, tick=100)
    assert [tracker.add_message(i, i, at) for i, at in enumerate([10, 99, 100, 101, 200], 1)] == [
        False,
        False,
        False,
        True,
        True,
    ]
    assert tracker.number_of_delayed_messages() == 2


@pytest.mark.parametrize("profile", FORMS)
def test_add_message_with_strict_delay(profile):
    scheduler, tracker, _ = _tracker(profile, tick=0, strict=True)
    scheduler.advance(10)
    assert not tracker.add_message(1, 1, 9)
    assert not tracker.add_message(4, 4, 10)
    assert tracker.add_message(1, 1, 11)
    assert tracker.number_of_delayed_messages() == 1
    assert not tracker.has_message_available()


def _fill_fixed_delays(tracker) -> None:
    assert not tracker.has_message_available()
    for i in range(1, 6):
        assert tracker.add_message(i, i, i * 10)
    assert not tracker.has_message_available()
    assert not tracker.should_pause_all_deliveries()
    for i in range(6, tracker.fixed_delay_detection_lookahead + 1):
        assert tracker.add_message(i, i, i * 10)
    assert tracker.should_pause_all_deliveries()


def test_with_fixed_delays_pauses_until_messages_are_due():
    scheduler, tracker, _ = _tracker("3.0", tick=500, strict=True, lookahead=100)
    _fill_fixed_delays(tracker)
    scheduler.advance(100 * 10)
    tracker.get_scheduled_messages(100)
    assert not tracker.should_pause_all_deliveries()
    while tracker.get_scheduled_messages(100):
        pass
    assert not tracker.should_pause_all_deliveries()
    assert tracker.messages_have_fixed_delay  # reset when the tracker emptied


def test_with_mixed_delays_an_earlier_message_ends_the_pause():
    _, tracker, _ = _tracker("4.0", tick=500, strict=True, lookahead=100)
    _fill_fixed_delays(tracker)
    assert tracker.add_message(5, 6, 5)
    assert not tracker.should_pause_all_deliveries()


def test_with_no_delays_a_rejected_message_ends_the_pause():
    _, tracker, _ = _tracker("3.0", tick=500, strict=True, lookahead=100)
    _fill_fixed_delays(tracker)
    assert not tracker.add_message(5, 6, -1)
    assert not tracker.should_pause_all_deliveries()


# --- timer rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", FORMS)
def test_timer_waits_a_tick_after_the_last_run(profile):
    scheduler, tracker, dispatcher = _tracker(profile, tick=1, strict=True, start=1000)
    tracker.reset_tick_time(1000)  # 4.1 keeps the exact precision chosen at construction
    assert tracker.add_message(1, 1, 6000)
    assert tracker.timer.delay == 5000 and tracker.timeouts_created == 1
    scheduler.advance(5000)
    assert dispatcher.reads == 1 and tracker.read_more_entries_calls == 1
    # still held (the stub dispatcher read nothing); a later message waits for lastTickRun + tick
    assert tracker.add_message(1, 2, 6500)
    assert tracker.timer is None  # 6000 is the first and it is due: no timer
    assert tracker.get_scheduled_messages(1) == [(1, 1)]
    assert tracker.timer.delay == 1000 and tracker.timer.deadline == 7000
    tracker.clear()
    assert tracker.timer is not None  # clear() leaves the timer
    assert not tracker.has_message_available()
    assert tracker.timer is None and scheduler.pending() == 0


def test_4_1_precision_is_fixed_at_construction():
    assert [timestamp_precision_bit_cnt(t) for t in (0, 1, 100, 500, 1000, 1024)] == [0, 0, 6, 8, 9, 10]
    _, tracker, _ = _tracker("4.1", tick=1000)
    tracker.reset_tick_time(1)
    assert tracker.add_message(1, 1, 5000)
    assert tracker.buckets() == [(4608, [(1, [1])])]  # 5000 & -512


# --- properties -----------------------------------------------------------------------------------

workloads = st.lists(
    st.tuples(st.integers(0, 400), st.integers(0, 3000), st.integers(1, 8)),  # (gap, delay, budget)
    min_size=1,
    max_size=40,
)


def _run(profile: str, tick: int, strict: bool, workload, ledgers: int = 4):
    scheduler, tracker, _ = _tracker(profile, tick=tick, strict=strict)
    accepted: dict[tuple[int, int], int] = {}
    released: list[tuple[int, tuple[int, int]]] = []
    for i, (gap, delay, budget) in enumerate(workload):
        scheduler.advance(gap)
        position = (i % ledgers + 1, i)
        if tracker.add_message(*position, scheduler.now() + delay):
            accepted[position] = scheduler.now() + delay
        released += [(scheduler.now(), p) for p in tracker.get_scheduled_messages(budget)]
    scheduler.advance(4000 + tick)
    while batch := tracker.get_scheduled_messages(7):
        released += [(scheduler.now(), p) for p in batch]
    return tracker, accepted, released


@given(st.sampled_from(FORMS), st.sampled_from([0, 1, 100, 500, 1000]), st.booleans(), workloads)
@SLOW
def test_nothing_is_released_before_its_rounded_deliver_at_time_nor_twice(profile, tick, strict, workload):
    tracker, accepted, released = _run(profile, tick, strict, workload)
    positions = [p for _, p in released]
    assert len(positions) == len(set(positions))
    assert set(positions) == set(accepted)
    slack = 0 if strict else tick
    for at, position in released:
        rounded = tracker.trim(accepted[position]) if profile == "4.1" else accepted[position]
        assert rounded <= at + slack
    assert tracker.number_of_delayed_messages() == 0


@given(st.sampled_from([0, 1, 100, 1000]), st.booleans(), workloads)
@SLOW
def test_both_forms_release_the_same_messages(tick, strict, workload):
    _, accepted_pq, released_pq = _run("4.0", tick, strict, workload)
    _, accepted_tb, released_tb = _run("4.1", tick, strict, workload)
    assert accepted_pq == accepted_tb
    assert {p for _, p in released_pq} == {p for _, p in released_tb} == set(accepted_pq)


# --- fastutil Long2ObjectOpenHashMap ---------------------------------------------------------------


def test_long_map_iterates_in_fastutil_order_as_the_golden_buckets_show():
    # ledger orders seen in in_memory_delayed_delivery_tracker.jsonl bucket lists
    for keys, order in [
        ((1, 2, 3), [1, 3, 2]),
        ((7, 42, 5), [42, 5, 7]),
        ((123456789, 7, 1000), [1000, 7, 123456789]),
        ((1000, 5), [5, 1000]),
    ]:
        m: LongOpenHashMap[str] = LongOpenHashMap()
        for k in keys:
            m.put(k, str(k))
        assert list(m.keys()) == order
        assert [v for _, v in m.items()] == [str(k) for k in order]


def test_long_map_sizes_and_key_zero():
    assert array_size(16) == 32 and max_fill(32) == 24 and array_size(26) == 64
    assert mix(1) & 31 == 17  # HashCommon.mix(1L) lands ledger 1 in slot 17 of 32
    m: LongOpenHashMap[int] = LongOpenHashMap()
    for k in range(1, 25):
        m.put(k, k)
    assert m.capacity == 32
    m.put(0, 0)
    assert m.capacity == 64 and next(iter(m)) == 0  # key 0 is kept apart and comes first
    for k in range(0, 20):
        m.remove(k)
    assert m.capacity == 32 and sorted(m) == list(range(20, 25))
    s = LongOpenHashSet()
    assert s.add(5) and not s.add(5) and list(s) == [5]


@given(st.lists(st.tuples(st.booleans(), st.integers(-50, 200)), max_size=300))
@settings(max_examples=80, deadline=None)
def test_long_map_holds_what_a_dict_holds(ops):
    m: LongOpenHashMap[int] = LongOpenHashMap()
    d: dict[int, int] = {}
    for i, (put, key) in enumerate(ops):
        if put:
            assert m.put(key, i) == d.get(key)
            d[key] = i
        else:
            assert m.remove(key) == d.pop(key, None)
        assert len(m) == len(d)
    assert dict(m.items()) == d
    assert all(m[k] == v for k, v in d.items())
    assert m.capacity >= 32 and len(d) <= max_fill(m.capacity)


def test_partial_take_follows_the_hash_map_order():
    scheduler, tracker, _ = _tracker("4.1", tick=1)
    for ledger in (2, 3, 1):  # one bucket; fastutil visits 1, 3, 2
        tracker.add_message(ledger, 10, 100)
        tracker.add_message(ledger, 11, 100)
    scheduler.advance(100)
    assert tracker.get_scheduled_messages(3) == [(1, 10), (1, 11), (3, 10)]
    assert tracker.buckets() == [(100, [(3, [11]), (2, [10, 11])])]


# --- the conformance checker can fail -------------------------------------------------------------


def test_checker_passes_a_golden_line_and_catches_a_changed_one():
    line = golden_lines("in_memory_delayed_delivery_tracker.jsonl")[0]
    check_in_memory(line)
    broken = copy.deepcopy(line)
    for step in broken["steps"]:
        if len(step["buckets"]) > 0 and len(step["buckets"][0][1]) > 1:
            step["buckets"][0][1].reverse()
            break
    else:
        broken["steps"][-1]["timeouts_created"] += 1
    with pytest.raises(Mismatch):
        check_in_memory(broken)


def test_bad_configuration_fails_clearly():
    with pytest.raises(ValueError, match="tickTimeMillis must be >= 0"):
        _tracker("4.1", tick=-1)
    with pytest.raises(TypeError, match="tickTimeMillis"):
        _tracker("3.0", tick=1.5)  # type: ignore[arg-type]
    assert isinstance(_tracker("4.1", tick=1)[1], TimeBitmapDelayedDeliveryTracker)
