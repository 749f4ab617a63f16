"""Client redelivery trackers: MessageId, UnAckedMessageTracker, NegativeAcksTracker, MultiplierRedeliveryBackoff."""

from __future__ import annotations

import copy

import pytest
from golden_files import golden_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.client.negative_acks import (
    ClientClock,
    DeadlineMapNegativeAcksTracker,
    MultiplierRedeliveryBackoff,
    NegativeAcksTracker,
    TimeBucketNegativeAcksTracker,
)
from pulsarlab.client.unacked_tracker import (
    UNACKED_MESSAGE_TRACKER_DISABLED,
    UnAckedMessageTracker,
    check_ack_timeout,
    check_tick_time,
    unacked_message_tracker_for,
)
from pulsarlab.clock import Scheduler
from pulsarlab.conformance import Mismatch
from pulsarlab.conformance.trackers import check_negative_acks, check_unacked
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.ids import EARLIEST, LATEST, MessageId

SLOW = settings(max_examples=60, deadline=None)


# --- MessageId ------------------------------------------------------------------------------------


def test_message_id_orders_like_message_id_adv_compare_to():
    # (ledger, entry, partition, batchIndex), each compared as a number
    ids = [MessageId(2, 0), MessageId(1, 5, 3), MessageId(1, 5, 0, 7), MessageId(1, 5, 0), MessageId(1, 4, 9, 9)]
    assert sorted(ids) == [
        MessageId(1, 4, 9, 9),
        MessageId(1, 5, 0),
        MessageId(1, 5, 0, 7),
        MessageId(1, 5, 3),
        MessageId(2, 0),
    ]
    assert EARLIEST < MessageId(0, 0) < LATEST


def test_message_id_prints_like_java_to_string():
    assert str(MessageId(3, 7)) == "3:7:-1"  # MessageIdImpl: ledger:entry:partition
    assert str(MessageId(3, 7, 2, 4)) == "3:7:2:4"  # BatchMessageIdImpl adds the batch index
    assert MessageId.parse("3:7:2:4") == MessageId(3, 7, 2, 4)


@given(st.integers(-1, 2**40), st.integers(-1, 2**40), st.integers(-1, 100), st.integers(-1, 100))
@settings(max_examples=80, deadline=None)
def test_message_id_string_round_trips(ledger, entry, partition, batch):
    mid = MessageId(ledger, entry, partition, batch)
    assert MessageId.parse(str(mid)) == mid
    assert mid.discard_batch() == MessageId(ledger, entry, partition)
    assert not mid.discard_batch().is_batch


def test_message_id_rejects_bad_input():
    with pytest.raises(TypeError, match="ledger must be an int"):
        MessageId("1", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="partition"):
        MessageId(1, 2, 2**31)
    with pytest.raises(ValueError, match="ledger:entry:partition"):
        MessageId.parse("1:2")
    with pytest.raises(TypeError):
        MessageId.of((1,))


# --- UnAckedMessageTracker ------------------------------------------------------------------------


def _unacked(ack: int, tick: int, **kw):
    scheduler = Scheduler()
    redelivered: list[tuple[int, list[MessageId]]] = []
    tracker = UnAckedMessageTracker(scheduler, lambda ids: redelivered.append((scheduler.now(), ids)), ack, tick, **kw)
    return scheduler, tracker, redelivered


def test_add_and_remove_like_unacked_message_tracker_test():
    _, tracker, _ = _unacked(1_000_000, 100_000)
    assert tracker.is_empty() and tracker.size() == 0
    mid = MessageId(1, 1, -1)
    assert tracker.add(mid)
    assert not tracker.add(mid)  # already tracked
    assert tracker.size() == 1
    assert tracker.remove(mid)
    assert tracker.is_empty() and tracker.size() == 0
    assert not tracker.remove(mid)


def test_ring_has_ceil_ack_over_tick_plus_one_partitions_and_a_min_tick():
    _, tracker, _ = _unacked(3000, 2000)
    assert len(tracker.partitions) == 3
    _, tracker, _ = _unacked(1200, 7000)
    assert tracker.tick_duration_in_ms == 1200 and len(tracker.partitions) == 2
    _, tracker, _ = _unacked(10_000, 300)
    assert len(tracker.partitions) == 35


