"""Managed ledger and managed cursor: reference §7.2 / §11 facts, Pulsar's ManagedCursorTest sequences, errors,
restart, events, and property-based checks against a naive model."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.clock import Scheduler
from pulsarlab.date_format import format_timestamp
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.event_catalogue.cursor import MARK_DELETE_MOVED
from pulsarlab.events import EventLog
from pulsarlab.lab import LAB_RETENTION
from pulsarlab.managed_ledger.cursor import (
    ManagedCursor,
    ack_set_bits,
    ack_set_words,
)
from pulsarlab.managed_ledger.exceptions import (
    CursorAlreadyClosedException,
    CursorNotFoundException,
    LedgerNotExistException,
    ManagedLedgerException,
)
from pulsarlab.managed_ledger.ledger import FIRST_LEDGER_ID, LedgerIdAllocator, ManagedLedger
from pulsarlab.managed_ledger.position import Position
from pulsarlab.messages import EntryData, MessageMetadata, SingleMessageMetadata
from pulsarlab.profiles import get_profile

MLE = "org.apache.bookkeeper.mledger.ManagedLedgerException"


def make_entry(i: int, batch: int | None = None) -> EntryData:
    if batch is None:
        return EntryData(MessageMetadata("p", i, 0), [(None, f"m{i}".encode())])
    meta = MessageMetadata("p", i, 0, num_messages_in_batch=batch)
    return EntryData(meta, [(SingleMessageMetadata(payload_size=2), b"ab") for _ in range(batch)])


def make_ledger(
    version: str = "4.0",
    events: EventLog | None = None,
    allocator: LedgerIdAllocator | None = None,
    scheduler: Scheduler | None = None,
    name: str = "orders",
    **overrides,
) -> ManagedLedger:
    # these tests follow ledgers and cursors, not trimming (tests/managed_ledger/test_retention.py): keep every
    # ledger, as a Lab does
    config = get_profile(version).broker_config(LAB_RETENTION)
    config.update(overrides)
    return ManagedLedger(name, scheduler or Scheduler(), config, allocator or LedgerIdAllocator(), events)


def add(ml: ManagedLedger, n: int, batch: int | None = None) -> list[Position]:
    return [ml.add_entry(make_entry(i, batch)) for i in range(n)]


def acked_indexes(batch_size: int, indexes) -> list[int]:
    """An ack set as the client sends it: all ``batch_size`` bits set, the acked indexes cleared."""
    bits = (1 << batch_size) - 1
    for i in indexes:
        bits &= ~(1 << i)
    return ack_set_words(bits)


# ------------------------------------------------------------------------------------------ Position


def test_position_prints_parses_and_orders_like_positionimpl():
    p = Position(3, 4)
    assert str(p) == "3:4"
    assert Position.parse("3:4") == p
    assert Position.parse(str(Position(4, -1))) == Position(4, -1)
    assert Position(3, 9) < Position(4, -1) < Position(4, 0)
    assert Position(3, -1).next() == Position(3, 0) and Position(3, 7).next() == Position(3, 8)
    assert len({Position(1, 2), Position(1, 2)}) == 1
    for bad in ("3", "3:4:5", "a:b", ""):
        with pytest.raises(ValueError, match="ledgerId:entryId"):
            Position.parse(bad)


# ------------------------------------------------------------------------------------------ ledger


def test_ledger_rolls_over_after_max_entries_and_ids_are_global():
    allocator = LedgerIdAllocator()
    a = make_ledger(allocator=allocator, name="a", managedLedgerMaxEntriesPerLedger=3)
    b = make_ledger(allocator=allocator, name="b", managedLedgerMaxEntriesPerLedger=3)
    assert [i.ledger_id for i in a.ledgers] == [FIRST_LEDGER_ID]
    assert [i.ledger_id for i in b.ledgers] == [FIRST_LEDGER_ID + 1]
    first = FIRST_LEDGER_ID
    assert a.last_confirmed_entry == Position(first, -1)  # "L:-1" on an empty ledger
    ps = add(a, 3)
    assert ps == [Position(first, e) for e in range(3)]
    # the full ledger closed and a new empty one (the next global id) opened; LCE stays on the closed ledger
    assert [(i.ledger_id, i.entries) for i in a.ledgers] == [(first, 3), (first + 2, 0)]
    assert a.last_confirmed_entry == Position(first, 2)
    # Java quirk: while the closed ledger holds the last confirmed entry, its E+1 is a valid position
    assert a.next_valid_position(Position(first, 2)) == Position(first, 3)
    p3 = a.add_entry(make_entry(3))
    assert p3 == Position(first + 2, 0)
    assert a.next_valid_position(Position(first, 2)) == Position(first + 2, 0)
    assert a.previous_position(p3) == Position(first, 2)
    assert a.previous_position(Position(first, 0)) == Position(first, -1)
    assert a.number_of_entries(Position(first, -1), p3) == 4
    assert a.number_of_entries() == 4
    assert a.read_entry(Position(first, 1)).messages[0][1] == b"m1"


def test_stats_internal_shape_and_open_ledger_shows_zero():
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=3)
    ml.open_cursor("sub")
    add(ml, 4)
    stats = json.loads(json.dumps(ml.stats_internal()))
    assert list(stats) == [
        "entriesAddedCounter",
        "numberOfEntries",
        "totalSize",
        "currentLedgerEntries",
        "currentLedgerSize",
        "lastLedgerCreatedTimestamp",
        "waitingCursorsCount",
        "pendingAddEntriesCount",
        "lastConfirmedEntry",
        "state",
        "ledgers",
        "cursors",
        "schemaLedgers",
        "compactedLedger",
    ]
    first = FIRST_LEDGER_ID
    assert stats["entriesAddedCounter"] == 4 and stats["numberOfEntries"] == 4
    assert stats["currentLedgerEntries"] == 1
    assert stats["lastConfirmedEntry"] == f"{first + 1}:0"
    assert [(x["ledgerId"], x["entries"]) for x in stats["ledgers"]] == [(first, 3), (first + 1, 0)]
    cursor = stats["cursors"]["sub"]
    assert list(cursor) == [
        "markDeletePosition",
        "readPosition",
        "waitingReadOp",
        "pendingReadOps",
        "messagesConsumedCounter",
        "cursorLedger",
        "cursorLedgerLastEntry",
        "individuallyDeletedMessages",
        "lastLedgerSwitchTimestamp",
        "state",
        "active",
        "numberOfEntriesSinceFirstNotAckedMessage",
        "totalNonContiguousDeletedMessagesRange",
        "subscriptionHavePendingRead",
        "subscriptionHavePendingReplayRead",
        "properties",
    ]


def test_format_timestamp_is_java_iso_offset_date_time_in_utc():
    assert format_timestamp(0) == "1970-01-01T00:00:00Z"
    assert format_timestamp(1767225600000) == "2026-01-01T00:00:00Z"
    assert format_timestamp(1767225600500) == "2026-01-01T00:00:00.5Z"
    assert format_timestamp(1767225600123) == "2026-01-01T00:00:00.123Z"


def test_fresh_cursor_mark_delete_is_last_entry_and_read_is_next_valid():
    ml = make_ledger()
    c = ml.open_cursor("sub")
    first = FIRST_LEDGER_ID
    s = c.stats_internal()
    assert s["markDeletePosition"] == f"{first}:-1" and s["readPosition"] == f"{first}:0"
    assert s["individuallyDeletedMessages"] == "[]"
    add(ml, 5)
    late = ml.open_cursor("late")  # Latest: the last confirmed entry is already consumed
    assert late.mark_delete_position == Position(first, 4) and late.read_position == Position(first, 5)
    assert late.number_of_entries_in_backlog() == 0 and late.read_entries(10) == []
    early = ml.open_cursor("early", "Earliest")
    assert early.mark_delete_position == Position(first, -1)
    assert [p for p, _ in early.read_entries(10)] == [Position(first, e) for e in range(5)]
    assert early.number_of_entries_in_backlog(precise=False) == early.number_of_entries_in_backlog() == 5
    assert ml.open_cursor("sub") is c
    with pytest.raises(IllegalArgumentException, match="Latest"):
        ml.open_cursor("bad", "Middle")


# ------------------------------------------------------------------------------------------ ManagedCursorTest


def test_single_delete_mark_delete_jumps_the_ledger_boundary():
    """Reference §7.2 testSingleDelete (maxEntriesPerLedger 3)."""
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=3)
    c = ml.open_cursor("c1")
    p0 = c.mark_delete_position
    p1, p2, p3, p4, p5, p6 = add(ml, 6)
    assert p3.ledger_id == p1.ledger_id != p4.ledger_id == p6.ledger_id
    c.async_delete([(p4, None)])
    assert c.mark_delete_position == p0
    c.async_delete([(p1, None)])
    assert c.mark_delete_position == p1
    c.async_delete([(p3, None)])
    c.async_delete([(p3, None)])
    assert c.mark_delete_position == p1
    c.async_delete([(p2, None)])
    assert c.mark_delete_position == p4
    c.async_delete([(p5, None)])
    assert c.mark_delete_position == p5


def test_mark_delete_skipping_message():
    """ManagedCursorTest.markDeleteSkippingMessage."""
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=10)
    cursor = ml.open_cursor("c1")
    p1, p2, _, p4 = add(ml, 4)
    assert cursor.number_of_entries() == 4
    cursor.mark_delete(p1)
    assert cursor.has_more_entries()
    assert cursor.number_of_entries() == 3
    assert cursor.read_position == p2
    entries = cursor.read_entries(1)
    assert [p for p, _ in entries] == [p2]
    cursor.mark_delete(p4)
    assert not cursor.has_more_entries()
    assert cursor.number_of_entries() == 0
    assert cursor.read_position == Position(p4.ledger_id, p4.entry_id + 1)


def test_rewind_counts_across_ledgers():
    """ManagedCursorTest.rewind (maxEntriesPerLedger 2)."""
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=2)
    c1 = ml.open_cursor("c1")
    p1, p2, p3, p4 = add(ml, 4)
    assert c1.number_of_entries() == 4
    assert c1.number_of_entries_in_backlog(False) == 4
    c1.mark_delete(p1)
    assert c1.number_of_entries() == 3
    assert c1.number_of_entries_in_backlog(False) == 3
    assert len(c1.read_entries(10)) == 3
    assert c1.number_of_entries() == 0
    assert c1.number_of_entries_in_backlog(False) == 3
    c1.rewind()
    assert c1.number_of_entries() == 3
    c1.mark_delete(p2)
    assert c1.number_of_entries() == 2
    assert c1.number_of_entries_in_backlog(False) == 2
    assert len(c1.read_entries(10)) == 2
    assert c1.number_of_entries() == 0
    c1.rewind()
    assert c1.number_of_entries() == 2
    c1.mark_delete(p4)
    assert c1.number_of_entries() == 0
    assert c1.number_of_entries_in_backlog(False) == 0
    c1.rewind()
    assert c1.number_of_entries() == 0
    ml.add_entry(make_entry(5))
    assert c1.number_of_entries() == 1
    ml.add_entry(make_entry(6))
    assert c1.number_of_entries() == 2


def test_multi_position_delete():
    """ManagedCursorListAckTest.testMultiPositionDelete (maxEntriesPerLedger 2)."""
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=2)
    c1 = ml.open_cursor("c1")
    p0 = c1.mark_delete_position
    p1, p2, p3, p4, p5, p6, p7 = add(ml, 7)
    assert c1.number_of_entries() == 7
    assert c1.number_of_entries_in_backlog(False) == 7
    c1.async_delete([(p, None) for p in (p2, p3, p5, p7)])
    assert c1.number_of_entries() == 3
    assert c1.number_of_entries_in_backlog(False) == 3
    assert c1.mark_delete_position == p0
    c1.async_delete([(p1, None)])
    assert c1.number_of_entries() == 2
    assert c1.number_of_entries_in_backlog(False) == 2
    assert c1.mark_delete_position == p3
    c1.async_delete([(p, None) for p in (p4, p6, p7)])
    assert c1.number_of_entries() == 0
    assert c1.number_of_entries_in_backlog(False) == 0
    assert c1.mark_delete_position == p7


def test_unordered_mark_delete_fails_and_keeps_position():
    """ManagedCursorTest.unorderedMarkDelete: a mark-delete behind the current one fails."""
    ml = make_ledger()
    c1 = ml.open_cursor("c1")
    p1, p2 = add(ml, 2)
    c1.mark_delete(p2)
    with pytest.raises(ManagedLedgerException) as info:
        c1.mark_delete(p1)
    assert info.value.java_class == MLE
    assert str(info.value) == (
        "org.apache.bookkeeper.mledger.impl.ManagedCursorImpl$MarkDeletingMarkedPosition: Mark deleting an already "
        f"mark-deleted position. Current mark-delete: {p2} -- attempted mark delete: {p1}"
    )
    assert c1.mark_delete_position == p2


# ------------------------------------------------------------------------------------------ batch index acks


def test_batch_index_delete_when_enabled():
    """Reference §7.2 testBatchIndexDelete: ack sets 2-4, 3-8, 0, then 1 and 9 delete the whole batch."""
    ml = make_ledger(acknowledgmentAtBatchIndexLevelEnabled=True)
    c = ml.open_cursor("c1")
    positions = add(ml, 2, batch=10)
    p = positions[0]
    c.async_delete([(p, acked_indexes(10, range(2, 5)))])
    assert c.batch_deleted_indexes(p) == acked_indexes(10, range(2, 5))
    c.async_delete([(p, acked_indexes(10, range(3, 9)))])
    assert c.batch_deleted_indexes(p) == acked_indexes(10, range(2, 9))
    assert not c.is_deleted(p)
    c.async_delete([(p, acked_indexes(10, [0]))])
    assert c.mark_delete_position == Position(p.ledger_id, -1)
    c.async_delete([(p, acked_indexes(10, [1, 9]))])
    assert c.is_deleted(p)
    assert c.batch_deleted_indexes(p) is None
    assert c.mark_delete_position == positions[0]


def test_batch_index_ack_set_ignored_when_disabled():
    ml = make_ledger(acknowledgmentAtBatchIndexLevelEnabled=False)
    c = ml.open_cursor("c1")
    p, _ = add(ml, 2, batch=10)
    for indexes in (range(2, 5), range(3, 9), [0], [1, 9]):
        c.async_delete([(p, acked_indexes(10, indexes))])
    assert not c.is_deleted(p)
    assert c.batch_deleted_indexes(p) is None
    assert c.mark_delete_position == Position(p.ledger_id, -1)
    c.async_delete([(p, None)])  # the entry-level ack the client sends once every message is acked
    assert c.mark_delete_position == p


def test_batch_index_level_defaults_per_profile():
    assert not make_ledger("4.0").open_cursor("s").batch_index_level
    assert make_ledger("4.1").open_cursor("s").batch_index_level


def test_ack_set_words_round_trip_java_longs():
    # reference §7.1: batch size 10 with index 3 acked -> [1015]; cumulative up to index 3 -> [1008]
    assert acked_indexes(10, [3]) == [1015]
    assert acked_indexes(10, range(4)) == [1008]
    assert ack_set_words(1 << 63) == [-(2**63)]
    assert ack_set_bits([-(2**63)]) == 1 << 63
    assert ack_set_bits(ack_set_words((1 << 130) | 5)) == (1 << 130) | 5


def test_cumulative_ack_with_ack_set_marks_previous_and_keeps_larger_next_set_bit():
    ml = make_ledger(acknowledgmentAtBatchIndexLevelEnabled=True, managedLedgerMaxEntriesPerLedger=3)
    c = ml.open_cursor("c1")
    p = add(ml, 5, batch=10)
    up_to_3 = acked_indexes(10, range(4))  # nextSetBit 4
    c.mark_delete(p[1], up_to_3)
    assert c.mark_delete_position == p[0]  # previousPosition
    assert c.batch_deleted_indexes(p[1]) == up_to_3
    c.mark_delete(p[1], acked_indexes(10, range(2)))  # nextSetBit 2 < 4: the stored set stays
    assert c.batch_deleted_indexes(p[1]) == up_to_3
    up_to_6 = acked_indexes(10, range(7))  # nextSetBit 7 > 4: replaces
    c.mark_delete(p[1], up_to_6)
    assert c.batch_deleted_indexes(p[1]) == up_to_6
    assert c.mark_delete_position == p[0]
    # the first entry of the next ledger: the previous position is the last entry of the closed ledger
    c.mark_delete(p[3], acked_indexes(10, [0]))
    assert c.mark_delete_position == p[2]
    assert c.batch_deleted_indexes(p[1]) is None  # dropped once at or before the mark-delete position
    assert c.batch_deleted_indexes(p[3]) == acked_indexes(10, [0])
    c.mark_delete(p[3])
    assert c.mark_delete_position == p[3] and c.batch_deleted_indexes(p[3]) is None


def test_cumulative_ack_with_ack_set_when_batch_level_disabled():
    ml = make_ledger(acknowledgmentAtBatchIndexLevelEnabled=False)
    c = ml.open_cursor("c1")
    p = add(ml, 3, batch=10)
    c.mark_delete(p[2], acked_indexes(10, range(4)))
    assert c.mark_delete_position == p[1]
    assert c.batch_deleted_indexes(p[2]) is None


# ------------------------------------------------------------------------------------------ strings


def test_individually_deleted_messages_string_never_spans_ledgers():
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=10)
    c = ml.open_cursor("c1")
    p = add(ml, 14)
    first = FIRST_LEDGER_ID
    c.async_delete([(x, None) for x in p[0:5]])  # mark-delete to L:4
    c.async_delete([(x, None) for x in p[6:13]])  # L:6..L:9 and the next ledger's 0..2
    s = c.stats_internal()
    assert s["markDeletePosition"] == f"{first}:4"
    assert s["individuallyDeletedMessages"] == f"[({first}:5..{first}:9],({first + 1}:-1..{first + 1}:2]]"
    assert s["totalNonContiguousDeletedMessagesRange"] == 2
    c.async_delete([(p[5], None)])  # the hole fills: the mark-delete jumps into the next ledger
    assert c.mark_delete_position == Position(first + 1, 2)
    assert c.stats_internal()["individuallyDeletedMessages"] == "[]"


def test_guava_fallback_separator():
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=10, managedLedgerUnackedRangesOpenCacheSetEnabled=False)
    c = ml.open_cursor("c1")
    p = add(ml, 14)
    first = FIRST_LEDGER_ID
    c.async_delete([(x, None) for x in p[0:5] + p[6:13]])
    assert c.individually_deleted_messages_string() == f"[({first}:5..{first}:9], ({first + 1}:-1..{first + 1}:2]]"


# ------------------------------------------------------------------------------------------ errors


def test_async_delete_beyond_last_confirmed_entry_fails_after_applying_earlier_positions():
    ml = make_ledger()
    c = ml.open_cursor("c1")
    p = add(ml, 3)
    beyond = Position(p[2].ledger_id, 3)
    with pytest.raises(ManagedLedgerException) as info:
        c.async_delete([(p[1], None), (beyond, None)])
    assert str(info.value) == "Invalid mark deleted position"
    assert info.value.java_class == MLE and info.value.via == "future"
    assert c.is_deleted(p[1])  # applied before the failure
    assert c.mark_delete_position == Position(p[0].ledger_id, -1)  # but no mark-delete advance
    with pytest.raises(ManagedLedgerException, match="^Invalid mark deleted position$"):
        c.mark_delete(beyond)


def test_cursor_not_found_and_closed_cursor():
    ml = make_ledger()
    c1 = ml.open_cursor("c1")
    (p,) = add(ml, 1)
    with pytest.raises(CursorNotFoundException, match="^ManagedCursor not found: nope$"):
        ml.delete_cursor("nope")
    ml.delete_cursor("c1")
    for call in (lambda: c1.read_entries(10), lambda: c1.mark_delete(p), lambda: c1.async_delete([(p, None)])):
        with pytest.raises(CursorAlreadyClosedException, match="^Cursor was already closed$"):
            call()
    again = ml.open_cursor("c1")
    assert again is not c1 and again.number_of_entries() == 0


def test_read_errors():
    ml = make_ledger()
    c = ml.open_cursor("c1")
    add(ml, 1)
    with pytest.raises(
        LedgerNotExistException,
        match="^Message not found, the ledgerId does not belong to this topic or has been deleted$",
    ):
        ml.read_entry(Position(999, 0))
    with pytest.raises(IllegalArgumentException):
        c.read_entries(0)


# ------------------------------------------------------------------------------------------ reading


def test_reads_skip_deleted_entries_and_replay_skips_acked():
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=3)
    c = ml.open_cursor("c1")
    p = add(ml, 8)
    c.async_delete([(p[i], None) for i in (1, 2, 3, 6)])
    got = [x for x, _ in c.read_entries(2)]
    assert got == [p[0], p[4]]
    assert [x for x, _ in c.read_entries(10)] == [p[5], p[7]]
    assert not c.has_more_entries()
    assert [x for x, _ in c.replay_entries([p[0], p[1], p[5]])] == [p[0], p[5]]
    c.seek(p[4])
    assert c.read_position == p[4]
    c.seek(Position(p[0].ledger_id, -1))  # before the mark-delete: clamped to the next valid position
    assert c.read_position == ml.next_valid_position(c.mark_delete_position)
    c.rewind()
    assert [x for x, _ in c.read_entries(10)] == [p[0], p[4], p[5], p[7]]


def test_replay_of_the_read_position_moves_it_on():
    ml = make_ledger()
    c = ml.open_cursor("c1")
    p = add(ml, 3)
    c.replay_entries([p[0]])
    assert c.read_position == p[1]


# ------------------------------------------------------------------------------------------ restart


def test_restart_keeps_persisted_state_and_limits_ranges():
    ml = make_ledger(
        managedLedgerMaxEntriesPerLedger=100,
        acknowledgmentAtBatchIndexLevelEnabled=True,
        managedLedgerMaxUnackedRangesToPersist=2,
    )
    c = ml.open_cursor("c1")
    p = add(ml, 12, batch=4)
    c.mark_delete(p[0], properties={"k": 7})
    c.async_delete([(p[i], None) for i in (2, 4, 6, 8, 10)])  # five separate ranges
    c.async_delete([(p[1], acked_indexes(4, [0]))])
    c.read_entries(100)
    old_ledger = ml.current_ledger_id
    ml.restart()
    assert ml.current_ledger_id > old_ledger
    assert ml.entries_added_counter == 0
    assert c.mark_delete_position == p[0] and c.properties == {"k": 7}
    assert c.read_position == p[1]
    # Java persists ranges while the list holds <= max: max + 1 of them survive
    assert [x for x in (2, 4, 6, 8, 10) if c.is_deleted(p[x])] == [2, 4, 6]
    assert c.batch_deleted_indexes(p[1]) == acked_indexes(4, [0])
    assert c.number_of_entries_in_backlog(precise=False) == c.number_of_entries_in_backlog()
    q = ml.add_entry(make_entry(99))
    assert q.ledger_id == ml.current_ledger_id and q.entry_id == 0


def test_restart_of_an_empty_topic_moves_the_cursor_to_the_new_ledger():
    ml = make_ledger()
    c = ml.open_cursor("c1")
    old = ml.current_ledger_id
    ml.restart()
    assert [i.ledger_id for i in ml.ledgers] == [ml.current_ledger_id] != [old]
    assert c.mark_delete_position == Position(ml.current_ledger_id, -1)
    assert c.read_position == Position(ml.current_ledger_id, 0)


# ------------------------------------------------------------------------------------------ events


def test_events_entry_written_rolled_and_mark_delete_moved():
    log = EventLog()
    ml = make_ledger(events=log, managedLedgerMaxEntriesPerLedger=2)
    c = ml.open_cursor("sub")
    p = add(ml, 3)
    c.async_delete([(p[1], None)])
    c.async_delete([(p[0], None)])
    c.mark_delete(p[2])
    kinds = [e.kind for e in log]
    assert kinds == [
        "entry_written",
        "entry_written",
        "ledger_rolled",
        "entry_written",
        "individually_deleted",
        "mark_delete_moved",
        "mark_delete_moved",
    ]
    rolled = log[2]
    assert (rolled.closed, rolled.entries, rolled.opened) == (p[0].ledger_id, 2, p[2].ledger_id)
    moved = log.of_kind(MARK_DELETE_MOVED.name)
    assert [(m.to_ledger, m.to_entry) for m in moved] == [
        (p[1].ledger_id, p[1].entry_id),
        (p[2].ledger_id, p[2].entry_id),
    ]
    assert moved[0].cursor == "orders/sub"
    disabled = EventLog(enabled=False)
    ml2 = make_ledger(events=disabled)
    c2 = ml2.open_cursor("sub")
    c2.async_delete([(x, None) for x in add(ml2, 3)])
    assert len(disabled) == 0 and c2.mark_delete_position.entry_id == 2


# ------------------------------------------------------------------------------------------ properties

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 4), st.sampled_from([None, None, 3, 5])),
        st.tuples(st.just("ack"), st.lists(st.integers(0, 10_000), min_size=1, max_size=4), st.integers(0, 2**31)),
        st.tuples(st.just("cumulative"), st.integers(0, 10_000), st.integers(0, 2**31)),
        st.tuples(st.just("read"), st.integers(1, 6), st.booleans()),
    ),
    max_size=40,
)


class NaiveCursor:
    """A set-based model of one cursor: acked entries, batch bits, and the maximal acked prefix."""

    def __init__(self, batch_level: bool) -> None:
        self.batch_level = batch_level
        self.order: list[tuple[int, int]] = []  # every entry, in position order
        self.sizes: dict[tuple[int, int], int | None] = {}
        self.acked: set[tuple[int, int]] = set()
        self.bits: dict[tuple[int, int], int] = {}
        self.md: tuple[int, int] | None = None

    def previous(self, pos):
        i = self.order.index(pos)
        return self.order[i - 1] if i else (pos[0], -1)

    def advance(self):
        for pos in self.order:
            if pos <= self.md:
                self.acked.add(pos)
            elif pos in self.acked:
                self.md = pos
            else:
                break
        self.bits = {k: v for k, v in self.bits.items() if k > self.md}

    def ack(self, pos, bits):
        if pos <= self.md or pos in self.acked:
            self.bits.pop(pos, None)
            return
        if bits is None:
            self.bits.pop(pos, None)
            self.acked.add(pos)
        elif self.batch_level:
            kept = self.bits.get(pos, bits) & bits
            if kept:
                self.bits[pos] = kept
                return
            self.bits.pop(pos, None)
            self.acked.add(pos)
        else:
            return

    def unacked_after_md(self):
        return [p for p in self.order if p > self.md and p not in self.acked]


def _ack_set_for(rng: int, size: int | None):
    """None (entry-level) or a client ack set for some subset of a batch's indexes."""
    if size is None or rng % 3 == 0:
        return None
    acked = [i for i in range(size) if (rng >> i) & 1]
    return acked_indexes(size, acked)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS, max_entries=st.integers(1, 4), batch_level=st.booleans())
