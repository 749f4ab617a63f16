"""What a consumer and its inner consumers share: the settings, the receiver queue, the ack-timeout tracker, and
which inner consumer a message or message id belongs to.

Models the state `MultiTopicsConsumerImpl` and its `ConsumerImpl` children reach through each other in Pulsar
(the parent's ``incomingMessages`` and ``unAckedMessageTracker``, its ``conf``, its state): the client's
`Consumer` makes one `ConsumerState` and hands it to each `PartitionConsumer`, which reads and writes these
fields instead of the parent's private ones. `InnerConsumers` is the parent's map of its children (by partition,
retry topic, and, for the retry mode, by the ledger of a message id the application took). Simplifies: one
receiver queue for the parent and its children (the children's own queues are not modelled).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from pulsarlab.client.configuration import ConsumerConfiguration
from pulsarlab.client.dead_letter import DeadLetterPolicy
from pulsarlab.client.message import Message
from pulsarlab.client.start_filter import drop_before
from pulsarlab.client.unacked_tracker import UnAckedMessageTracker
from pulsarlab.clock import Scheduler
from pulsarlab.event_catalogue import redelivery as rev
from pulsarlab.events import EventLog, EventType
from pulsarlab.ids import MessageId
from pulsarlab.protocol.handles import ClientCommands

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.client import Client
    from pulsarlab.client.consumer import Consumer
    from pulsarlab.client.partition_consumer import PartitionConsumer
    from pulsarlab.lab import Lab


class InnerConsumers:
    """The inner consumers of one client consumer: per partition (-1 for a non-partitioned topic) and per retry
    topic, and which one a message or a bare message id belongs to."""

    __slots__ = ("by_partition", "by_retry_topic", "all", "ledger_owner")

    def __init__(self) -> None:
        self.by_partition: dict[int, PartitionConsumer] = {}
        self.by_retry_topic: dict[str, PartitionConsumer] = {}
        self.all: list[PartitionConsumer] = []  # partitions first, then the retry topic's
        self.ledger_owner: dict[int, PartitionConsumer] = {}  # retry mode: whose message a bare MessageId is

    def add(self, inner: PartitionConsumer, retry: bool) -> None:
        if retry:
            self.by_retry_topic[inner.topic] = inner
        else:
            self.by_partition[inner.partition] = inner
        self.all.append(inner)

    def for_id(self, mid: MessageId, topic: str) -> PartitionConsumer:
        """The partition consumer of ``mid``'s partition."""
        inner = self.by_partition.get(mid.partition)
        if inner is None:
            raise ValueError(f"message id {mid} does not belong to a partition of {topic}")
        return inner

    def of_message(self, message: Message, topic: str) -> PartitionConsumer:
        """The inner consumer that received ``message``."""
        if self.by_retry_topic:
            inner = self.by_retry_topic.get(message._topic)
            if inner is not None:
                return inner
        return self.for_id(message._id, topic)

    def of_id(self, mid: MessageId, topic: str) -> PartitionConsumer:
        """The inner consumer a bare message id belongs to (retry mode: the one whose message of that ledger
        the application took last)."""
        if self.by_retry_topic:
            inner = self.ledger_owner.get(mid.ledger)
            if inner is not None:
                return inner
        return self.for_id(mid, topic)

    def taken(self, message: Message) -> PartitionConsumer:
        """The inner consumer of a message the application takes from the queue (remembered by ledger in the
        retry mode, for acks by bare id)."""
        if self.by_retry_topic:
            inner = self.by_retry_topic.get(message._topic) or self.by_partition[message._partition]
            self.ledger_owner[message._ledger] = inner
            return inner
        return self.by_partition[message._partition]