@given(st.integers(0, 20_000))
@SLOW
def test_ack_3000_tick_2000_redelivers_within_4000_to_6000_ms(added_at):
    scheduler, tracker, redelivered = _unacked(3000, 2000)
    scheduler.advance(added_at)
    assert tracker.add(MessageId(1, 1))
    scheduler.advance(7000)
    assert len(redelivered) == 1
    at, ids = redelivered[0]
    assert ids == [MessageId(1, 1)]
    assert 4000 < at - added_at <= 6000


@given(
    st.sampled_from([1000, 1200, 2000, 3000, 5000, 10_000]),
    st.sampled_from([100, 300, 500, 700, 2000, 7000]),
    st.integers(0, 15_000),
)
@SLOW
def test_timeout_window_is_ceil_ack_over_tick_ticks_plus_at_most_one(ack, tick, added_at):
    scheduler, tracker, redelivered = _unacked(ack, tick)
    scheduler.advance(added_at)
    tracker.add(MessageId(4, 2, 0))
    scheduler.advance(ack + 2 * tick)
    eff = tracker.tick_duration_in_ms
    span = -(-ack // eff) * eff
    [(at, _)] = redelivered
    assert span < at - added_at <= span + eff


def test_ticks_rearm_after_each_firing_and_empty_ticks_redeliver_nothing():
    seen: list[int] = []
    scheduler, tracker, redelivered = _unacked(1000, 1000, tick_listener=lambda now, ids: seen.append(now))
    assert tracker.next_tick_ms == 1000
    scheduler.advance(3500)
    assert seen == [1000, 2000, 3000] and tracker.next_tick_ms == 4000
    assert redelivered == []


def test_remove_messages_till_uses_message_id_order_and_batch_is_discarded_on_add():
    _, tracker, _ = _unacked(1000, 100)
    for mid in [MessageId(1, 1, 0), MessageId(1, 1, 2), MessageId(1, 2, -1), MessageId(0, 9, 5)]:
        tracker.add(mid)
    assert not tracker.add(MessageId(1, 1, 0, 3))  # same entry as (1, 1, 0)
    assert tracker.remove_messages_till(MessageId(1, 1, 1)) == 2  # (0,9,5) and (1,1,0)
    assert [m for p in tracker.partitions for m in p] == [MessageId(1, 1, 2), MessageId(1, 2, -1)]
    tracker.clear()
    assert tracker.size() == 0 and tracker.next_tick_ms == 100


def test_close_stops_the_ticks():
    scheduler, tracker, redelivered = _unacked(1000, 500)
    tracker.add(MessageId(1, 1))
    tracker.close()
    scheduler.advance(10_000)
    assert redelivered == [] and tracker.next_tick_ms is None and scheduler.pending() == 0


def test_ack_timeout_validation_texts_are_pulsars():
    with pytest.raises(IllegalArgumentException, match="^Ack timeout should be greater than 1000 ms$") as err:
        check_ack_timeout(999)
    assert err.value.java_class == "java.lang.IllegalArgumentException"
    with pytest.raises(IllegalArgumentException, match="^Ack timeout tick time should be greater than 100 ms$"):
        check_tick_time(99)
    assert check_ack_timeout(0) == 0 and check_ack_timeout(1000) == 1000 and check_tick_time(100) == 100
    with pytest.raises(IllegalArgumentException, match="Ack timeout should be greater than 1000 ms"):
        UnAckedMessageTracker(Scheduler(), lambda ids: None, 500)
    with pytest.raises(IllegalArgumentException, match="tick time should be greater than 100 ms"):
        UnAckedMessageTracker(Scheduler(), lambda ids: None, 5000, 50)
    with pytest.raises(TypeError):
        check_ack_timeout(1.5)  # type: ignore[arg-type]


def test_ack_timeout_zero_gives_the_disabled_tracker():
    scheduler = Scheduler()
    tracker = unacked_message_tracker_for(scheduler, lambda ids: None, 0)
    assert tracker is UNACKED_MESSAGE_TRACKER_DISABLED
    assert tracker.add(MessageId(1, 1)) and tracker.remove(MessageId(1, 1)) and tracker.size() == 0
    assert scheduler.pending() == 0
    assert isinstance(unacked_message_tracker_for(scheduler, lambda ids: None, 1000), UnAckedMessageTracker)


# --- NegativeAcksTracker --------------------------------------------------------------------------


def _nacks(profile: str, **conf):
    scheduler = Scheduler()
    runs: list[tuple[int, list[MessageId]]] = []
    tracker = NegativeAcksTracker(scheduler, lambda ids: runs.append((scheduler.now(), ids)), profile=profile, **conf)
    return scheduler, tracker, runs


def test_profile_picks_the_form():
    assert isinstance(_nacks("3.0")[1], DeadlineMapNegativeAcksTracker)
    assert isinstance(_nacks("4.0")[1], TimeBucketNegativeAcksTracker)
    assert isinstance(_nacks("4.1")[1], TimeBucketNegativeAcksTracker)


def test_renack_is_redelivered_once_in_3x_and_twice_in_4x():
    counts = {}
    for profile in ("3.0", "4.0"):
        scheduler, tracker, runs = _nacks(profile, negative_ack_redelivery_delay_micros=1_000_000)
        tracker.add(MessageId(3, 1))
        scheduler.advance(600)
        tracker.add(MessageId(3, 1))  # 4.x: bucket trim(1600)=1536 is not trim(1000)=768
        scheduler.advance(5000)
        counts[profile] = sum(ids.count(MessageId(3, 1, -1)) + ids.count(MessageId(3, 1, -2)) for _, ids in runs)
    assert counts == {"3.0": 1, "4.0": 2}


def test_3x_redelivers_at_the_first_tick_strictly_after_the_deadline_and_keeps_the_partition():
    scheduler, tracker, runs = _nacks("3.0", negative_ack_redelivery_delay_micros=300_000)
    assert tracker.timer_interval_ns == 100_000_000
    tracker.add(MessageId(7, 2, 4, 1))
    assert tracker.nacked_messages_count() == 1
    scheduler.advance(1000)
    # ticks at 100, 200, 300 (deadline 300 is not < 300), 400
    assert runs == [(400, [MessageId(7, 2, 4)])]
    assert tracker.nacked_messages_count() == 0


def test_3x_delay_floor_is_100_ms_and_the_timer_stops_when_empty():
    scheduler, tracker, runs = _nacks("3.0", negative_ack_redelivery_delay_micros=10_000)
    assert tracker.nack_delay_ns == 100_000_000
    tracker.add(MessageId(1, 1))
    scheduler.advance(2000)
    assert [ids for _, ids in runs] == [[MessageId(1, 1)]]
    assert tracker.next_timer_ns is None and scheduler.pending() == 0


@given(
    st.sampled_from([100_000, 300_000, 1_000_000, 1_500_000, 3_000_000]),
    st.lists(st.integers(0, 3000), min_size=1, max_size=25),
)
@SLOW
def test_4x_with_a_fixed_delay_is_never_late_and_at_most_255_ms_early(delay_micros, gaps):
    scheduler, tracker, runs = _nacks("4.0", negative_ack_redelivery_delay_micros=delay_micros)
    delay_ms = delay_micros // 1000
    nacked_at: dict[MessageId, int] = {}
    for i, gap in enumerate(gaps):
        scheduler.advance(gap)
        tracker.add(MessageId(1, i))
        nacked_at[MessageId(1, i, -2)] = scheduler.now()
    scheduler.advance(delay_ms + 1000)
    released = {mid: at for at, ids in runs for mid in ids}
    assert released.keys() == nacked_at.keys()
    assert sum(len(ids) for _, ids in runs) == len(nacked_at)
    for mid, at in released.items():
        due = nacked_at[mid] + delay_ms
        assert due - 255 <= at <= due


def test_4x_precision_bits_and_count_duplicates_across_buckets():
    scheduler, tracker, runs = _nacks(
        "4.0", negative_ack_redelivery_delay_micros=1_000_000, negative_ack_precision_bit_cnt=0
    )
    tracker.add(MessageId(2, 5, 1))
    scheduler.advance(1)
    tracker.add(MessageId(2, 5, 1))
    assert tracker.nacked_messages_count() == 2  # two exact-ms buckets
    scheduler.advance(999)
    assert runs == [(1000, [MessageId(2, 5, -2)])]
    assert tracker.next_timer_ns == 1001 * 1_000_000
    assert tracker.trim(1_700_000_000_123) == 1_700_000_000_123


def test_clock_in_nanoseconds_from_an_epoch():
    scheduler = Scheduler()
    clock = ClientClock(scheduler, nanos_per_unit=1, epoch_ms=1_700_000_000_000)
    scheduler.advance(2_500_000)
    assert clock.nano_time() == 2_500_000 and clock.current_time_millis() == 1_700_000_000_002
    with pytest.raises(ValueError, match="scheduler"):
        NegativeAcksTracker(Scheduler(), lambda ids: None, profile="3.0", clock=clock)


def test_nack_configuration_errors_are_pulsars():
    with pytest.raises(IllegalArgumentException, match="^redeliveryDelay needs to be >= 0$"):
        _nacks("3.0", negative_ack_redelivery_delay_micros=-1)
    with pytest.raises(IllegalArgumentException, match="negativeAckPrecisionBitCount needs to be >= 0"):
        _nacks("4.0", negative_ack_precision_bit_cnt=-1)


# --- MultiplierRedeliveryBackoff ------------------------------------------------------------------


def test_backoff_follows_min_times_multiplier_to_the_count_capped_at_max():
    b = MultiplierRedeliveryBackoff(1000, 60_000, 2.0)
    counts = (-1, 0, 1, 2, 3, 5, 6, 7, 100)
    assert [b.next(c) for c in counts] == [1000, 1000, 2000, 4000, 8000, 32_000, 60_000, 60_000, 60_000]
    assert MultiplierRedeliveryBackoff(100, 1300, 1.5).next(3) == 337  # (long)(100 * 3.375)
    assert MultiplierRedeliveryBackoff(0, 5000, 3.0).next(4) == 0
    defaults = MultiplierRedeliveryBackoff()
    assert (defaults.min_delay_ms, defaults.max_delay_ms, defaults.multiplier) == (10_000, 600_000, 2.0)


@given(st.integers(0, 5000), st.integers(0, 100_000), st.floats(1.01, 10), st.integers(-3, 200))
@SLOW
def test_backoff_stays_between_min_and_max_and_never_decreases(lo, extra, multiplier, count):
    b = MultiplierRedeliveryBackoff(lo, lo + extra, multiplier)
    assert lo <= b.next(count) <= lo + extra
    assert b.next(count) <= b.next(count + 1)


def test_backoff_validation_texts_are_pulsars():
    with pytest.raises(IllegalArgumentException, match="^min delay time must be >= 0$"):
        MultiplierRedeliveryBackoff(-1, 10, 2.0)
    with pytest.raises(IllegalArgumentException, match="^maxDelayMs must be >= minDelayMs$"):
        MultiplierRedeliveryBackoff(100, 10, 2.0)
    with pytest.raises(IllegalArgumentException, match="^multiplier must be > 1$"):
        MultiplierRedeliveryBackoff(100, 1000, 1.0)


def test_backoff_sets_the_3x_deadline_and_interval():
    scheduler, tracker, runs = _nacks(
        "3.0", negative_ack_redelivery_backoff=MultiplierRedeliveryBackoff(300, 5000, 2.0)
    )
    assert tracker.timer_interval_ns == 100_000_000  # max(next(0), 100 ms) / 3
    tracker.add(MessageId(1, 1), redelivery_count=2)  # deadline 1200 ms
    scheduler.advance(2000)
    assert [at for at, _ in runs] == [1300]


# --- the conformance checkers can fail ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "checker", "field"),
    [
        ("unacked_message_tracker.jsonl", check_unacked, "size"),
        ("negative_acks_tracker.jsonl", check_negative_acks, "nacked_count"),
    ],
)
def test_checker_passes_a_golden_line_and_catches_a_changed_one(name, checker, field):
    line = golden_lines(name)[1]
    checker(line)
    broken = copy.deepcopy(line)
    broken["steps"][-1][field] += 1
    with pytest.raises(Mismatch):
        checker(broken)
