"""``pulsar-admin topics stats`` output as typed objects: subscriptions, consumers, Key_Shared hash state.

Models `TopicStatsImpl` (and `PartitionedTopicStatsImpl`'s ``metadata`` / ``partitions``),
`SubscriptionStatsImpl`, `ConsumerStatsImpl` and 4.x `DrainingHash` (`TopicStatsImpl` /
`PersistentTopicInternalStats`). Field names per line:

* 3.x and the 4.x classic Key_Shared dispatcher: consumer ``keyHashRanges`` as ``Range.toString``
  strings ``"[0, 95615212]"``, ``readPositionWhenJoining``, subscription
  ``consumersAfterMarkDeletePosition`` (consumer name -> join position),
  docs/guide/key-shared-ordering.md#recently-joined-consumers.
* PIP-282 brokers (3.3, as Pulsar's docs for it show): ``lastSentPositionWhenJoining`` on consumers,
  ``lastSentPosition`` and ``individuallySentPositions`` on subscriptions.
* 4.x (PIP-379): ``keyHashRangeArrays`` ``[[1, 6668], ...]``, ``drainingHashes`` with ``hash``,
  ``unackMsgs``, ``blockedAttempts``, and the ``drainingHashes*`` counters,
  docs/guide/key-shared-ordering.md#draining-hashes.

Reads real broker JSON and the lab's own ``lab.admin.topics.stats(t)`` alike: missing fields take
Pulsar's Java defaults, unknown fields (publishers, rates the lab does not use, fields of newer
brokers) are kept in ``extra``, ``present`` lists the fields the JSON carried.
`SubscriptionStats.key_shared_snapshot` turns the consumers' ranges into a selector snapshot, so the
hash-range view draws a real cluster's assignment. Simplifies: publishers, replication and compaction
stay raw in the topic's ``extra``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsarlab.importers import lenient_json
from pulsarlab.importers.fields import Fields, describe, parse_position
from pulsarlab.importers.lenient_json import JsonSource
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.subscription import ConsumerType, HashRange, KeySharedMode

_RANGE_TEXT = re.compile(r"\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*")


@dataclass(frozen=True, slots=True)
class DrainingHash:
    """4.x `DrainingHash`: a hash whose new owner waits until this consumer's unacked messages of it are acked."""

    hash: int
    unack_msgs: int
    blocked_attempts: int


