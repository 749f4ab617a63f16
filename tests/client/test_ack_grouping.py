"""Client ack grouping tracker (reference §7.1, §9): Pulsar's unit-test facts, timing, profiles, properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.client.ack_grouping import (
    AcknowledgmentsGroupingTracker,
    NonPersistentAcknowledgmentGroupingTracker,
    for_profile,
)
from pulsarlab.clock import Scheduler
from pulsarlab.errors import IllegalArgumentException, IllegalStateException
from pulsarlab.events import EventLog
from pulsarlab.ids import EARLIEST, MessageId
from pulsarlab.protocol.acks import AckCommand, AckType, ack_set_mask, ack_set_words

IND, CUM = AckType.INDIVIDUAL, AckType.CUMULATIVE


class Wire:
    """The consumer's connection: records every command with the virtual time it was written."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.connected = True
        self.sent: list[tuple[int, AckCommand]] = []

    def send(self, cmd: AckCommand) -> None:
        assert self.connected, "a command was written while disconnected"
        self.sent.append((self.scheduler.now(), cmd))

    def is_connected(self) -> bool:
        return self.connected

    def commands(self) -> list[AckCommand]:
        return [c for _, c in self.sent]


def make(**conf):
    sched = Scheduler()
    wire = Wire(sched)
    tracker = AcknowledgmentsGroupingTracker(sched, wire.send, is_connected=wire.is_connected, **conf)
    return sched, wire, tracker


def popcount(mask: int) -> int:
    return bin(mask).count("1")


# --- Pulsar's unit-test facts ----------------------------------------------------------------------


def test_ack_tracker_duplicates():
    # AcknowledgementsGroupingTrackerTest.testAckTracker (group time 10 s, partition 0)
    sched, wire, tracker = make(group_time_ms=10_000)
    msg = {i: MessageId(5, i, 0) for i in range(1, 7)}
    assert not tracker.is_duplicate(msg[1])
    tracker.add_acknowledgment(msg[1], 0, IND)
    assert tracker.is_duplicate(msg[1])
    assert not tracker.is_duplicate(msg[2])
    tracker.add_acknowledgment(msg[5], 0, CUM)
    assert all(tracker.is_duplicate(msg[i]) for i in range(1, 6))
    assert not tracker.is_duplicate(msg[6])

    wire.connected = False
    tracker.flush()  # while disconnected: nothing changes, nothing is written
    assert wire.sent == []
    assert all(tracker.is_duplicate(msg[i]) for i in range(1, 6))
    assert not tracker.is_duplicate(msg[6])

    tracker.add_acknowledgment(msg[6], 0, IND)
    assert tracker.is_duplicate(msg[6])
    wire.connected = True
    tracker.flush()
    assert all(tracker.is_duplicate(msg[i]) for i in range(1, 6))
    assert not tracker.is_duplicate(msg[6])
    cmds = wire.commands()
    assert cmds[0] == AckCommand(CUM, ((5, 5, None),), {})
    assert cmds[1] == AckCommand(IND, ((5, 1, None), (5, 6, None)), {})
    tracker.close()


def test_do_individual_batch_ack_async_cardinalities():
    # testDoIndividualBatchAckAsync: batch 10 index 3 -> 9 bits left; batch 20 (all set) index 5 -> 19
    _, wire, tracker = make(batch_index_ack_enabled=True)
    tracker.add_acknowledgment(MessageId(5, 1, 0, 3), 10, IND)
    tracker.new_ack_set(MessageId(3, 2, 0), 20)
    tracker.add_acknowledgment(MessageId(3, 2, 0, 5), 20, IND)
    pending = tracker.pending_batch_index_acks
    assert popcount(pending[MessageId(5, 1, 0)]) == 9
    assert popcount(pending[MessageId(3, 2, 0)]) == 19
    assert wire.sent == []


