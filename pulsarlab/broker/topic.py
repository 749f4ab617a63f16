"""A persistent topic (or one partition of a partitioned topic): its managed ledger, producers, subscriptions.

Models `PersistentTopic` (docs/guide/delayed-delivery.md#hold-back, `TopicStatsImpl` / `PersistentTopicInternalStats`):
``publishMessage`` refuses a message delayed more than
``delayedDeliveryMaxDelayInMillis`` after its publish time (4.0+), appends the entry to the managed ledger and
wakes the dispatchers whose cursor waits at the end of the topic; ``subscribe`` opens (or reuses) the
subscription's durable cursor at the initial position. ``unload`` / ``reload`` are what a graceful broker
restart does to a topic (`broker.restart`). Producers are admitted by their access mode (`producer_access`);
with deduplication on, duplicates are dropped (`deduplication`); ``compacted`` is the last compaction
(`compaction`). Simplifies: no retention or backlog quotas,
no replication.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

from pulsarlab.broker.compaction import CompactedTopic, CompactionStatus, compaction_stats
from pulsarlab.broker.deduplication import DUPLICATE, MessageDeduplication
from pulsarlab.broker.producer_access import ProducerAccess
from pulsarlab.date_format import format_timestamp
from pulsarlab.errors import NotAllowedException
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue.delayed import DELIVERY_DELAY_REFUSED
from pulsarlab.managed_ledger.ledger import ManagedLedger
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.producer_access import ProducerAccessMode

if TYPE_CHECKING:
    from pulsarlab.broker.service import BrokerService
    from pulsarlab.broker.subscription import PersistentSubscription
    from pulsarlab.messages import EntryData

_PARTITION = re.compile(r"-partition-(\d+)$")


def partition_index_of(name: str) -> int:
    """`TopicName.getPartitionIndex`: N for ``...-partition-N``, else -1."""
    m = _PARTITION.search(name)
    return int(m.group(1)) if m else -1


class ProducerHandle:
    """The broker's record of one producer on one topic (`Producer`): its access mode, the topic epoch it
    holds (exclusive modes), whether it may produce yet (``ready``: False while ``WaitForExclusive`` waits) and
    the callbacks its connection gave: ``on_ready(handle)`` when a waiting producer gets the topic,
    ``on_fenced(handle, reason)`` when another producer fences it out."""

    __slots__ = (
        "producer_id",
        "name",
        "topic",
        "msg_in_counter",
        "bytes_in_counter",
        "connected_since",
        "access_mode",
        "topic_epoch",
        "requested_epoch",
        "ready",
        "is_fenced",
        "on_ready",
        "on_fenced",
    )

    def __init__(
        self,
        producer_id: int,
        name: str,
        topic: "PersistentTopic",
        now: int,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
    ) -> None:
        self.producer_id = producer_id
        self.name = name
        self.topic = topic
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.connected_since = now
        self.access_mode = access_mode
        self.topic_epoch: int | None = None
        self.requested_epoch: int | None = None
        self.ready = True
        self.is_fenced = False
        self.on_ready: Callable[["ProducerHandle"], None] | None = None
        self.on_fenced: Callable[["ProducerHandle", str], None] | None = None

    def last_published_sequence_id(self) -> int:
        """PRODUCER_SUCCESS' ``last_sequence_id`` for this producer's name (`last_published_sequence_id` of the
        topic)."""
        return self.topic.last_published_sequence_id(self.name)

    def fenced(self, reason: str) -> None:
        """Another producer fenced this one out (`Producer.close` from `ExclusiveWithFencing`)."""
        self.is_fenced = True
        self.ready = False
        if self.on_fenced is not None:
            self.on_fenced(self, reason)


class PersistentTopic:
    """One topic the broker serves."""

    def __init__(self, service: "BrokerService", name: str, topic_id: int) -> None:
        self.service = service
        self.name = name
        self.id = topic_id
        self.partition_index = partition_index_of(name)
        self.ledger = ManagedLedger(
            name,
            service.scheduler,
            service.config,
            service.ledger_ids,
            service.events if service.events.enabled else None,
            service.entry_cache,
        )
        self.subscriptions: dict[str, PersistentSubscription] = {}
        self.producers: dict[int, ProducerHandle] = {}
        self.last_active_ms = service.scheduler.now_ms  # lastActive: loaded, or active at the last checkGC
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.msg_chunk_published = False  # a chunk was stored since the topic was loaded
        self._entry_ev = ev.ENTRY_PERSISTED
        self.delayed_messages_published = False  # a stored entry has a deliverAt time (dispatchers check delays)
        self.access = ProducerAccess()
        self.compacted: CompactedTopic | None = None  # the last compaction's result (broker.compaction)
        self.compaction_status = CompactionStatus.NOT_RUN
        self.compaction_succeeded_at = 0
        self.deduplication: MessageDeduplication | None = None  # set while deduplication is enabled
        # kept across disable/enable, as Pulsar's snapshot cursor
        self.dedup_state = MessageDeduplication(
            service.config.integer("brokerDeduplicationProducerInactivityTimeoutMinutes")
        )

    def add_producer(
        self,
        producer_id: int,
        name: str,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
        topic_epoch: int | None = None,
        on_ready: Callable[[ProducerHandle], None] | None = None,
        on_fenced: Callable[[ProducerHandle, str], None] | None = None,
    ) -> ProducerHandle:
        """`addProducer`: admitted now (``ready``), queued (``WaitForExclusive``: ``ready`` False until
        ``on_ready``), or refused (`producer_access`)."""
        handle = ProducerHandle(producer_id, name, self, self.service.scheduler.now_ms, access_mode)
        handle.on_ready = on_ready
        handle.on_fenced = on_fenced
        if access_mode is ProducerAccessMode.Shared and not self.access.has_exclusive and not self.access.waiting:
            self.producer_admitted(handle)
            return handle
        if self.access.admit(self, handle, topic_epoch):
            self.producer_admitted(handle)
        else:
            handle.ready = False
        return handle

    def producer_admitted(self, handle: ProducerHandle) -> None:
        """The producer has the topic (`internalAddProducer`): its name is active for deduplication."""
        self.producers[handle.producer_id] = handle
        self.dedup_state.producer_added(handle.name, self.service.scheduler.now_ms)

    def remove_producer(self, handle: ProducerHandle) -> None:
        """`removeProducer`: the producer left (closed, or its connection went)."""
        if self.producers.get(handle.producer_id) is handle:
            del self.producers[handle.producer_id]
            if all(p.name != handle.name for p in self.producers.values()):
                self.dedup_state.producer_removed(handle.name, self.service.scheduler.now_ms)
        elif handle.ready or handle.is_fenced:
            return
        self.access.removed(self, handle)

    def last_published_sequence_id(self, producer_name: str) -> int:
        """`getLastPublishedSequenceId` (PRODUCER_SUCCESS' ``last_sequence_id``): -1 without deduplication."""
        dedup = self.deduplication
        return -1 if dedup is None else dedup.last_published(producer_name)

    def publish(self, handle: ProducerHandle, entry: "EntryData", highest_sequence_id: int | None = None) -> Position:
        """`publishMessage`: persist the entry, then complete waiting reads. With deduplication on, a duplicate
        is not stored and gets `DUPLICATE` (``-1:-1``)."""
        if entry.metadata.deliver_at_time is not None:
            self._check_delivery_delay(handle, entry)
        dedup = self.deduplication
        if dedup is not None and dedup.is_duplicate(handle.name, entry.metadata, highest_sequence_id):
            return DUPLICATE
        size = entry.size
        pos = self.ledger.add_entry(entry, size)
        meta = entry.metadata
        n = meta.num_messages_in_batch
        n = 1 if n is None else n
        self.msg_in_counter += n
        self.bytes_in_counter += size
        handle.msg_in_counter += n
        handle.bytes_in_counter += size
        if meta.uuid is not None:
            self.msg_chunk_published = True
        service = self.service
        events = service.events
        if events.enabled:
            events.append_row(
                self._entry_ev,
                service.scheduler.now_ms,
                self.id,
                pos.ledger_id,
                pos.entry_id,
                n,
                handle.producer_id,
                meta.sequence_id,
            )
        for sub in tuple(self.subscriptions.values()):
            d = sub.dispatcher
            if d is not None:
                d.on_new_entries()
        return pos

    def _check_delivery_delay(self, handle: ProducerHandle, entry: "EntryData") -> None:
        """``isExceedMaximumDeliveryDelay``: deliverAt - publishTime above the limit fails the send."""
        settings = self.service.delayed_tracker_factory.settings
        meta = entry.metadata
        limit = settings.max_delay_in_millis
        deliver_at = meta.deliver_at_time
        if settings.enabled and limit > 0 and deliver_at is not None and deliver_at - meta.publish_time > limit:
            events = self.service.events
            if events.enabled:
                events.append(
                    DELIVERY_DELAY_REFUSED,
                    self.service.scheduler.now_ms,
                    topic=self.id,
                    producer=handle.producer_id,
                    sequence_id=meta.sequence_id,
                    deliver_at=meta.deliver_at_time,
                    max_delay=limit,
                )
            raise NotAllowedException(f"Exceeds max allowed delivery delay of {limit} milliseconds", via="future")
        self.delayed_messages_published = True

    def get_or_create_subscription(
        self, name: str, initial_position: str, durable: bool = True
    ) -> PersistentSubscription:
        """The subscription ``name``, created with a cursor at ``initial_position`` if missing (``durable`` False:
        a reader's non-durable cursor, which holds back no ledger trimming)."""
        sub = self.subscriptions.get(name)
        if sub is None:
            cursor = self.ledger.open_cursor(name, initial_position, durable)
            # subscriptions, dispatchers and consumers load with the first subscription, not with the broker
            from pulsarlab.broker.subscription import PersistentSubscription

            sub = PersistentSubscription(self, name, cursor, self.service.new_subscription_id())
            self.subscriptions[name] = sub
        return sub

    def delete_subscription(self, name: str) -> None:
        sub = self.subscriptions.pop(name)
        if sub.dispatcher is not None:
            clear = getattr(sub.dispatcher, "clear_delayed_messages", None)
            if clear is not None:
                clear()
            sub.dispatcher.close()
        self.ledger.delete_cursor(name)

    # --- broker restart --------------------------------------------------------------------------
    def unload(self) -> None:
        """A graceful unload (`PersistentTopic.close`): producers are disconnected and forgotten."""
        self.producers.clear()
        self.access.reset()

    def reload(self) -> None:
        """The topic is loaded again: the managed ledger is reopened (a new ledger; cursors recover what they
        persisted) and the in-memory counters start from zero, as a new `PersistentTopic` object's do."""
        self.ledger.restart()
        self.last_active_ms = self.service.scheduler.now_ms
        self.msg_in_counter = 0
        self.bytes_in_counter = 0

    # --- stats ---------------------------------------------------------------------------------
    def traffic_stats(self, subs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The rates and in/out counters that open `TopicStatsImpl` (rates are 0: no wall clock); ``subs`` are
        the subscriptions' stats, whose out counters are summed."""
        return {
            "msgRateIn": 0.0,
            "msgThroughputIn": 0.0,
            "msgRateOut": 0.0,
            "msgThroughputOut": 0.0,
            "bytesInCounter": self.bytes_in_counter,
            "msgInCounter": self.msg_in_counter,
            "bytesOutCounter": sum(s["bytesOutCounter"] for s in subs.values()),
            "msgOutCounter": sum(s["msgOutCounter"] for s in subs.values()),
            "averageMsgSize": (self.bytes_in_counter / self.msg_in_counter) if self.msg_in_counter else 0.0,
        }

    def stats(self) -> dict[str, Any]:
        """`pulsar-admin topics stats` (`TopicStatsImpl`) in its JSON shape; rates are 0 (no wall clock)."""
        subs = {name: sub.stats() for name, sub in self.subscriptions.items()}
        ledger = self.ledger
        return {
            **self.traffic_stats(subs),
            "msgChunkPublished": self.msg_chunk_published,
            "storageSize": ledger.total_size,
            "backlogSize": 0,
            "publishRateLimitedTimes": 0,
            "earliestMsgPublishTimeInBacklogs": 0,
            "offloadedStorageSize": 0,
            "lastOffloadLedgerId": 0,
            "lastOffloadSuccessTimeStamp": 0,
            "lastOffloadFailureTimeStamp": 0,
            "waitingPublishers": len(self.access.waiting),
            "replicationBacklog": 0,
            "publishers": [
                {
                    "accessMode": h.access_mode.name,
                    "msgRateIn": 0.0,
                    "msgThroughputIn": 0.0,
                    "averageMsgSize": 0.0,
                    "chunkedMessageRate": 0.0,
                    "producerId": h.producer_id,
                    "supportsPartialProducer": False,
                    "producerName": h.name,
                    "address": "/127.0.0.1:6650",
                    "connectedSince": format_timestamp(h.connected_since),
                    "clientVersion": "pulsarlab",
                    "metadata": {},
                }
                for h in self.producers.values()
            ],
            "subscriptions": subs,
            "replication": {},
            "deduplicationStatus": "Disabled" if self.deduplication is None else "Enabled",
            "nonContiguousDeletedMessagesRanges": sum(s["nonContiguousDeletedMessagesRanges"] for s in subs.values()),
            "nonContiguousDeletedMessagesRangesSerializedSize": 0,
            "delayedMessageIndexSizeInBytes": sum(s["delayedMessageIndexSizeInBytes"] for s in subs.values()),
            "bucketDelayedIndexStats": _sum_metrics(s.get("bucketDelayedIndexStats", {}) for s in subs.values()),
            "compaction": compaction_stats(self.compacted, self.compaction_succeeded_at),
            "ownerBroker": "localhost:8080",
        }

    def stats_internal(self) -> dict[str, Any]:
        """`pulsar-admin topics stats-internal` (`PersistentTopicInternalStats`)."""
        out = self.ledger.stats_internal()
        cursors = {}
        for name, sub in self.subscriptions.items():
            pending = bool(sub.cursor.waiting_read_op)
            cursors[name] = sub.cursor.stats_internal(
                subscription_have_pending_read=pending, subscription_have_pending_replay_read=False
            )
        for name, cursor_stats in out.get("cursors", {}).items():
            cursors.setdefault(name, cursor_stats)
        out["cursors"] = cursors
        return out


def _sum_metrics(maps: Any) -> dict[str, dict[str, Any]]:
    """The subscriptions' ``bucketDelayedIndexStats`` summed per metric, as the topic stats merge them."""
    out: dict[str, dict[str, Any]] = {}
    for metrics in maps:
        for key, bean in metrics.items():
            if key in out:
                out[key] = dict(out[key], value=out[key]["value"] + bean["value"])
            else:
                out[key] = dict(bean)
    return out
