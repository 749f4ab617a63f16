"""The broker: its topics and the commands clients send it.

Models `BrokerService` (topic lookup and auto-creation, partitioned-topic metadata) and the command handling of
`ServerCnx` (design.md, "Split like Pulsar"): SUBSCRIBE, FLOW, SEND, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES and
CLOSE_CONSUMER arrive as method calls with the command's fields; MESSAGE and ACTIVE_CONSUMER_CHANGE go back through
the consumer's ``cnx`` (the client-side object). A binary-protocol front end can call the same methods.

Topic names are normalised as `TopicName` does: ``orders`` -> ``persistent://public/default/orders``;
``tenant/ns/topic`` -> ``persistent://tenant/ns/topic``. Topics are created on first use (non-partitioned,
``allowAutoTopicCreationType=non-partitioned``). Simplifies: one broker, one namespace policy set, no
authentication, persistent topics only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import model_events as ev
from ..client.ack_grouping import AckCommand
from ..client.policies import ConsumerKeySharedPolicy, ConsumerType, InitialPosition, KeySharedMode
from ..errors import IllegalArgumentException, PulsarError, ServerMetadataException
from .consumer import Consumer
from .ledger import LedgerIdAllocator
from .topic import PersistentTopic, ProducerHandle, partition_index_of

if TYPE_CHECKING:  # pragma: no cover
    from ..lab import Lab


class NotFoundException(PulsarError):
    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$NotFoundException"


class ConflictException(PulsarError):
    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$ConflictException"


class PreconditionFailedException(PulsarError):
    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$PreconditionFailedException"


def normalize_topic(name: str) -> str:
    """`TopicName.get(name).toString()` for persistent topics."""
    if not isinstance(name, str) or not name:
        raise IllegalArgumentException(f"Invalid topic name: {name!r}")
    if "://" in name:
        domain, rest = name.split("://", 1)
        if domain == "non-persistent":
            raise IllegalArgumentException("non-persistent topics are not modelled by the lab")
        if domain != "persistent":
            raise IllegalArgumentException(f"Invalid topic domain: '{domain}'")
        if len(rest.split("/")) < 3 or not all(rest.split("/")):
            raise IllegalArgumentException(f"Invalid topic name: {name}")
        return name
    parts = name.split("/")
    if len(parts) == 1:
        return f"persistent://public/default/{name}"
    if len(parts) == 3 and all(parts):
        return f"persistent://{name}"
    raise IllegalArgumentException(
        f"Invalid short topic name '{name}', it should be in the format of <tenant>/<namespace>/<topic> or <topic>")


class BrokerService:
    """The lab's broker."""

    def __init__(self, lab: "Lab") -> None:
        self.lab = lab
        self.profile = lab.profile
        self.config = lab.config
        self.scheduler = lab.scheduler
        self.events = lab.events
        self.ledger_ids = LedgerIdAllocator()
        self.topics: dict[str, PersistentTopic] = {}
        self.partitioned: dict[str, int] = {}
        self._next_producer = 0
        self._next_consumer = 0
        self._next_subscription = 0
        self._next_topic = 0

    # --- ids -----------------------------------------------------------------------------------
    def new_producer_id(self) -> int:
        self._next_producer += 1
        return self._next_producer - 1

    def new_consumer_id(self) -> int:
        self._next_consumer += 1
        return self._next_consumer - 1

    def new_subscription_id(self) -> int:
        self._next_subscription += 1
        return self._next_subscription - 1

    # --- topics --------------------------------------------------------------------------------
    normalize = staticmethod(normalize_topic)

    def _create_topic(self, name: str, partitions: int = 0) -> PersistentTopic:
        topic = PersistentTopic(self, name, self._next_topic)
        self._next_topic += 1
        self.topics[name] = topic
        if self.events.enabled:
            self.events.append(ev.TOPIC_CREATED, self.scheduler.now(), topic=topic.id, name=name,
                               partitions=partitions)
        return topic

    def ensure_topic(self, name: str) -> int:
        """Create the topic if it does not exist (auto-creation); returns its partition count (0: not partitioned)."""
        if name in self.partitioned:
            return self.partitioned[name]
        if name not in self.topics:
            self._create_topic(name)
        return 0

    def get_topic(self, name: str) -> PersistentTopic:
        topic = self.topics.get(name)
        if topic is None:
            if name in self.partitioned:
                raise PreconditionFailedException(f"{name} is a partitioned topic; use one of its partitions")
            topic = self._create_topic(name)
        return topic

    def create_partitioned_topic(self, name: str, partitions: int) -> None:
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
            raise PreconditionFailedException("The number of partitions must be more than 0")
        if name in self.partitioned or name in self.topics:
            raise ConflictException("This topic already exists")
        if partition_index_of(name) >= 0:
            raise PreconditionFailedException(
                "Partitioned Topic Name should not contain '-partition-'")
        self.partitioned[name] = partitions
        if self.events.enabled:
            self.events.append(ev.TOPIC_CREATED, self.scheduler.now(), topic=-1, name=name, partitions=partitions)
        for i in range(partitions):
            self._create_topic(f"{name}-partition-{i}")

    def create_non_partitioned_topic(self, name: str) -> None:
        if name in self.partitioned or name in self.topics:
            raise ConflictException("This topic already exists")
        self._create_topic(name)

    # --- SEND ----------------------------------------------------------------------------------
    def register_producer(self, producer_id: int, name: str, topic: str) -> ProducerHandle:
        return self.get_topic(topic).add_producer(producer_id, name)

    def unregister_producer(self, handle: ProducerHandle) -> None:
        handle.topic.producers.pop(handle.producer_id, None)

    def publish(self, handle: ProducerHandle, entry: Any):
        return handle.topic.publish(handle, entry)

    # --- SUBSCRIBE -----------------------------------------------------------------------------
    def subscribe(
        self,
        cnx: Any,
        *,
        consumer_id: int,
        topic: str,
        subscription: str,
        sub_type: ConsumerType,
        name: str,
        priority: int,
        initial_position: InitialPosition,
        key_shared_policy: ConsumerKeySharedPolicy | None,
        partition_index: int = -1,
    ) -> Consumer:
        t = self.get_topic(topic)
        ks_mode = None
        ooo = False
        ranges = None
        if sub_type is ConsumerType.KeyShared:
            policy = key_shared_policy or ConsumerKeySharedPolicy()
            ks_mode = policy.key_shared_mode.wire
            ooo = policy.allow_out_of_order_delivery
            if policy.key_shared_mode is KeySharedMode.Sticky:
                ranges = tuple(policy.sticky_ranges)
        existed = subscription in t.subscriptions
        sub = t.get_or_create_subscription(subscription, initial_position.value)
        consumer = Consumer(
            consumer_id=consumer_id, name=name, priority=priority, sub_type=sub_type, subscription=sub, cnx=cnx,
            max_unacked_messages=self.config["maxUnackedMessagesPerConsumer"], key_shared_mode=ks_mode,
            allow_out_of_order_delivery=ooo, ranges=ranges, connected_since=self.scheduler.now(),
        )
        try:
            sub.add_consumer(consumer)
        except Exception:
            if not existed and not sub.consumers():
                t.delete_subscription(subscription)
            raise
        if self.events.enabled:
            self.events.append(ev.CONSUMER_SUBSCRIBED, self.scheduler.now(), consumer=consumer_id, name=name,
                               topic=t.name, subscription=subscription, sub_type=sub_type.wire, priority=priority)
        return consumer

    # --- FLOW / ACK / REDELIVER / CLOSE --------------------------------------------------------
    def flow(self, consumer: Consumer, permits: int) -> None:
        if not consumer.closed:
            consumer.flow_permits(permits)

    def ack(self, consumer: Consumer, cmd: AckCommand) -> None:
        if not consumer.closed:
            consumer.subscription.message_acked(consumer, cmd)

    def redeliver_unacknowledged(self, consumer: Consumer) -> None:
        if consumer.closed:
            return
        d = consumer.subscription.dispatcher
        if self.events.enabled:
            n = len(consumer.pending_acks) if consumer.pending_acks is not None else -1
            self.events.append_row(ev.REDELIVER_REQUESTED, self.scheduler.now(), consumer.id, n)
        d.redeliver_unacknowledged_messages(consumer)

    def close_consumer(self, consumer: Consumer, reason: str = "closed") -> None:
        if consumer.closed:
            return
        consumer.closed = True
        consumer.cnx_active = False
        # -1: Exclusive / Failover keep no pending acks per consumer (as in redeliver_requested)
        pending = len(consumer.pending_acks) if consumer.pending_acks is not None else -1
        consumer.subscription.remove_consumer(consumer)
        if self.events.enabled:
            self.events.append(ev.CONSUMER_CLOSED, self.scheduler.now(), consumer=consumer.id, reason=reason,
                               pending_acks=pending)

    def unsubscribe(self, consumer: Consumer) -> None:
        sub = consumer.subscription
        consumers = sub.consumers()
        d = sub.dispatcher
        active = getattr(d, "active_consumer", consumer)
        if len(consumers) != 1 or consumers[0] is not consumer or active is not consumer:
            raise ServerMetadataException("Unconnected or shared consumer attempting to unsubscribe")
        self.close_consumer(consumer, "unsubscribed")
        sub.topic.delete_subscription(sub.name)