def test_cursor_matches_naive_model(ops, max_entries, batch_level):
    ml = make_ledger(managedLedgerMaxEntriesPerLedger=max_entries, acknowledgmentAtBatchIndexLevelEnabled=batch_level)
    c: ManagedCursor = ml.open_cursor("sub")
    naive = NaiveCursor(batch_level)
    naive.md = (c.mark_delete_position.ledger_id, c.mark_delete_position.entry_id)
    previous_md = c.mark_delete_position
    for op in ops:
        kind = op[0]
        if kind == "add":
            for i in range(op[1]):
                pos = ml.add_entry(make_entry(i, op[2]))
                naive.order.append((pos.ledger_id, pos.entry_id))
                naive.sizes[naive.order[-1]] = op[2]
        elif kind == "ack" and naive.order:
            batch = []
            for k in op[1]:
                key = naive.order[k % len(naive.order)]
                bits = _ack_set_for(op[2] >> (k % 7), naive.sizes[key])
                batch.append((Position(*key), bits))
                naive.ack(key, None if bits is None else ack_set_bits(bits))
            c.async_delete(batch)
            naive.advance()
        elif kind == "cumulative" and naive.order:
            key = naive.order[op[1] % len(naive.order)]
            bits = _ack_set_for(op[2], naive.sizes[key])
            target = key
            if bits is not None:
                target = naive.previous(key)
                if batch_level:
                    given_bits = ack_set_bits(bits)
                    kept = naive.bits.get(key)
                    if kept is None or (given_bits & -given_bits).bit_length() > (kept & -kept).bit_length():
                        naive.bits[key] = given_bits
            if batch_level:
                naive.bits = {k: v for k, v in naive.bits.items() if k >= target}
            if target < naive.md:
                with pytest.raises(ManagedLedgerException, match="MarkDeletingMarkedPosition"):
                    c.mark_delete(Position(*key), bits)
            else:
                c.mark_delete(Position(*key), bits)
                naive.md = target
                naive.advance()
        elif kind == "read":
            if op[2]:
                c.rewind()
            for pos, _ in c.read_entries(op[1]):
                assert not c.is_deleted(pos)
                assert (pos.ledger_id, pos.entry_id) in naive.unacked_after_md()

        md = c.mark_delete_position
        assert md >= previous_md, "the mark-delete position moved back"
        previous_md = md
        assert (md.ledger_id, md.entry_id) == naive.md
        unacked = naive.unacked_after_md()
        if unacked:  # the mark-delete position sits right before the first unacked entry
            assert ml.next_valid_position(md) == Position(*unacked[0])
        for key in naive.order:
            assert c.is_deleted(Position(*key)) == (key <= naive.md or key in naive.acked), key
            if batch_level and key > naive.md and key not in naive.acked:
                expected = naive.bits.get(key)
                stored = c.batch_deleted_indexes(Position(*key))
                assert stored == (None if expected is None else ack_set_words(expected))
        # the range set holds exactly the acked entries after the mark-delete position, per ledger runs
        runs: list[str] = []
        for key in naive.order:
            if key > naive.md and key in naive.acked:
                if runs and runs[-1][0] == key[0] and runs[-1][2] == key[1] - 1:
                    runs[-1] = (key[0], runs[-1][1], key[1])
                else:
                    runs.append((key[0], key[1], key[1]))
        assert (
            c.individually_deleted_messages_string()
            == "[" + ",".join(f"({lid}:{a - 1}..{lid}:{b}]" for lid, a, b in runs) + "]"
        )
        assert c.number_of_entries_in_backlog() == len(unacked)
        assert c.number_of_entries_in_backlog(precise=False) == len(unacked)

    c.rewind()
    everything = [(p.ledger_id, p.entry_id) for p, _ in c.read_entries(10_000)]
    assert everything == naive.unacked_after_md()


def test_failed_async_delete_keeps_in_order_acks_in_the_range_set():
    ml = make_ledger()
    c = ml.open_cursor("c1")
    p = add(ml, 3)
    beyond = Position(p[2].ledger_id, 3)
    with pytest.raises(ManagedLedgerException, match="^Invalid mark deleted position$"):
        c.async_delete([(p[0], None), (p[1], None), (beyond, None)])
    lid = p[0].ledger_id
    assert c.mark_delete_position == Position(lid, -1)
    assert c.individually_deleted_messages_string() == f"[({lid}:-1..{lid}:1]]"
    assert c.number_of_entries_in_backlog(precise=False) == c.number_of_entries_in_backlog() == 1
    c.async_delete([(p[2], None)])
    assert c.mark_delete_position == p[2]
