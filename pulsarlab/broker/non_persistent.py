"""Non-persistent topics: messages go to the consumers connected now, or nowhere.

Models `NonPersistentTopic`, `NonPersistentSubscription` and the non-persistent dispatchers
(`NonPersistentDispatcherSingleActiveConsumer`, `NonPersistentDispatcherMultipleConsumers`):

* A SEND is acknowledged with message id ``0:0`` at once (``publishMessage`` completes with ``(0, 0)``) and
  handed to each subscription as an entry ``0:0``; nothing is stored.
* Exclusive / Failover: the active consumer (the first by priority, then by name) gets it if it has permits.
  Shared: the next consumer in turn that has permits. Otherwise the message is dropped (``msgDropRate``).
* Acks and redelivery requests change nothing (there is nothing to redeliver); a subscription goes away with its
  last consumer; producers, access modes and deduplication are the persistent topic's.

Simplifies: Key_Shared picks the consumer by the sticky key's hash over the connected consumers (Pulsar's
selector with ranges or consistent hashing is not modelled here); no seek or GET_LAST_MESSAGE_ID (Pulsar
refuses them on non-persistent topics too); no replication; no rates (only counters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pulsarlab.broker.topic import PersistentTopic, ProducerHandle
from pulsarlab.errors import ConsumerBusyException
from pulsarlab.hashing import murmur3_32
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.subscription import ConsumerType

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.messages import EntryData
    from pulsarlab.protocol.acks import AckCommand

NON_PERSISTENT_ID = Position(0, 0)  # every message of a non-persistent topic


class NonPersistentSubscription:
    """A subscription of a non-persistent topic, with its dispatcher (it is its own ``dispatcher``)."""

    batch_index_level = False

    def __init__(self, topic: "NonPersistentTopic", name: str, subscription_id: int) -> None:
        self.topic = topic
        self.name = name
        self.id = subscription_id
        self.dispatcher = self
        self._consumers: list["Consumer"] = []
        self._turn = 0
        self.sub_type: ConsumerType | None = None
        self.msg_drop_counter = 0
        self.msg_out_counter = 0

    def __str__(self) -> str:
        return f"NonPersistentSubscription{{topic={self.topic.name}, name={self.name}}}"

    @property
    def type_name(self) -> str:
        return self.sub_type.name if self.sub_type is not None else "None"

    @property
    def attached_dispatcher(self) -> "NonPersistentSubscription":
        """Itself, its own dispatcher (`PersistentSubscription.attached_dispatcher`)."""
        return self

    # --- consumers -----------------------------------------------------------------------------
    def consumers(self) -> list["Consumer"]:
        return list(self._consumers)

    def add_consumer(self, consumer: "Consumer") -> None:
        if self._consumers and consumer.sub_type is not self.sub_type:
            raise ConsumerBusyException("Subscription is of different type")
        if consumer.sub_type is ConsumerType.Exclusive and self._consumers:
            raise ConsumerBusyException("Exclusive consumer is already connected")
        consumer.pending_acks = None  # nothing to acknowledge on a non-persistent topic
        consumer.individual_ack_mode = False
        self.sub_type = consumer.sub_type
        self._consumers.append(consumer)
        self._consumers.sort(key=lambda c: (c.priority, c.name, c.id))

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer in self._consumers:
            self._consumers.remove(consumer)
        if not self._consumers:
            self.topic.subscriptions.pop(self.name, None)

    # --- what consumers and the broker call ----------------------------------------------------
    def consumer_flow(self, consumer: "Consumer", n: int) -> None:
        pass  # nothing waits to be read

    def add_unacked_messages(self, n: int) -> None:
        pass

    def message_acked(self, consumer: "Consumer", cmd: "AckCommand") -> None:
        pass

    def redeliver_unacknowledged_messages(
        self, consumer: "Consumer", positions: "Sequence[tuple[int, int]] | None" = None
    ) -> None:
        pass

    def close(self) -> None:
        self._consumers.clear()

    # --- dispatch ------------------------------------------------------------------------------
    def _choose(self, entry: "EntryData") -> "Consumer | None":
        consumers = self._consumers
        if not consumers:
            return None
        if self.sub_type in (ConsumerType.Exclusive, ConsumerType.Failover):
            c = consumers[0]
            return c if c.available_permits > 0 else None
        if self.sub_type is ConsumerType.KeyShared:
            meta = entry.metadata
            key = meta.ordering_key or (meta.partition_key or "").encode()
            c = consumers[murmur3_32(key) % len(consumers)]
            return c if c.available_permits > 0 else None
        n = len(consumers)
        for i in range(n):
            c = consumers[(self._turn + i) % n]
            if c.available_permits > 0:
                self._turn = (self._turn + i + 1) % n
                return c
        return None

    def send(self, entry: "EntryData") -> None:
        """`sendMessages` of one entry: to a consumer with permits, else dropped."""
        consumer = self._choose(entry)
        n = entry.metadata.num_messages_in_batch or 1
        if consumer is None:
            self.msg_drop_counter += n
            return
        self.msg_out_counter += n
        consumer.send_messages([(NON_PERSISTENT_ID, entry)])

    def stats(self) -> dict[str, Any]:
        return {
            "msgRateOut": 0.0,
            "msgThroughputOut": 0.0,
            "bytesOutCounter": sum(c.bytes_out_counter for c in self._consumers),
            "msgOutCounter": self.msg_out_counter,
            "msgDropRate": 0.0,
            "msgDropCounter": self.msg_drop_counter,
            "type": self.type_name,
            "msgBacklog": 0,
            "consumers": [c.stats() for c in self._consumers],
            "isDurable": False,
            "isReplicated": False,
        }


class NonPersistentTopic(PersistentTopic):
    """A non-persistent topic: the persistent topic's producers, none of its storage."""

    non_persistent = True
    # its subscriptions are its own kind, which the persistent topic's code paths never reach
    subscriptions: dict[str, NonPersistentSubscription]  # type: ignore[assignment]

    def get_or_create_subscription(  # type: ignore[override]
        self, name: str, initial_position: str, durable: bool = True
    ) -> NonPersistentSubscription:
        sub = self.subscriptions.get(name)
        if sub is None:
            sub = NonPersistentSubscription(self, name, self.service.new_subscription_id())
            self.subscriptions[name] = sub
        return sub

    def delete_subscription(self, name: str) -> None:
        sub = self.subscriptions.pop(name, None)
        if sub is not None:
            sub.close()

    def publish(self, handle: ProducerHandle, entry: "EntryData", highest_sequence_id: int | None = None) -> Position:
        dedup = self.deduplication
        if dedup is not None and dedup.is_duplicate(handle.name, entry.metadata, highest_sequence_id):
            return Position(-1, -1)
        n = entry.metadata.num_messages_in_batch or 1
        self.msg_in_counter += n
        self.bytes_in_counter += entry.size
        handle.msg_in_counter += n
        handle.bytes_in_counter += entry.size
        for sub in tuple(self.subscriptions.values()):
            sub.send(entry)
        return NON_PERSISTENT_ID

    def reload(self) -> None:
        self.msg_in_counter = 0
        self.bytes_in_counter = 0

    def stats(self) -> dict[str, Any]:
        subs = {name: sub.stats() for name, sub in self.subscriptions.items()}
        return {
            **self.traffic_stats(subs),
            "msgDropRate": 0.0,
            "storageSize": 0,
            "publishers": [
                {"accessMode": h.access_mode.name, "producerId": h.producer_id, "producerName": h.name}
                for h in self.producers.values()
            ],
            "waitingPublishers": len(self.access.waiting),
            "subscriptions": subs,
            "replication": {},
            "deduplicationStatus": "Disabled" if self.deduplication is None else "Enabled",
        }

    def stats_internal(self) -> dict[str, Any]:
        return {"entriesAddedCounter": 0, "numberOfEntries": 0, "totalSize": 0, "ledgers": [], "cursors": {}}


__all__ = ["NON_PERSISTENT_ID", "NonPersistentSubscription", "NonPersistentTopic"]