@dataclass(frozen=True)
class ConsumerStats:
    """`ConsumerStatsImpl`: one connected consumer of a subscription."""

    consumer_name: str | None = None
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    bytes_out_counter: int = 0
    msg_out_counter: int = 0
    msg_rate_redeliver: float = 0.0
    message_ack_rate: float = 0.0
    chunked_message_rate: float = 0.0
    available_permits: int = 0
    unacked_messages: int = 0
    avg_messages_per_entry: int = 0
    blocked_consumer_on_unacked_msgs: bool = False
    read_position_when_joining: Position | None = None
    last_sent_position_when_joining: Position | None = None  # PIP-282 (3.3)
    key_hash_ranges: tuple[HashRange, ...] | None = None  # 3.x / classic: strings
    key_hash_range_arrays: tuple[HashRange, ...] | None = None  # 4.x: [start, end] pairs
    draining_hashes_count: int = 0
    draining_hashes_cleared_total: int = 0
    draining_hashes_unacked_messages: int = 0
    draining_hashes: tuple[DrainingHash, ...] = ()
    address: str | None = None
    connected_since: str | None = None
    client_version: str | None = None
    app_id: str | None = None
    last_acked_timestamp: int = 0
    last_consumed_timestamp: int = 0
    last_consumed_flow_timestamp: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    present: frozenset[str] = field(default=frozenset(), compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def read(cls, f: Fields) -> "ConsumerStats":
        return cls(
            consumer_name=f.str("consumerName"),
            msg_rate_out=f.float("msgRateOut"),
            msg_throughput_out=f.float("msgThroughputOut"),
            bytes_out_counter=f.int("bytesOutCounter"),
            msg_out_counter=f.int("msgOutCounter"),
            msg_rate_redeliver=f.float("msgRateRedeliver"),
            message_ack_rate=f.float("messageAckRate"),
            chunked_message_rate=f.float("chunkedMessageRate"),
            available_permits=f.int("availablePermits"),
            unacked_messages=f.int("unackedMessages"),
            avg_messages_per_entry=f.int("avgMessagesPerEntry"),
            blocked_consumer_on_unacked_msgs=f.bool("blockedConsumerOnUnackedMsgs"),
            read_position_when_joining=f.position("readPositionWhenJoining"),
            last_sent_position_when_joining=f.position("lastSentPositionWhenJoining"),
            key_hash_ranges=_range_strings(f, "keyHashRanges"),
            key_hash_range_arrays=_range_arrays(f, "keyHashRangeArrays"),
            draining_hashes_count=f.int("drainingHashesCount"),
            draining_hashes_cleared_total=f.int("drainingHashesClearedTotal"),
            draining_hashes_unacked_messages=f.int("drainingHashesUnackedMessages"),
            draining_hashes=tuple(_draining_hash(Fields(v, f.source, steps)) for v, steps in f.items("drainingHashes")),
            address=f.str("address"),
            connected_since=f.str("connectedSince"),
            client_version=f.str("clientVersion"),
            app_id=f.str("appId"),
            last_acked_timestamp=f.int("lastAckedTimestamp"),
            last_consumed_timestamp=f.int("lastConsumedTimestamp"),
            last_consumed_flow_timestamp=f.int("lastConsumedFlowTimestamp"),
            metadata=f.str_map("metadata"),
            present=f.present(),
            extra=f.extra(),
        )

    @property
    def hash_ranges(self) -> tuple[HashRange, ...] | None:
        """The consumer's key-hash ranges in whichever form the broker printed (4.x arrays first)."""
        return self.key_hash_range_arrays if self.key_hash_range_arrays is not None else self.key_hash_ranges

    @property
    def join_position(self) -> Position | None:
        """Where the cursor was when this consumer joined (3.x read position, or PIP-282's last sent position)."""
        return self.read_position_when_joining or self.last_sent_position_when_joining


def _draining_hash(f: Fields) -> DrainingHash:
    return DrainingHash(hash=f.int("hash"), unack_msgs=f.int("unackMsgs"), blocked_attempts=f.int("blockedAttempts"))


def _range_strings(f: Fields, name: str) -> tuple[HashRange, ...] | None:
    if not f.has(name):
        f.raw(name)
        return None
    out = []
    for item, steps in f.items(name):
        m = _RANGE_TEXT.fullmatch(item) if isinstance(item, str) else None
        if m is None:
            raise f.source.error(f'expected "[start, end]", got {describe(item)}', steps)
        out.append(_hash_range(f, int(m.group(1)), int(m.group(2)), steps))
    return tuple(out)


def _range_arrays(f: Fields, name: str) -> tuple[HashRange, ...] | None:
    if not f.has(name):
        f.raw(name)
        return None
    out = []
    for item, steps in f.items(name):
        ok = isinstance(item, list) and len(item) == 2 and all(type(x) is int for x in item)
        if not ok:
            raise f.source.error(f"expected [start, end] (two integers), got {describe(item)}", steps)
        out.append(_hash_range(f, item[0], item[1], steps))
    return tuple(out)


def _hash_range(f: Fields, start: int, end: int, steps: Any) -> HashRange:
    if start > end:
        raise f.source.error(f"expected start <= end in a hash range, got [{start}, {end}]", steps)
    return HashRange(start, end)


_SUB_TYPES = [t.wire for t in ConsumerType]
_KS_MODES = [m.wire for m in KeySharedMode]


@dataclass(frozen=True)
class SubscriptionStats:
    """`SubscriptionStatsImpl`: one subscription of a topic and its consumers."""

    name: str
    type: ConsumerType | None = None
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    bytes_out_counter: int = 0
    msg_out_counter: int = 0
    msg_rate_redeliver: float = 0.0
    message_ack_rate: float = 0.0
    msg_backlog: int = 0
    backlog_size: int = 0
    msg_backlog_no_delayed: int = 0
    blocked_subscription_on_unacked_msgs: bool = False
    msg_delayed: int = 0
    msg_in_replay: int = 0
    unacked_messages: int = 0
    active_consumer_name: str | None = None
    msg_rate_expired: float = 0.0
    total_msg_expired: int = 0
    last_expire_timestamp: int = 0
    last_consumed_flow_timestamp: int = 0
    last_consumed_timestamp: int = 0
    last_acked_timestamp: int = 0
    last_mark_delete_advanced_timestamp: int = 0
    consumers: tuple[ConsumerStats, ...] = ()
    is_durable: bool = True
    is_replicated: bool = False
    allow_out_of_order_delivery: bool = False
    key_shared_mode: KeySharedMode | None = None
    consumers_after_mark_delete_position: dict[str, Position] = field(default_factory=dict)
    draining_hashes_count: int = 0
    draining_hashes_cleared_total: int = 0
    draining_hashes_unacked_messages: int = 0
    non_contiguous_deleted_messages_ranges: int = 0
    non_contiguous_deleted_messages_ranges_serialized_size: int = 0
    delayed_message_index_size_in_bytes: int = 0
    last_sent_position: Position | None = None  # PIP-282 (3.3)
    individually_sent_positions: str | None = None  # PIP-282 (3.3), individuallyDeletedMessages' range format
    subscription_properties: dict[str, str] = field(default_factory=dict)
    present: frozenset[str] = field(default=frozenset(), compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def read(cls, name: str, f: Fields) -> "SubscriptionStats":
        after: dict[str, Position] = {}
        for consumer, value, steps in f.entries("consumersAfterMarkDeletePosition"):
            pos = parse_position(value)
            if pos is None:
                raise f.source.error(f'expected "ledger:entry", got {describe(value)}', steps)
            after[consumer] = pos
        return cls(
            name=name,
            type=f.choice("type", ConsumerType, _SUB_TYPES),
            msg_rate_out=f.float("msgRateOut"),
            msg_throughput_out=f.float("msgThroughputOut"),
            bytes_out_counter=f.int("bytesOutCounter"),
            msg_out_counter=f.int("msgOutCounter"),
            msg_rate_redeliver=f.float("msgRateRedeliver"),
            message_ack_rate=f.float("messageAckRate"),
            msg_backlog=f.int("msgBacklog"),
            backlog_size=f.int("backlogSize"),
            msg_backlog_no_delayed=f.int("msgBacklogNoDelayed"),
            blocked_subscription_on_unacked_msgs=f.bool("blockedSubscriptionOnUnackedMsgs"),
            msg_delayed=f.int("msgDelayed"),
            msg_in_replay=f.int("msgInReplay"),
            unacked_messages=f.int("unackedMessages"),
            active_consumer_name=f.str("activeConsumerName"),
            msg_rate_expired=f.float("msgRateExpired"),
            total_msg_expired=f.int("totalMsgExpired"),
            last_expire_timestamp=f.int("lastExpireTimestamp"),
            last_consumed_flow_timestamp=f.int("lastConsumedFlowTimestamp"),
            last_consumed_timestamp=f.int("lastConsumedTimestamp"),
            last_acked_timestamp=f.int("lastAckedTimestamp"),
            last_mark_delete_advanced_timestamp=f.int("lastMarkDeleteAdvancedTimestamp"),
            consumers=tuple(ConsumerStats.read(Fields(v, f.source, steps)) for v, steps in f.items("consumers")),
            is_durable=f.bool("isDurable", True),
            is_replicated=f.bool("isReplicated"),
            allow_out_of_order_delivery=f.bool("allowOutOfOrderDelivery"),
            key_shared_mode=f.choice("keySharedMode", KeySharedMode, _KS_MODES),
            consumers_after_mark_delete_position=after,
            draining_hashes_count=f.int("drainingHashesCount"),
            draining_hashes_cleared_total=f.int("drainingHashesClearedTotal"),
            draining_hashes_unacked_messages=f.int("drainingHashesUnackedMessages"),
            non_contiguous_deleted_messages_ranges=f.int("nonContiguousDeletedMessagesRanges"),
            non_contiguous_deleted_messages_ranges_serialized_size=f.int(
                "nonContiguousDeletedMessagesRangesSerializedSize"
            ),
            delayed_message_index_size_in_bytes=f.int("delayedMessageIndexSizeInBytes"),
            last_sent_position=f.position("lastSentPosition"),
            individually_sent_positions=f.str("individuallySentPositions"),
            subscription_properties=f.str_map("subscriptionProperties"),
            present=f.present(),
            extra=f.extra(),
        )

    def consumer(self, name: str) -> ConsumerStats | None:
        """The first consumer with this name (Pulsar allows duplicates)."""
        return next((c for c in self.consumers if c.consumer_name == name), None)

    def key_shared_snapshot(self, line: str | None = None) -> dict[str, Any]:
        """The consumers' key-hash ranges as a selector snapshot (the ``ranges`` form of
        `StickyKeyConsumerSelector.snapshot`), so the hash-range view draws a real cluster's assignment.

        Consumer ids are list positions. The key-hash range is inferred from the ranges: [0, 2^31-2] when
        they exceed 65536 (3.x consistent hashing), else [1, 65535] when they start at 1 (4.x consistent
        hashing) or [0, 65535] (sticky, auto-split).
        """
        ranges = [(r.start, r.end, i) for i, c in enumerate(self.consumers) for r in (c.hash_ranges or ())]
        top = max((e for _, e, _ in ranges), default=65535)
        bottom = min((s for s, _, _ in ranges), default=0)
        sticky = self.key_shared_mode is KeySharedMode.Sticky
        hi = max(top, 65535) if top <= 65536 else 2**31 - 2
        lo = 1 if bottom == 1 and not sticky and hi == 65535 else 0
        return {
            "kind": "sticky" if sticky else "imported keyHashRanges",
            "version": line,
            "key_hash_range": (lo, hi),
            "consumers": [(i, c.consumer_name or f"consumer-{i}") for i, c in enumerate(self.consumers)],
            "ranges": sorted(ranges),
        }


@dataclass(frozen=True)
class TopicStats:
    """`TopicStatsImpl` (or a partitioned topic's aggregate, with ``partitions`` when asked per partition)."""

    msg_rate_in: float = 0.0
    msg_throughput_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    msg_in_counter: int = 0
    bytes_in_counter: int = 0
    msg_out_counter: int = 0
    bytes_out_counter: int = 0
    average_msg_size: float = 0.0
    storage_size: int = 0
    backlog_size: int = 0
    earliest_msg_publish_time_in_backlogs: int = 0
    oldest_backlog_message_age_seconds: int = 0
    oldest_backlog_message_subscription_name: str | None = None
    subscriptions: dict[str, SubscriptionStats] = field(default_factory=dict)
    non_contiguous_deleted_messages_ranges: int = 0
    non_contiguous_deleted_messages_ranges_serialized_size: int = 0
    deduplication_status: str | None = None
    owner_broker: str | None = None
    metadata: dict[str, Any] | None = None  # partitioned stats: {"partitions": n, ...}
    partitions: dict[str, "TopicStats"] = field(default_factory=dict)
    present: frozenset[str] = field(default=frozenset(), compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    source: str = field(default="<dict>", compare=False)

    @classmethod
    def read(cls, f: Fields) -> "TopicStats":
        subs = {n: SubscriptionStats.read(n, Fields(v, f.source, s)) for n, v, s in f.entries("subscriptions")}
        parts = {n: TopicStats.read(Fields(v, f.source, s)) for n, v, s in f.entries("partitions")}
        metadata = f.obj("metadata")
        return cls(
            msg_rate_in=f.float("msgRateIn"),
            msg_throughput_in=f.float("msgThroughputIn"),
            msg_rate_out=f.float("msgRateOut"),
            msg_throughput_out=f.float("msgThroughputOut"),
            msg_in_counter=f.int("msgInCounter"),
            bytes_in_counter=f.int("bytesInCounter"),
            msg_out_counter=f.int("msgOutCounter"),
            bytes_out_counter=f.int("bytesOutCounter"),
            average_msg_size=f.float("averageMsgSize"),
            storage_size=f.int("storageSize"),
            backlog_size=f.int("backlogSize"),
            earliest_msg_publish_time_in_backlogs=f.int("earliestMsgPublishTimeInBacklogs"),
            oldest_backlog_message_age_seconds=f.int("oldestBacklogMessageAgeSeconds"),
            oldest_backlog_message_subscription_name=f.str("oldestBacklogMessageSubscriptionName"),
            subscriptions=subs,
            non_contiguous_deleted_messages_ranges=f.int("nonContiguousDeletedMessagesRanges"),
            non_contiguous_deleted_messages_ranges_serialized_size=f.int(
                "nonContiguousDeletedMessagesRangesSerializedSize"
            ),
            deduplication_status=f.str("deduplicationStatus"),
            owner_broker=f.str("ownerBroker"),
            metadata=None if metadata is None else metadata.extra(),
            partitions=parts,
            present=f.present(),
            extra=f.extra(),
            source=f.source.name,
        )


_STATS_MARKERS = ("subscriptions", "publishers", "msgRateIn", "msgInCounter", "storageSize")


def read_stats(data: Any, *, source: str | None = None) -> TopicStats:
    """stats JSON (text, or the parsed dict, e.g. ``lab.admin.topics.stats(t)``) -> `TopicStats`."""
    data, src = lenient_json.read(data, source=source)
    return from_json(data, src)


def load_stats(path: str | Path) -> TopicStats:
    """Read a ``topics stats`` (or ``partitioned-stats``) JSON file."""
    data, src = lenient_json.load(path)
    return from_json(data, src)


def from_json(data: Any, src: JsonSource) -> TopicStats:
    """Typed stats from an already parsed JSON value; ``src`` names it in errors (and locates them)."""
    f = Fields(data, src)
    if not any(k in data for k in _STATS_MARKERS):
        hint = (
            " (this looks like `topics stats-internal` output: use read_stats_internal, or load/read, which tell "
            "the two apart)"
            if "cursors" in data or "ledgers" in data
            else ""
        )
        raise src.error('expected `topics stats` output with "subscriptions"' + hint)
    return TopicStats.read(f)