def test_batch_index_ack_words_1015_and_cumulative_1008():
    _, wire, tracker = make(batch_index_ack_enabled=True)
    tracker.add_acknowledgment(MessageId(7, 4, -1, 3), 10, IND)
    tracker.flush()
    assert wire.commands() == [AckCommand(IND, ((7, 4, (1015,)),), {})]

    _, wire, tracker = make(batch_index_ack_enabled=True)
    tracker.add_acknowledgment(MessageId(7, 4, -1, 3), 10, CUM)
    tracker.flush()
    assert wire.commands() == [AckCommand(CUM, ((7, 4, (1008,)),), {})]
    assert tracker.last_cumulative_ack == MessageId(7, 4, -1, 3)
    assert tracker.last_cumulative_ack_set == (1008,)


def test_ack_set_words_helper():
    assert ack_set_words(set(range(10)) - {3}, 10) == (1015,)
    assert ack_set_words(range(4, 10), 10) == (1008,)
    assert ack_set_words(0) == ()
    with pytest.raises(ValueError):
        ack_set_words({10}, 10)
    with pytest.raises(ValueError):
        ack_set_words(1 << 10, 10)


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 300), max_size=40))
def test_ack_set_words_are_java_long_array(bits):
    words = ack_set_words(bits)
    assert all(-(2**63) <= w < 2**63 for w in words)
    assert len(words) == (max(bits) // 64 + 1 if bits else 0)  # no trailing zero word
    assert ack_set_mask(words) == sum(1 << b for b in bits)
    assert ack_set_words(sum(1 << b for b in bits)) == words


# --- batches -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_index_ack", [False, True])
def test_batch_entry_ack_sent_once_when_every_message_is_acked(batch_index_ack):
    _, wire, tracker = make(batch_index_ack_enabled=batch_index_ack)
    entry = MessageId(3, 9, 2)
    for i in (4, 0, 2, 1):
        tracker.add_acknowledgment(MessageId(3, 9, 2, i), 5, IND)
        assert tracker.is_duplicate(MessageId(3, 9, 2, i)) == batch_index_ack
        assert not tracker.is_duplicate(MessageId(3, 9, 2, 3))
    assert tracker.pending_individual_acks == ()
    assert tracker.batch_ack_set(entry) == (1 << 3, 5)
    tracker.flush()
    if batch_index_ack:
        assert wire.commands() == [AckCommand(IND, ((3, 9, ack_set_words({3}, 5)),), {})]
    else:
        assert wire.sent == []
    tracker.add_acknowledgment(MessageId(3, 9, 2, 3), 5, IND)
    assert tracker.pending_individual_acks == (entry,)
    assert tracker.pending_batch_index_acks == {}
    assert tracker.is_duplicate(MessageId(3, 9, 2, 0))
    tracker.flush()
    assert wire.commands()[-1] == AckCommand(IND, ((3, 9, None),), {})
    assert sum(len(c.message_ids) for c in wire.commands()) == (2 if batch_index_ack else 1)


def test_batch_index_ack_accumulates_bits_until_flush():
    _, wire, tracker = make(batch_index_ack_enabled=True)
    for i in (1, 6, 2):
        tracker.add_acknowledgment(MessageId(1, 1, -1, i), 8, IND)
    assert tracker.pending_batch_index_acks == {MessageId(1, 1): 0b10111001}
    tracker.flush()
    tracker.add_acknowledgment(MessageId(1, 1, -1, 0), 8, IND)
    tracker.flush()
    # the second batch-index ack is cloned from the shared set: it still carries the earlier acks
    assert [c.message_ids for c in wire.commands()] == [
        ((1, 1, ack_set_words(0b10111001, 8)),),
        ((1, 1, ack_set_words(0b10111000, 8)),),
    ]


def test_new_ack_set_on_redelivery_starts_again():
    _, wire, tracker = make()
    for i in range(3):
        tracker.add_acknowledgment(MessageId(2, 2, -1, i), 4, IND)
    tracker.new_ack_set(MessageId(2, 2), 4)  # the entry came back: a fresh set, every bit set
    tracker.add_acknowledgment(MessageId(2, 2, -1, 3), 4, IND)
    tracker.flush()
    assert wire.sent == []
    assert tracker.batch_ack_set(MessageId(2, 2)) == (0b0111, 4)


@pytest.mark.parametrize("batch_index_ack", [False, True])
def test_cumulative_ack_of_partial_batch(batch_index_ack):
    _, wire, tracker = make(batch_index_ack_enabled=batch_index_ack)
    tracker.add_acknowledgment(MessageId(4, 6, 0, 2), 5, CUM)
    tracker.flush()
    if batch_index_ack:
        assert wire.commands() == [AckCommand(CUM, ((4, 6, ack_set_words({3, 4}, 5)),), {})]
        assert tracker.is_duplicate(MessageId(4, 6, 0, 2))
        assert not tracker.is_duplicate(MessageId(4, 6, 0, 3))
    else:  # the previous entry
        assert wire.commands() == [AckCommand(CUM, ((4, 5, None),), {})]
        assert tracker.last_cumulative_ack == MessageId(4, 5, 0)
        assert not tracker.is_duplicate(MessageId(4, 6, 0, 0))
    # the last message of the batch completes it: the entry itself
    tracker.add_acknowledgment(MessageId(4, 6, 0, 4), 5, CUM)
    tracker.flush()
    assert wire.commands()[-1] == AckCommand(CUM, ((4, 6, None),), {})
    assert tracker.is_duplicate(MessageId(4, 6, 0)) and tracker.is_duplicate(MessageId(4, 6, 0, 4))


def test_cumulative_keeps_the_highest_and_sends_once():
    sched, wire, tracker = make()
    for e in (3, 8, 5):
        tracker.add_acknowledgment(MessageId(1, e), 0, CUM)
    assert tracker.last_cumulative_ack == MessageId(1, 8)
    sched.advance(100)
    assert wire.commands() == [AckCommand(CUM, ((1, 8, None),), {})]
    tracker.add_acknowledgment(MessageId(1, 7), 0, CUM)  # below: ignored, nothing to flush
    sched.advance(100)
    assert len(wire.sent) == 1


def test_chunked_message_ack_expands_to_every_chunk():
    _, wire, tracker = make()
    chunks = (MessageId(1, 3), MessageId(1, 4), MessageId(1, 6))
    tracker.add_acknowledgment(MessageId(1, 6), 0, IND, chunk_ids=chunks)
    tracker.add_acknowledgment(MessageId(1, 5), 0, IND)
    tracker.flush()
    # pending ids go out in order; the chunked message's id (its last chunk) expands where it sorts
    assert wire.commands() == [AckCommand(IND, ((1, 5, None), (1, 3, None), (1, 4, None), (1, 6, None)), {})]


# --- immediate cases -----------------------------------------------------------------------------


def test_group_time_zero_sends_every_ack_at_once_without_a_timer():
    sched, wire, tracker = make(group_time_ms=0, batch_index_ack_enabled=True)
    assert sched.pending() == 0
    tracker.add_acknowledgment(MessageId(5, 1, 0), 0, IND)
    tracker.add_acknowledgment(MessageId(5, 2, 0, 1), 3, IND)
    tracker.add_acknowledgment(MessageId(5, 3, 0), 0, CUM)
    assert wire.commands() == [
        AckCommand(IND, ((5, 1, None),), {}),
        AckCommand(IND, ((5, 2, ack_set_words({0, 2}, 3)),), {}),
        AckCommand(CUM, ((5, 3, None),), {}),
    ]
    assert sched.pending() == 0 and tracker.next_flush_ms is None
    # testImmediateAckingTracker: an immediate ack is not tracked, so it is no duplicate
    assert not tracker.is_duplicate(MessageId(5, 1, 0))


def test_immediate_ack_while_disconnected_is_lost():
    events = EventLog()
    sched, wire, tracker = make(group_time_ms=0, events=events, consumer_name="c1")
    wire.connected = False
    tracker.add_acknowledgment(MessageId(5, 1, 0), 0, IND)
    assert not tracker.is_duplicate(MessageId(5, 1, 0))
    wire.connected = True
    tracker.flush()
    assert wire.sent == [] and tracker.lost_acks == 1
    (lost,) = events.of_kind("acks_lost")
    assert (lost.consumer, lost.reason, lost.individual) == ("c1", "not_connected", 1)
    tracker.add_acknowledgment(MessageId(5, 2, 0), 0, IND)
    assert wire.commands() == [AckCommand(IND, ((5, 2, None),), {})]


def test_ack_with_properties_is_immediate_and_alone():
    sched, wire, tracker = make()
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    tracker.add_acknowledgment(MessageId(1, 2), 0, CUM, {"compacted": 7})
    assert wire.commands() == [AckCommand(CUM, ((1, 2, None),), {"compacted": 7})]
    assert tracker.last_cumulative_ack == EARLIEST  # an immediate ack does not move it
    assert tracker.pending_individual_acks == (MessageId(1, 1),)
    sched.advance(100)
    assert wire.commands()[-1] == AckCommand(IND, ((1, 1, None),), {})


def test_group_size_flush_at_default_1000():
    sched, wire, tracker = make()
    assert tracker.max_group_size == 1000
    for e in range(999, 0, -1):
        tracker.add_acknowledgment(MessageId(9, e), 0, IND)
    assert wire.sent == [] and len(tracker.pending_individual_acks) == 999
    tracker.add_acknowledgment(MessageId(9, 0), 0, IND)
    assert len(wire.sent) == 1 and sched.now() == 0
    ids = wire.commands()[0].message_ids
    assert [e for _, e, _ in ids] == list(range(1000))  # sorted like the skip-list set
    assert tracker.pending_individual_acks == ()


def test_group_size_flush_at_configured_size():
    events = EventLog()
    _, wire, tracker = make(max_group_size=10, batch_index_ack_enabled=True, events=events)
    for e in range(25):
        tracker.add_acknowledgment(MessageId(2, e), 0, IND)
    assert [len(c.message_ids) for c in wire.commands()] == [10, 10]
    for e in range(10):
        tracker.add_acknowledgment(MessageId(3, e, -1, 0), 2, IND)  # batch-index acks count separately
    assert [len(c.message_ids) for c in wire.commands()] == [10, 10, 15]
    assert [e.reason for e in events.of_kind("acks_flushed")] == ["size", "size", "size"]


# --- the timer -------------------------------------------------------------------------------------


def test_timer_flushes_every_100_ms_on_the_virtual_clock():
    events = EventLog()
    sched, wire, tracker = make(events=events)
    assert tracker.group_time_ms == 100
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    assert tracker.next_flush_ms == 100
    sched.advance(99)
    assert wire.sent == []
    sched.advance(1)
    assert [t for t, _ in wire.sent] == [100]
    sched.advance(50)
    tracker.add_acknowledgment(MessageId(1, 2), 0, IND)  # at 150: the next run of the task is at 200
    sched.advance(49)
    assert len(wire.sent) == 1
    sched.advance(1)
    assert [t for t, _ in wire.sent] == [100, 200]
    assert [e.reason for e in events.of_kind("acks_flushed")] == ["timer", "timer"]
    assert sched.run_until_idle() == 0  # nothing pending: no timer keeps the lab busy


def test_timer_phase_follows_construction_time():
    sched = Scheduler(start_ms=30)
    wire = Wire(sched)
    tracker = AcknowledgmentsGroupingTracker(sched, wire.send, group_time_ms=100)
    sched.advance(20)
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    sched.run_until_idle()
    assert [t for t, _ in wire.sent] == [130]


def test_disconnected_acks_stay_pending_until_a_later_flush():
    sched, wire, tracker = make()
    wire.connected = False
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    tracker.add_acknowledgment(MessageId(1, 0), 0, CUM)
    sched.advance(300)
    assert wire.sent == [] and tracker.pending_individual_acks == (MessageId(1, 1),)
    assert sched.run_until_idle(max_timers=10) == 0  # no timer re-arms while nothing can be sent
    wire.connected = True
    tracker.connection_opened()
    sched.advance(100)  # the fixed-delay task's next tick (construction time + k * group time)
    assert [t for t, _ in wire.sent] == [400, 400]
    assert [c.ack_type for c in wire.commands()] == [CUM, IND]


def test_close_flushes_and_stops_the_timer():
    events = EventLog()
    sched, wire, tracker = make(events=events)
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    tracker.close()
    assert wire.commands() == [AckCommand(IND, ((1, 1, None),), {})]
    assert events.of_kind("acks_flushed")[0].reason == "close"
    tracker.add_acknowledgment(MessageId(1, 2), 0, IND)
    sched.advance(1000)
    assert len(wire.sent) == 1 and sched.pending() == 0


def test_flush_and_clean_forgets_the_cumulative_ack():
    sched, wire, tracker = make()
    tracker.add_acknowledgment(MessageId(1, 5), 0, CUM)
    tracker.flush_and_clean()
    assert wire.commands() == [AckCommand(CUM, ((1, 5, None),), {})]
    assert tracker.last_cumulative_ack == EARLIEST
    assert not tracker.is_duplicate(MessageId(1, 3))
    assert tracker.lost_acks == 0


def test_flush_and_clean_while_disconnected_loses_pending_acks():
    events = EventLog()
    sched, wire, tracker = make(events=events)
    wire.connected = False
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    tracker.add_acknowledgment(MessageId(1, 5), 0, CUM)
    tracker.flush_and_clean()
    wire.connected = True
    sched.run_until_idle()
    assert wire.sent == [] and tracker.lost_acks == 2
    (lost,) = events.of_kind("acks_lost")
    assert (lost.reason, lost.individual, lost.cumulative_entry) == ("flush_and_clean", 1, 5)


def test_abandon_loses_pending_acks():
    sched, wire, tracker = make()
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    tracker.abandon()
    sched.advance(1000)
    assert wire.sent == [] and tracker.lost_acks == 1 and sched.pending() == 0


# --- profiles, configuration, events ------------------------------------------------------------


@pytest.mark.parametrize("version", ["3.0", "4.0", "4.1"])
def test_batch_index_ack_default_per_profile(version):
    sched = Scheduler()
    wire = Wire(sched)
    tracker = for_profile(version, sched, wire.send)
    assert tracker.group_time_ms == 100 and tracker.max_group_size == 1000
    expected_on = False  # the Python client's default in every line (Java's is true from 4.1, PIP-391)
    assert tracker.batch_index_ack_enabled is expected_on
    tracker.add_acknowledgment(MessageId(1, 1, -1, 3), 10, IND)
    sched.advance(100)
    assert wire.commands() == ([AckCommand(IND, ((1, 1, (1015,)),), {})] if expected_on else [])
    assert for_profile(version, sched, wire.send, batch_index_ack_enabled=not expected_on).batch_index_ack_enabled is (
        not expected_on
    )


def test_non_persistent_tracker_acks_nothing():
    tracker = for_profile("4.1", Scheduler(), lambda cmd: pytest.fail("sent"), persistent=False)
    assert isinstance(tracker, NonPersistentAcknowledgmentGroupingTracker)
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    tracker.flush()
    assert not tracker.is_duplicate(MessageId(1, 1))


def test_configuration_errors_use_pulsar_text():
    with pytest.raises(IllegalArgumentException, match="^acknowledgmentGroupTime needs to be >= 0$"):
        make(group_time_ms=-1)
    with pytest.raises(IllegalArgumentException, match="^acknowledgementsGroupSize needs to be > 0$"):
        make(max_group_size=0)
    _, _, tracker = make()
    with pytest.raises(IllegalStateException, match="^Unknown AckType: bogus$"):
        tracker.add_acknowledgment(MessageId(1, 1), 0, "bogus")
    with pytest.raises(IllegalArgumentException):
        tracker.add_acknowledgment(MessageId(1, 1, -1, 5), 5, IND)
    tracker.add_acknowledgment(MessageId(1, 1), 0, "Cumulative")  # the enum's value is accepted
    assert tracker.last_cumulative_ack == MessageId(1, 1)


def test_events_record_outcomes_and_cost_nothing_when_disabled():
    events = EventLog()
    sched, wire, tracker = make(events=events, consumer_name="c1")
    tracker.add_acknowledgment(MessageId(1, 1, -1, 0), 2, IND)
    tracker.add_acknowledgment(MessageId(1, 1, -1, 1), 2, IND)
    tracker.add_acknowledgment(MessageId(1, 0), 0, CUM)
    tracker.add_acknowledgment(MessageId(0, 9), 0, CUM)
    sched.advance(100)
    assert [e.outcome for e in events.of_kind("ack_queued")] == [
        "bit_cleared",
        "queued",
        "cumulative_queued",
        "cumulative_stale",
    ]
    (flushed,) = events.of_kind("acks_flushed")
    assert (flushed.reason, flushed.individual, flushed.cumulative_ledger, flushed.cumulative_entry) == (
        "timer",
        1,
        1,
        0,
    )
    assert "c1" in flushed.explain()
    assert "1 entries, 0 batch-index acks, cumulative up to 1:0" in flushed.explain()

    individual_log = EventLog()
    sched, wire, tracker = make(events=individual_log, consumer_name="c2")
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    sched.advance(100)
    (individual_only,) = individual_log.of_kind("acks_flushed")
    assert individual_only.cumulative_ledger is None
    assert "1 entries, 0 batch-index acks, no cumulative ack" in individual_only.explain()
    assert "None" not in individual_only.explain()

    class PlainLog(EventLog):  # a log without the append_row fast path records the same events
        append_row = None

    plain = PlainLog()
    sched, wire, tracker = make(events=plain, consumer_name="c1")
    tracker.add_acknowledgment(MessageId(1, 1, -1, 0), 2, IND)
    tracker.add_acknowledgment(MessageId(1, 1, -1, 1), 2, IND)
    tracker.add_acknowledgment(MessageId(1, 0), 0, CUM)
    tracker.add_acknowledgment(MessageId(0, 9), 0, CUM)
    sched.advance(100)
    assert plain.to_records() == events.to_records()

    events = EventLog()
    sched, wire, tracker = make(events=events, log_each_ack=False)
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    sched.advance(100)
    assert [e.kind for e in events] == ["acks_flushed"]

    quiet = EventLog(enabled=False)
    sched, wire, tracker = make(events=quiet)
    tracker.add_acknowledgment(MessageId(1, 1), 0, IND)
    sched.advance(100)
    assert len(quiet) == 0 and len(wire.sent) == 1


# --- properties ---------------------------------------------------------------------------------------


def covered_by(ids, sizes):
    """Messages a set of individual ack ids acknowledges: (entry, index) pairs (index 0 for a non-batch)."""
    out = []
    for ledger, entry, words in ids:
        size = sizes[entry]
        if words is None:
            out.extend((entry, i) for i in range(max(size, 1)))
        else:
            mask = ack_set_mask(words)
            out.extend((entry, i) for i in range(size) if not (mask >> i) & 1)
    return out


workload = st.fixed_dictionaries(
    {
        "sizes": st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 8]), min_size=1, max_size=12),
        "order_seed": st.randoms(use_true_random=False),
        "fraction": st.floats(0.0, 1.0),
        "steps": st.lists(st.sampled_from(["advance", "flush", "toggle", "ack", "ack", "ack"]), max_size=80),
        "group_time_ms": st.sampled_from([0, 10, 100]),
        "max_group_size": st.sampled_from([1, 3, 1000]),
        "batch_index_ack": st.booleans(),
    }
)


