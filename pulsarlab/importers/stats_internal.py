"""``pulsar-admin topics stats-internal`` output as typed objects: ledgers, cursors, individual-ack ranges.

Models `PersistentTopicInternalStats` (which extends `ManagedLedgerInternalStats`), its
`ManagedLedgerInternalStats.LedgerInfo` and `ManagedLedgerInternalStats.CursorStats` (`TopicStatsImpl` /
`PersistentTopicInternalStats`),
and ``partitioned-stats-internal`` (`PartitionedTopicInternalStats`: ``metadata`` plus one
`PersistentTopicInternalStats` per partition). A cursor's ``individuallyDeletedMessages`` string is read
into `AckRange` s (docs/guide/cursor.md#individually-deleted-messages, `ranges.py`) and can become an `OpenLongPairRangeSet`.

Reads real broker JSON and the lab's own ``lab.admin.topics.stats_internal(t)`` alike: missing fields
take Pulsar's Java defaults, unknown fields are kept in each object's ``extra``, ``present`` lists the
fields the JSON carried. Simplifies: timestamps stay strings as Pulsar formats them; ledger
``metadata`` (a string in some versions) stays in ``extra``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsarlab.importers import lenient_json
from pulsarlab.importers.fields import Fields
from pulsarlab.importers.lenient_json import JsonSource
from pulsarlab.importers.ranges import AckRange, RangeFormatError, parse_ranges, ranges_to_set
from pulsarlab.managed_ledger.position import Position
from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet


@dataclass(frozen=True)
class LedgerInfo:
    """`ManagedLedgerInternalStats.LedgerInfo`. The open (last) ledger shows 0 entries until it is closed."""

    ledger_id: int
    entries: int = 0
    size: int = 0
    offloaded: bool = False
    under_replicated: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def read(cls, f: Fields) -> "LedgerInfo":
        return cls(
            ledger_id=f.int("ledgerId", -1),
            entries=f.int("entries"),
            size=f.int("size"),
            offloaded=f.bool("offloaded"),
            under_replicated=f.bool("underReplicated"),
            extra=f.extra(),
        )


@dataclass(frozen=True)
class CursorStats:
    """`ManagedLedgerInternalStats.CursorStats`: one subscription's cursor."""

    name: str
    mark_delete_position: Position | None = None
    read_position: Position | None = None
    waiting_read_op: bool = False
    pending_read_ops: int = 0
    messages_consumed_counter: int = 0
    cursor_ledger: int = 0
    cursor_ledger_last_entry: int = 0
    individually_deleted_messages: str | None = None  # the string as printed
    ack_ranges: tuple[AckRange, ...] = ()  # the same, parsed
    last_ledger_switch_timestamp: str | None = None
    state: str | None = None
    active: bool = False
    number_of_entries_since_first_not_acked_message: int = 0
    total_non_contiguous_deleted_messages_range: int = 0
    subscription_have_pending_read: bool = False
    subscription_have_pending_replay_read: bool = False
    properties: dict[str, int] = field(default_factory=dict)
    present: frozenset[str] = field(default=frozenset(), compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def read(cls, name: str, f: Fields) -> "CursorStats":
        idm = f.str("individuallyDeletedMessages")
        ranges: tuple[AckRange, ...] = ()
        if idm is not None:
            try:
                ranges = tuple(parse_ranges(idm))
            except RangeFormatError as e:
                raise f.source.error(str(e), f.at("individuallyDeletedMessages")) from None
        return cls(
            name=name,
            mark_delete_position=f.position("markDeletePosition"),
            read_position=f.position("readPosition"),
            waiting_read_op=f.bool("waitingReadOp"),
            pending_read_ops=f.int("pendingReadOps"),
            messages_consumed_counter=f.int("messagesConsumedCounter"),
            cursor_ledger=f.int("cursorLedger"),
            cursor_ledger_last_entry=f.int("cursorLedgerLastEntry"),
            individually_deleted_messages=idm,
            ack_ranges=ranges,
            last_ledger_switch_timestamp=f.str("lastLedgerSwitchTimestamp"),
            state=f.str("state"),
            active=f.bool("active"),
            number_of_entries_since_first_not_acked_message=f.int("numberOfEntriesSinceFirstNotAckedMessage"),
            total_non_contiguous_deleted_messages_range=f.int("totalNonContiguousDeletedMessagesRange"),
            subscription_have_pending_read=f.bool("subscriptionHavePendingRead"),
            subscription_have_pending_replay_read=f.bool("subscriptionHavePendingReplayRead"),
            properties=f.int_map("properties"),
            present=f.present(),
            extra=f.extra(),
        )

    def range_set(self) -> OpenLongPairRangeSet:
        """The individually deleted messages as the cursor's `OpenLongPairRangeSet`."""
        return ranges_to_set(self.ack_ranges)


@dataclass(frozen=True)
class PersistentTopicInternalStats:
    """`PersistentTopicInternalStats`: the managed ledger of one topic (or partition) and its cursors."""

    entries_added_counter: int = 0
    number_of_entries: int = 0
    total_size: int = 0
    current_ledger_entries: int = 0
    current_ledger_size: int = 0
    last_ledger_created_timestamp: str | None = None
    waiting_cursors_count: int = 0
    pending_add_entries_count: int = 0
    last_confirmed_entry: Position | None = None
    state: str | None = None
    ledgers: tuple[LedgerInfo, ...] = ()
    cursors: dict[str, CursorStats] = field(default_factory=dict)
    schema_ledgers: tuple[LedgerInfo, ...] = ()
    compacted_ledger: LedgerInfo | None = None
    present: frozenset[str] = field(default=frozenset(), compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    source: str = field(default="<dict>", compare=False)

    @classmethod
    def read(cls, f: Fields) -> "PersistentTopicInternalStats":
        cursors = {name: CursorStats.read(name, Fields(v, f.source, steps)) for name, v, steps in f.entries("cursors")}
        compacted = f.obj("compactedLedger")
        return cls(
            entries_added_counter=f.int("entriesAddedCounter"),
            number_of_entries=f.int("numberOfEntries"),
            total_size=f.int("totalSize"),
            current_ledger_entries=f.int("currentLedgerEntries"),
            current_ledger_size=f.int("currentLedgerSize"),
            last_ledger_created_timestamp=f.str("lastLedgerCreatedTimestamp"),
            waiting_cursors_count=f.int("waitingCursorsCount"),
            pending_add_entries_count=f.int("pendingAddEntriesCount"),
            last_confirmed_entry=f.position("lastConfirmedEntry"),
            state=f.str("state"),
            ledgers=_ledgers(f, "ledgers"),
            cursors=cursors,
            schema_ledgers=_ledgers(f, "schemaLedgers"),
            compacted_ledger=None if compacted is None else LedgerInfo.read(compacted),
            present=f.present(),
            extra=f.extra(),
            source=f.source.name,
        )

    def ledger_entries(self) -> dict[int, int]:
        """Ledger id -> entry count; the last ledger counts ``currentLedgerEntries`` (its info says 0 while open)."""
        out = {info.ledger_id: info.entries for info in self.ledgers}
        if self.ledgers:
            last = self.ledgers[-1].ledger_id
            out[last] = max(out[last], self.current_ledger_entries)
        return out


def _ledgers(f: Fields, name: str) -> tuple[LedgerInfo, ...]:
    return tuple(LedgerInfo.read(Fields(v, f.source, steps)) for v, steps in f.items(name))


@dataclass(frozen=True)
class PartitionedTopicInternalStats:
    """``partitioned-stats-internal``: the partitioned topic's metadata and each partition's internal stats."""

    metadata: dict[str, Any]
    partitions: dict[str, PersistentTopicInternalStats]
    source: str = field(default="<dict>", compare=False)


_INTERNAL_MARKERS = ("cursors", "ledgers", "entriesAddedCounter", "lastConfirmedEntry", "numberOfEntries")


def read_stats_internal(
    data: Any, *, source: str | None = None
) -> PersistentTopicInternalStats | PartitionedTopicInternalStats:
    """stats-internal JSON (text, or the parsed dict, e.g. ``lab.admin.topics.stats_internal(t)``) -> typed stats."""
    data, src = lenient_json.read(data, source=source)
    return from_json(data, src)


def load_stats_internal(path: str | Path) -> PersistentTopicInternalStats | PartitionedTopicInternalStats:
    """Read a stats-internal JSON file."""
    data, src = lenient_json.load(path)
    return from_json(data, src)


def from_json(data: Any, src: JsonSource) -> PersistentTopicInternalStats | PartitionedTopicInternalStats:
    """Typed stats from an already parsed JSON value; ``src`` names it in errors (and locates them)."""
    f = Fields(data, src)
    if isinstance(data.get("partitions"), dict) and "cursors" not in data:
        metadata = f.obj("metadata")
        parts = {
            name: PersistentTopicInternalStats.read(Fields(v, src, steps)) for name, v, steps in f.entries("partitions")
        }
        return PartitionedTopicInternalStats(
            metadata={} if metadata is None else metadata.extra(), partitions=parts, source=src.name
        )
    if not any(k in data for k in _INTERNAL_MARKERS):
        hint = (
            " (this looks like `topics stats` output: use read_stats, or load/read, which tell the two apart)"
            if "subscriptions" in data or "msgRateIn" in data
            else ""
        )
        raise src.error('expected stats-internal output with "ledgers" and "cursors"' + hint)
    return PersistentTopicInternalStats.read(f)