@dataclass(slots=True, eq=False)
class ConsumerState:
    """The fields a client consumer shares with its inner consumers (see the module docstring)."""

    consumer: Consumer  # the application's side, what the lab's snapshots find through an inner consumer
    client: Client
    lab: Lab
    commands: ClientCommands
    scheduler: Scheduler
    events: EventLog | None  # None while the lab records no events
    config: ConsumerConfiguration
    consumer_id: int
    name: str
    topic: str
    multi_topics: bool  # a MultiTopicsConsumerImpl in Pulsar: partitioned, or with a retry topic
    batch_index_ack_enabled: bool
    dead_letter_policy: DeadLetterPolicy | None
    queue: deque[Message] = field(default_factory=deque)
    inner: InnerConsumers = field(default_factory=InnerConsumers)
    unacked: UnAckedMessageTracker | None = None  # the parent's ack-timeout tracker, made once subscribed
    closed: bool = False
    pending_error: Exception | None = None  # raised by the next receive (ZeroQueueConsumerImpl)
    active: dict[int, bool] = field(default_factory=dict)  # ACTIVE_CONSUMER_CHANGE per partition

    def remove_expired_from_queue(self, ids: list[MessageId]) -> int:
        """``removeExpiredMessagesFromQueue``: if the queue's head is among ``ids``, drop queued messages up to and
        including the first one that is not (whose id joins ``ids``); their permits go back."""
        queue = self.queue
        if not queue:
            return 0
        wanted = {m.discard_batch() for m in ids}
        if queue[0]._id.discard_batch() not in wanted:
            return 0
        per_inner: dict[int, tuple[PartitionConsumer, int]] = {}
        removed = 0
        while queue:
            m = queue.popleft()
            removed += 1
            inner = self.inner.of_message(m, self.topic)
            per_inner[id(inner)] = (inner, per_inner.get(id(inner), (inner, 0))[1] + 1)
            mid = m._id.discard_batch()
            if mid not in wanted:
                ids.append(mid)
                break
        if self.config.receiver_queue_size > 0:
            for inner, n in per_inner.values():
                inner.increase_available_permits(n)
        return removed

    def drop_before(self, start: MessageId, inclusive: bool) -> int:
        """Drop the queued messages before ``start`` (up to it when not ``inclusive``), returning their permits
        (`client.start_filter`); returns how many were dropped."""
        returns_permits = self.config.receiver_queue_size > 0
        return drop_before(self.queue, self.inner.by_partition, start, inclusive, returns_permits)

    def drop_queued(self, topic: str) -> int:
        """Remove the messages of one inner consumer's topic from the receiver queue; returns how many."""
        queue = self.queue
        kept = [m for m in queue if m._topic != topic]
        dropped = len(queue) - len(kept)
        if dropped:
            queue.clear()
            queue.extend(kept)
        return dropped

    def redeliver_all(self) -> None:
        """``redeliverUnacknowledgedMessages()`` of the parent: every inner consumer redelivers everything, the
        ack-timeout tracker is cleared."""
        for inner in self.inner.all:
            inner.redeliver_all()
        if self.unacked is not None:
            self.unacked.clear()

    def on_ack_timeout(self, ids: list[MessageId]) -> None:
        """The ack-timeout tracker's ``redeliverUnacknowledgedMessages(ids)`` (the parent's on multi-topics)."""
        if self.closed:
            return
        if not self.multi_topics:
            self.inner.all[0].redeliver_ids(ids)
            return
        if not self.config.consumer_type.individual_ack_mode:
            self.redeliver_all()
            return
        id_list = list(ids)
        self.remove_expired_from_queue(id_list)
        by_inner: dict[int, tuple[PartitionConsumer, list[MessageId]]] = {}
        for mid in id_list:
            try:
                inner = self.inner.of_id(mid, self.topic)
            except ValueError:
                continue
            by_inner.setdefault(id(inner), (inner, []))[1].append(mid)
        for inner, group in by_inner.values():
            inner.redeliver_ids(group, from_parent=True)

    def ack_timeout_ticked(self, _now: int, ids: list[MessageId]) -> None:
        """An ack-timeout tick: logged when something timed out or is tracked."""
        self.log_timer(rev.ACK_TIMEOUT_TICK, ids, self.unacked.size() if self.unacked is not None else 0)

    def log_timer(self, event: EventType, ids: list[MessageId], held: int) -> None:
        """A redelivery timer ran (an ack-timeout tick, a negative-ack timer): its row, when it let ``ids`` go or
        still holds ``held`` ids."""
        events = self.events
        if events is not None and (ids or held):
            events.append_row(
                event, self.scheduler.now_ms, self.consumer_id, len(ids), held, events.text_id(ids_json(ids))
            )

    def close_tasks(self) -> None:
        """``closeConsumerTasks``: stop the ack-timeout, negative-ack and chunk-expiry timers, close the letter
        producers."""
        if self.unacked is not None:
            self.unacked.close()
        for inner in self.inner.all:
            inner.close_trackers()


def ids_json(ids: Iterable[MessageId]) -> str:
    """The ids of an event row's text: ``[[ledger, entry, partition], ...]``."""
    return json.dumps([[m.ledger, m.entry, m.partition] for m in ids], separators=(",", ":"))


__all__ = ["ConsumerState", "InnerConsumers", "ids_json"]