@settings(max_examples=80, deadline=None)
@given(workload)
def test_every_acked_message_is_sent_exactly_once_and_nothing_else(w):
    sizes = w["sizes"]
    messages = [(e, i) for e, size in enumerate(sizes) for i in range(max(size, 1))]
    rng = w["order_seed"]
    rng.shuffle(messages)
    to_ack = messages[: int(len(messages) * w["fraction"])]
    sched, wire, tracker = make(
        group_time_ms=w["group_time_ms"],
        max_group_size=w["max_group_size"],
        batch_index_ack_enabled=w["batch_index_ack"],
    )
    acked: set[tuple[int, int]] = set()
    steps = list(w["steps"]) + ["ack"] * len(to_ack)
    for step in steps:
        if step == "ack" and to_ack:
            e, i = to_ack.pop()
            mid = MessageId(1, e, -1, i if sizes[e] > 0 else -1)
            tracker.add_acknowledgment(mid, sizes[e], IND)
            acked.add((e, i))
        elif step == "advance":
            sched.advance(37)
        elif step == "flush":
            tracker.flush()
        elif step == "toggle" and w["group_time_ms"] > 0:  # immediate acks while disconnected are lost
            wire.connected = not wire.connected
            if wire.connected:
                tracker.connection_opened()
        # nothing un-acked is ever sent
        for cmd in wire.commands():
            assert cmd.ack_type is IND
            assert set(covered_by(cmd.message_ids, sizes)) <= acked
    wire.connected = True
    tracker.flush()
    sched.run_until_idle()
    assert sched.pending() == 0
    entry_acks = [e for c in wire.commands() for _, e, words in c.message_ids if words is None]
    complete = {e for e, size in enumerate(sizes) if all((e, i) in acked for i in range(max(size, 1)))}
    assert sorted(entry_acks) == sorted(complete)  # each complete entry exactly once
    index_acks = [(e, words) for c in wire.commands() for _, e, words in c.message_ids if words is not None]
    if not w["batch_index_ack"]:
        assert index_acks == []
    else:
        last = {e: words for e, words in index_acks}
        for e in {e for e, _ in acked} - complete:  # a partial batch: the last batch-index ack has it all
            assert {i for i in range(sizes[e]) if not (ack_set_mask(last[e]) >> i) & 1} == {
                i for (x, i) in acked if x == e
            }


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([0, 1, 3, 4]), min_size=1, max_size=8),
    picks=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3), st.booleans()), max_size=25),
    batch_index_ack=st.booleans(),
)
def test_cumulative_acks_never_cover_more_than_acked_and_end_at_the_highest(sizes, picks, batch_index_ack):
    sched, wire, tracker = make(batch_index_ack_enabled=batch_index_ack)
    highest = None  # (entry, index) of the highest cumulative ack so far
    for e, i, flush in picks:
        e %= len(sizes)
        i = i % sizes[e] if sizes[e] else 0
        tracker.add_acknowledgment(MessageId(1, e, -1, i if sizes[e] else -1), sizes[e], CUM)
        highest = max(highest or (e, i), (e, i))
        if flush:
            tracker.flush()
        for cmd in wire.commands():
            ((_, ce, words),) = cmd.message_ids
            covered = {(x, j) for x in range(ce) for j in range(max(sizes[x], 1))}
            if ce >= 0:
                covered |= set(covered_by([(1, ce, words)], sizes))
            assert all(m <= highest for m in covered)
    tracker.flush()
    if highest is None:
        assert wire.sent == []
        return
    e, i = highest
    last_of_entry = i == max(sizes[e], 1) - 1
    ((_, ce, words),) = wire.commands()[-1].message_ids
    if last_of_entry:
        assert (ce, words) == (e, None)
    elif batch_index_ack:
        assert ce == e and set(covered_by([(1, e, words)], sizes)) == {(e, j) for j in range(i + 1)}
    else:
        assert (ce, words) == (e - 1, None)
    sends = [c.message_ids[0] for c in wire.commands()]
    assert all(a[:2] <= b[:2] and a != b for a, b in zip(sends, sends[1:]))  # forward only, never resent
