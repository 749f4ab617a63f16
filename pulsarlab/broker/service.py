"""The broker: its topics and the commands clients send it.

Models `BrokerService` (topic lookup and auto-creation, partitioned-topic metadata) and the command handling of
`ServerCnx` (docs/architecture.md): SUBSCRIBE, FLOW, SEND, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES and
CLOSE_CONSUMER arrive as method calls with the command's fields; MESSAGE and ACTIVE_CONSUMER_CHANGE go back through
the consumer's ``cnx`` (the client-side object). These methods are the only way in for the lab's client, the
binary-protocol front end (`pulsarlab.serve`, which also asks for GET_LAST_MESSAGE_ID, CONSUMER_STATS, readers'
non-durable subscriptions, SEEK and GET_TOPICS_OF_NAMESPACE) and the broker's admin resources
(`pulsarlab.broker.admin`, behind ``lab.admin``: tenants, namespaces, topic and subscription administration,
compaction, cursor moves); what they return to a caller outside the broker is a handle to pass back or a
read-only result. `client_error_code` maps the model's
exceptions to the wire's `ServerError` as `BrokerServiceException.getClientErrorCode` does.

Topic names are normalised as `TopicName` does: ``orders`` -> ``persistent://public/default/orders``;
``tenant/ns/topic`` -> ``persistent://tenant/ns/topic``. Topics are created on first use (non-partitioned,
``allowAutoTopicCreationType=non-partitioned``). At start-up the broker loads its delayed-delivery tracker factory
(`delayed_factory`); the bucket snapshot storage stands in for BookKeeper and, like the ledgers, outlives a
restart (`restart`). Simplifies: one broker, one namespace policy set, no authentication, persistent topics
only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from pulsarlab.broker.delayed.bucket.snapshot import InMemoryBucketSnapshotStorage
from pulsarlab.broker.delayed.factory import load_delayed_delivery_tracker_factory
from pulsarlab.broker.inactive_topics import InactivityMonitor
from pulsarlab.broker.non_persistent import NonPersistentTopic
from pulsarlab.broker.producers import ProducerRegistry
from pulsarlab.broker.restart import RestartReport, restart_broker
from pulsarlab.broker.schema_registry import SchemaData, SchemaRegistry
from pulsarlab.broker.tenancy import STANDALONE_CLUSTER, Tenancy
from pulsarlab.broker.topic import PersistentTopic, ProducerHandle, partition_index_of
from pulsarlab.errors import BadRequestException as BadRequestException  # re-exported (moved to errors.py)
from pulsarlab.errors import (
    ConflictException,
    ConsumerAssignException,
    ConsumerBusyException,
    IllegalArgumentException,
    IncompatibleSchemaException,
    NamingException,
    NotAllowedException,
    NotFoundException,
    PreconditionFailedException,
    ProducerBusyException,
    ProducerFencedException,
    PulsarError,
    ServerMetadataException,
    SubscriptionBusyException,
)
from pulsarlab.errors import MethodNotAllowedException as MethodNotAllowedException  # re-exported (idem)
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue.redelivery import REDELIVER_IDS
from pulsarlab.managed_ledger.entry_cache import EntryCacheManager
from pulsarlab.managed_ledger.exceptions import ManagedLedgerException
from pulsarlab.managed_ledger.ledger import LedgerIdAllocator
from pulsarlab.managed_ledger.position import EARLIEST, LATEST, Position
from pulsarlab.managed_ledger.retention import RetentionPolicies
from pulsarlab.protocol.acks import AckCommand
from pulsarlab.protocol.handles import ConsumerConnection
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition, KeySharedMode

if TYPE_CHECKING:
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.subscription import PersistentSubscription
    from pulsarlab.lab import Lab
    from pulsarlab.messages import EntryData
    from pulsarlab.profiles import BrokerConfig


def normalize_topic(name: str) -> str:
    """`TopicName.get(name).toString()`: a short name is persistent; ``non-persistent://`` names are kept."""
    if not isinstance(name, str) or not name:
        raise IllegalArgumentException(f"Invalid topic name: {name!r}")
    if "://" in name:
        domain, rest = name.split("://", 1)
        if domain not in ("persistent", "non-persistent"):
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
        f"Invalid short topic name '{name}', it should be in the format of <tenant>/<namespace>/<topic> or <topic>"
    )


def namespace_of(topic: str) -> str:
    """``tenant/namespace`` of a normalised topic name (``persistent://t/ns/x`` -> ``t/ns``)."""
    tenant, namespace = topic.split("://", 1)[-1].split("/")[:2]
    return f"{tenant}/{namespace}"


def client_error_code(error: BaseException) -> ServerError:
    """`BrokerServiceException.getClientErrorCode`: the wire's error code for one of the model's exceptions."""
    if isinstance(error, ServerMetadataException):
        return ServerError.MetadataError
    if isinstance(error, (ConsumerBusyException, SubscriptionBusyException)):
        return ServerError.ConsumerBusy
    if isinstance(error, ConsumerAssignException):
        return ServerError.ConsumerAssignError
    if isinstance(error, IncompatibleSchemaException):
        return ServerError.IncompatibleSchema
    if isinstance(error, ProducerFencedException):
        return ServerError.ProducerFenced
    if isinstance(error, (ProducerBusyException, NamingException)):
        return ServerError.ProducerBusy
    if isinstance(error, NotAllowedException):
        return ServerError.NotAllowedError
    if isinstance(error, NotFoundException):
        return ServerError.TopicNotFound
    if isinstance(error, ManagedLedgerException):
        return ServerError.PersistenceError
    if isinstance(error, (PreconditionFailedException, ConflictException)):
        return ServerError.MetadataError
    if isinstance(error, IllegalArgumentException) and str(error).startswith("Invalid topic"):
        return ServerError.InvalidTopicName
    return ServerError.UnknownError


def default_retention(config: BrokerConfig) -> RetentionPolicies:
    """The broker's ``defaultRetentionTimeInMinutes`` / ``defaultRetentionSizeInMB``: the retention of a topic whose
    namespace sets none."""
    return RetentionPolicies.of(config["defaultRetentionTimeInMinutes"], config["defaultRetentionSizeInMB"])


def position_after_publish_time(topic: PersistentTopic, publish_time: int) -> Position:
    """`PersistentMessageFinder`: the position after the newest entry published before ``publish_time``
    (`MessageImpl.isEntryPublishedEarlierThan` is ``entryTimestamp < timestamp``), so an entry published in that
    very millisecond is read again."""
    ml = topic.ledger
    for info in reversed(list(ml.ledgers)):
        entries = ml.entries_of(info.ledger_id)
        for e in range(len(entries) - 1, -1, -1):
            if entries[e].metadata.publish_time < publish_time:
                return Position(info.ledger_id, e + 1)
    return ml.first_position()


def message_id_position(ledger: int, entry: int) -> Position:
    """A message id a client sends (SEEK, a reader's start id) as a ledger position: earliest (-1:-1, or any
    negative part), latest (Long.MAX_VALUE:Long.MAX_VALUE), or the entry (a batch index is dropped)."""
    if ledger < 0 or entry < 0:
        return EARLIEST
    if ledger == LATEST.ledger_id and entry == LATEST.entry_id:
        return LATEST
    return Position(ledger, entry)


@dataclass(frozen=True)
class LastMessageId:
    """GET_LAST_MESSAGE_ID's answer (`ServerCnx.handleGetLastMessageId`): the topic's last entry (-1:-1 when
    empty) with the batch index of its last message (-1 when not batched) and the subscription's mark-delete
    position."""

    ledger_id: int
    entry_id: int
    partition: int
    batch_index: int
    mark_delete_ledger_id: int
    mark_delete_entry_id: int


@dataclass(frozen=True)
class ConsumerStatsResult:
    """CONSUMER_STATS' answer (`ServerCnx.handleConsumerStats`): the counters the model keeps for a consumer
    (rates are 0: the model has no wall clock)."""

    consumer_name: str
    available_permits: int
    unacked_messages: int
    blocked_consumer_on_unacked_msgs: bool
    connected_since: str
    type: str
    msg_backlog: int


class BrokerService:
    """The lab's broker."""

    def __init__(self, lab: "Lab") -> None:
        self.lab = lab
        self.profile = lab.profile
        self.config = lab.config
        self.scheduler = lab.scheduler
        self.events = lab.events
        self.ledger_ids = LedgerIdAllocator()
        # with ``lab_entryStorage`` "disk": the entry cache and bookie storage every managed ledger shares
        self.entry_cache = EntryCacheManager.from_config(self.config)
        self.bucket_snapshot_storage = InMemoryBucketSnapshotStorage(self.ledger_ids.next)
        self.delayed_tracker_factory = load_delayed_delivery_tracker_factory(
            self.config, self.profile, self.scheduler, self.bucket_snapshot_storage, self.events
        )
        self.restarts = 0
        self.producers = ProducerRegistry(self.events, self.scheduler)
        self.topics: dict[str, PersistentTopic] = {}
        self.non_persistent_topics: dict[str, NonPersistentTopic] = {}  # apart: nothing stored to show or restart
        self.partitioned: dict[str, int] = {}
        self.schemas = SchemaRegistry(self.config.text("schemaCompatibilityStrategy"))
        self._next_producer = 0
        self._next_consumer = 0
        self._next_subscription = 0
        self._next_topic = 0
        self.tenancy = Tenancy.standalone(STANDALONE_CLUSTER)
        default_retention(self.config).validate()  # the broker's defaults: refused at start, not per topic
        self.inactivity_monitor = InactivityMonitor(self)

    def restart(self) -> RestartReport:
        """A graceful restart: every topic unloaded and loaded again (`restart.restart_broker`)."""
        return restart_broker(self)

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

    # --- namespace policies the topics follow ------------------------------------------------
    def namespace_exists(self, namespace: str) -> bool:
        """A registered namespace (``public/default`` from the start, others once created)."""
        return namespace in self.tenancy.namespaces

    def apply_namespace_policies(self, topic: PersistentTopic) -> None:
        """A topic follows its namespace's policies (else the broker's defaults): ``deduplicationEnabled`` (else
        ``brokerDeduplicationEnabled``) and the retention (else ``defaultRetention*``,
        `BrokerService.getManagedLedgerConfig`), which its ledger then keeps (``topic.ledger.retention``); called when
        the topic is created and, by the admin resources (`pulsarlab.broker.admin`), when a policy changes."""
        namespace = namespace_of(topic.name)
        policies = self.tenancy.namespaces.get(namespace)
        if policies is not None and policies.deduplication_enabled is not None:
            on = policies.deduplication_enabled
        else:
            on = self.config.flag("brokerDeduplicationEnabled")
        topic.deduplication = topic.dedup_state if on else None
        ledger = getattr(topic, "ledger", None)  # a non-persistent topic stores nothing
        if ledger is not None:
            retention = policies.retention_policies if policies is not None else None
            ledger.set_retention(retention if retention is not None else default_retention(self.config))

    def check_namespace(self, name: str) -> None:
        """A topic is only created in a registered namespace (``TopicNotFound`` on the wire)."""
        if namespace_of(name) not in self.tenancy.namespaces:
            raise NotFoundException("Namespace does not exist")

    # --- topics --------------------------------------------------------------------------------
    normalize = staticmethod(normalize_topic)
    partition_index = staticmethod(partition_index_of)

    def partition_count(self, name: str) -> int:
        """PARTITIONED_METADATA: the partitions of a partitioned topic, 0 for any other name."""
        return self.partitioned.get(name, 0)

    def _topic_map(self, name: str) -> Mapping[str, PersistentTopic]:
        return self.non_persistent_topics if name.startswith("non-persistent://") else self.topics

    def topic_exists(self, name: str) -> bool:
        """Whether a (normalised) name is a topic, a partition or a partitioned topic."""
        return name in self._topic_map(name) or name in self.partitioned

    def topics_of_namespace(self, namespace: str, mode: str = "PERSISTENT") -> list[str]:
        """GET_TOPICS_OF_NAMESPACE and ``pulsar-admin topics list``: every topic of the namespace, partitions
        included, sorted; ``mode`` PERSISTENT, NON_PERSISTENT or ALL (CommandGetTopicsOfNamespace.Mode)."""
        out: list[str] = []
        if mode in ("PERSISTENT", "ALL"):
            prefix = f"persistent://{namespace}/"
            out.extend(n for n in self.topics if n.startswith(prefix))
        if mode in ("NON_PERSISTENT", "ALL"):
            prefix = f"non-persistent://{namespace}/"
            out.extend(n for n in self.non_persistent_topics if n.startswith(prefix))
        return sorted(out)

    def existing_topic(self, name: str) -> PersistentTopic:
        """The topic (or partition) of a normalised name, without auto-creation; NotFoundException if absent."""
        t = self._topic_map(name).get(name)
        if t is None:
            raise NotFoundException("Topic not found")
        return t

    def create_topic(self, name: str) -> PersistentTopic:
        """Load a new topic (or partition) of a normalised name in a registered namespace, with its namespace's
        policies (`BrokerService.createPersistentTopic`)."""
        self.check_namespace(name)
        kind = NonPersistentTopic if name.startswith("non-persistent://") else PersistentTopic
        topic = kind(self, name, self._next_topic)
        self.apply_namespace_policies(topic)
        self._next_topic += 1
        if isinstance(topic, NonPersistentTopic):
            self.non_persistent_topics[name] = topic
        else:
            self.topics[name] = topic
        if self.events.enabled:
            self.events.append(ev.TOPIC_CREATED, self.scheduler.now(), topic=topic.id, name=name, partitions=0)
        return topic

    def ensure_topic(self, name: str) -> int:
        """Create the topic if it does not exist (auto-creation); returns its partition count (0: not partitioned)."""
        if name in self.partitioned:
            return self.partitioned[name]
        if name not in self._topic_map(name):
            self.create_topic(name)
        return 0

    def get_topic(self, name: str) -> PersistentTopic:
        topic = self._topic_map(name).get(name)
        if topic is None:
            if name in self.partitioned:
                raise PreconditionFailedException(f"{name} is a partitioned topic; use one of its partitions")
            topic = self.create_topic(name)
        return topic

    def partitions_or_self(self, name: str) -> list[str]:
        """The partitions of a partitioned topic, else the name itself."""
        n = self.partitioned.get(name, 0)
        return [f"{name}-partition-{i}" for i in range(n)] if n else [name]

    def remove_topic(self, topic: PersistentTopic, *, drop_schema: bool = False) -> None:
        """A deleted topic: its subscriptions deleted, the topic dropped, its ledgers deleted
        (`PersistentTopic.delete`, `BrokerService.removeTopicFromCache`); ``drop_schema``: its schema too (as
        `PersistentTopic.checkGC` deletes an inactive non-partitioned topic's)."""
        for sub in list(topic.subscriptions):
            topic.delete_subscription(sub)
        if isinstance(topic, NonPersistentTopic):
            del self.non_persistent_topics[topic.name]
        else:
            del self.topics[topic.name]
        if isinstance(topic, PersistentTopic):
            topic.ledger.delete_storage()
        if drop_schema:
            self.schemas.delete(topic.name)

    def drop_partitioned_metadata_if_empty(self, partition: str) -> None:
        """`tryToDeletePartitionedMetadata`: the partitioned topic's metadata and schema go once none of its
        partitions is left."""
        name = partition[: partition.rindex("-partition-")]
        n = self.partitioned.get(name)
        if n is not None and not any(p in self.topics for p in self.partitions_or_self(name)):
            del self.partitioned[name]
            self.schemas.delete(name)

    # --- schemas -------------------------------------------------------------------------------
    def add_schema(self, topic: str, schema: SchemaData) -> int:
        """A producer's schema (PRODUCER, GET_OR_CREATE_SCHEMA): its version on the topic, stored if new and
        compatible, else `IncompatibleSchemaException` (`schema_registry`)."""
        self.check_namespace(topic)
        return self.schemas.put_if_absent(topic, schema)

    def check_consumer_schema(self, topic: str, schema: SchemaData) -> None:
        """A consumer's schema (SUBSCRIBE): compatible with the topic's, or the topic's first if it is idle (no
        producers, no connected consumers, no entries)."""
        self.check_namespace(topic)
        idle = True
        for name in self.partitions_or_self(topic):
            t = self.topics.get(name)
            if t is not None and (
                t.producers
                or t.ledger.last_confirmed_entry.entry_id >= 0
                or any(s.consumers() for s in t.subscriptions.values())
            ):
                idle = False
        self.schemas.check_consumer(topic, schema, idle)

    def get_schema(self, topic: str, version: int | None = None) -> tuple[int, SchemaData] | None:
        """GET_SCHEMA (``pulsar-admin schemas get``): ``(version, schema)``, the latest without ``version``."""
        return self.schemas.get(topic, version)

    # --- what the admin resources ask of the subscriptions ---------------------------------------
    def disconnect_consumers(self, sub: PersistentSubscription, reason: str) -> None:
        """Every consumer of the subscription closed by the broker (``reason`` is their close reason) and its
        connection told (``cnx.closed_by_broker()``: a real client re-subscribes)."""
        for c in list(sub.consumers()):
            self._close_consumer(c, reason)
            closed = getattr(c.cnx, "closed_by_broker", None)
            if closed is not None:
                closed()

    def reset_subscription(
        self, sub: PersistentSubscription, position: Position, reason: str = "reset cursor"
    ) -> Position:
        """`PersistentSubscription.resetCursor`: consumers are disconnected (a real client re-subscribes), the
        cursor reads again from ``position``; ``reason`` is the consumers' close reason ("seek" for a client's
        seek)."""
        self.disconnect_consumers(sub, reason)
        read = sub.cursor.reset_cursor(position)
        if sub.dispatcher is not None:
            sub.dispatcher.on_cursor_rewound()
        return read

    # --- SEND ----------------------------------------------------------------------------------
    def register_producer(
        self,
        producer_id: int,
        name: str,
        topic: str,
        initial_subscription: str | None = None,
        *,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
        topic_epoch: int | None = None,
        on_ready: Callable[[ProducerHandle], None] | None = None,
        on_fenced: Callable[[ProducerHandle, str], None] | None = None,
        created_on: str | None = None,
        batching: bool | None = None,
    ) -> ProducerHandle:
        """PRODUCER; with ``initial_subscription`` (CommandProducer's ``initial_subscription_name``) that
        subscription is created at the earliest position of the topic if it does not exist yet. The access mode
        may refuse it (``ProducerBusy`` / ``ProducerFenced``) or queue it (``WaitForExclusive``: the handle is
        not ``ready`` until ``on_ready(handle)``); a producer fenced out later hears ``on_fenced(handle,
        reason)`` (`producer_access`). ``handle.topic.last_published_sequence_id(name)`` is what
        PRODUCER_SUCCESS reports (deduplication). The broker logs the producer's creation and, when it is
        unregistered or fenced out, its close (`producers.ProducerRegistry`): ``created_on`` is the topic the
        application created it on when that is not ``topic`` (the in-process client's partitioned producer), and
        ``batching`` whether it batches, as its client says (None: not told, as on the wire)."""
        registry = self.producers

        def fenced(handle: ProducerHandle, reason: str) -> None:
            registry.removed(handle)
            if on_fenced is not None:
                on_fenced(handle, reason)

        handle = self.get_topic(topic).add_producer(producer_id, name, access_mode, topic_epoch, on_ready, fenced)
        if initial_subscription:
            handle.topic.get_or_create_subscription(initial_subscription, InitialPosition.Earliest.name)
        registry.added(handle, created_on, batching)
        return handle

    def create_initial_subscription(self, topic: str, subscription: str) -> None:
        """CommandProducer's ``initial_subscription_name``: create the subscription (at the end of the topic, or
        of each partition) when the producer connects, if it does not exist yet."""
        n = self.ensure_topic(topic)
        for name in [f"{topic}-partition-{i}" for i in range(n)] if n else [topic]:
            self.get_topic(name).get_or_create_subscription(subscription, InitialPosition.Latest.name)

    def unregister_producer(self, handle: ProducerHandle) -> None:
        """CLOSE_PRODUCER, or the producer's connection went."""
        handle.topic.remove_producer(handle)
        self.producers.removed(handle)

    def publish(self, handle: ProducerHandle, entry: EntryData, highest_sequence_id: int | None = None) -> Position:
        """SEND: the entry's position, or ``-1:-1`` for a duplicate (deduplication)."""
        return handle.topic.publish(handle, entry, highest_sequence_id)

    # --- SUBSCRIBE -----------------------------------------------------------------------------
    def subscribe(
        self,
        cnx: ConsumerConnection,
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
        durable: bool = True,
        start_message_id: tuple[int, int] | None = None,
        read_compacted: bool = False,
    ) -> Consumer:
        """SUBSCRIBE. ``durable`` False is a reader's non-durable subscription: created here if missing (its
        cursor then starts at ``start_message_id``, a ``(ledger, entry)`` id, when given) and deleted when its
        last such consumer closes (`close_consumer`) or when the subscribe fails. ``read_compacted`` (Exclusive
        and Failover only) reads the compacted view up to the horizon (`compaction`)."""
        if read_compacted and sub_type not in (ConsumerType.Exclusive, ConsumerType.Failover):
            raise NotAllowedException("readCompacted only allowed on failover or exclusive subscriptions")
        t = self.get_topic(topic)
        created = not durable and subscription not in t.subscriptions
        start = None
        try:
            if not durable:
                sub = t.get_or_create_subscription(subscription, initial_position.name, durable=False)
                start = None if start_message_id is None else message_id_position(*start_message_id)
                if created and start is not None and not isinstance(t, NonPersistentTopic):
                    sub.cursor.reset_cursor(start)
            consumer = self._subscribe(
                t,
                cnx,
                consumer_id,
                subscription,
                sub_type,
                name,
                priority,
                initial_position,
                key_shared_policy,
                durable,
                read_compacted,
            )
            if created and read_compacted and not isinstance(t, NonPersistentTopic):
                cursor = consumer.subscription.cursor
                cursor.read_compacted = True  # the trim does not move it (advanceCursorsIfNecessary)
                if start == EARLIEST or (start is None and initial_position is InitialPosition.Earliest):
                    # NonDurableCursorImpl: a compacted reader reads from its mark-delete position's next, before
                    # every ledger, so it gets the compacted entries of ledgers the topic already trimmed
                    cursor.seek(Position(-1, 0), force=True)
            return consumer
        except PulsarError:
            if created:
                self._delete_subscription_if_present(topic, subscription)
            raise

    def _subscribe(
        self,
        t: PersistentTopic,
        cnx: ConsumerConnection,
        consumer_id: int,
        subscription: str,
        sub_type: ConsumerType,
        name: str,
        priority: int,
        initial_position: InitialPosition,
        key_shared_policy: ConsumerKeySharedPolicy | None,
        durable: bool,
        read_compacted: bool = False,
    ) -> Consumer:
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
        sub = t.get_or_create_subscription(subscription, initial_position.name)
        from pulsarlab.broker.consumer import Consumer  # loads with the first subscription (see topic.py)

        consumer = Consumer(
            consumer_id=consumer_id,
            name=name,
            priority=priority,
            sub_type=sub_type,
            subscription=sub,
            cnx=cnx,
            max_unacked_messages=self.config.integer("maxUnackedMessagesPerConsumer"),
            key_shared_mode=ks_mode,
            allow_out_of_order_delivery=ooo,
            ranges=ranges,
            connected_since=self.scheduler.now(),
            durable=durable,
        )
        consumer.read_compacted = read_compacted
        try:
            sub.add_consumer(consumer)
        except Exception:
            if not existed and not sub.consumers():
                t.delete_subscription(subscription)
            raise
        if self.events.enabled:
            self.events.append(
                ev.CONSUMER_SUBSCRIBED,
                self.scheduler.now(),
                consumer=consumer_id,
                name=name,
                topic=t.name,
                subscription=subscription,
                sub_type=sub_type.wire,
                priority=priority,
            )
        return consumer

    # --- FLOW / ACK / REDELIVER / CLOSE --------------------------------------------------------
    def flow(self, consumer: Consumer, permits: int) -> None:
        if not consumer.closed:
            consumer.flow_permits(permits)

    def ack(self, consumer: Consumer, cmd: AckCommand) -> None:
        if not consumer.closed:
            consumer.subscription.message_acked(consumer, cmd)

    def redeliver_unacknowledged(self, consumer: Consumer, positions: Sequence[tuple[int, int]] | None = None) -> None:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES (`ServerCnx.handleRedeliverUnacknowledged`).

        ``positions`` None (or empty: a command without message ids) asks for everything the consumer has
        pending. A list of ``(ledger, entry)`` asks for those among the consumer's pending acks: Shared and
        Key_Shared put only those in the replay set and count a redelivery for each; Exclusive and Failover
        (no individual acks) redeliver everything unacked by rewinding the cursor, whatever the ids.
        """
        if consumer.closed:
            return
        d = consumer.subscription.attached_dispatcher
        events = self.events if self.events.enabled else None
        ids = _positions(positions) if positions else None
        if ids and consumer.individual_ack_mode:
            if events is not None:
                pending = consumer.pending_acks
                held = sum(1 for p in ids if pending is not None and p in pending)
                text = json.dumps([list(p) for p in ids], separators=(",", ":"))
                events.append_row(
                    REDELIVER_IDS, self.scheduler.now(), consumer.id, len(ids), held, events.text_id(text)
                )
            d.redeliver_unacknowledged_messages(consumer, ids)
            return
        if events is not None:
            n = len(consumer.pending_acks) if consumer.pending_acks is not None else -1
            events.append_row(ev.REDELIVER_REQUESTED, self.scheduler.now(), consumer.id, n)
        d.redeliver_unacknowledged_messages(consumer)

    # --- SEEK ----------------------------------------------------------------------------------
    def reset_cursor(
        self, consumer: Consumer, position: Position | tuple[int, int] | None = None, *, publish_time: int | None = None
    ) -> Position:
        """SEEK (`PersistentSubscription.resetCursor`): every consumer of the subscription is disconnected
        (``cnx.closed_by_broker()``: a real client re-subscribes), then the cursor reads again from ``position``
        (a `Position`, or a client's ``(ledger, entry)`` message id: see `message_id_position`), or - by
        ``publish_time`` - from the entry after the newest one published strictly before it, i.e. the first entry
        published at or after it (the first entry when none is). Returns the new read position."""
        sub = consumer.subscription
        if isinstance(sub.topic, NonPersistentTopic):
            raise NotAllowedException("Seek operation not supported for non-persistent topics")
        if isinstance(position, tuple):
            position = message_id_position(*position)
        if publish_time is not None:
            position = position_after_publish_time(sub.topic, publish_time)
        if position is None:
            raise IllegalArgumentException("reset_cursor needs a position or a publish time")
        return self.reset_subscription(sub, position, "seek")

    def close_consumer(self, consumer: Consumer, reason: str = "closed") -> None:
        """CLOSE_CONSUMER (or the consumer's connection went): the consumer leaves its subscription, and a
        reader's non-durable subscription left without consumers is deleted."""
        self._close_consumer(consumer, reason)
        if not consumer.durable:
            sub = consumer.subscription
            if not sub.consumers():
                self._delete_subscription_if_present(sub.topic.name, sub.name)

    def _delete_subscription_if_present(self, topic: str, subscription: str) -> None:
        t = self._topic_map(topic).get(topic)
        if t is not None and subscription in t.subscriptions:
            t.delete_subscription(subscription)

    def _close_consumer(self, consumer: Consumer, reason: str) -> None:
        if consumer.closed:
            return
        consumer.closed = True
        consumer.cnx_active = False
        # -1: Exclusive / Failover keep no pending acks per consumer (as in redeliver_requested)
        pending = len(consumer.pending_acks) if consumer.pending_acks is not None else -1
        consumer.subscription.remove_consumer(consumer)
        if self.events.enabled:
            self.events.append(
                ev.CONSUMER_CLOSED, self.scheduler.now(), consumer=consumer.id, reason=reason, pending_acks=pending
            )

    def unsubscribe(self, consumer: Consumer) -> None:
        sub = consumer.subscription
        consumers = sub.consumers()
        d = sub.dispatcher
        active = getattr(d, "active_consumer", consumer)
        if len(consumers) != 1 or consumers[0] is not consumer or active is not consumer:
            raise ServerMetadataException("Unconnected or shared consumer attempting to unsubscribe")
        self._close_consumer(consumer, "unsubscribed")
        sub.topic.delete_subscription(sub.name)

    # --- what a connection asks about its consumer ----------------------------------------------
    def get_last_message_id(self, consumer: Consumer) -> LastMessageId:
        """GET_LAST_MESSAGE_ID (`ServerCnx.handleGetLastMessageId`) for a consumer's topic and subscription."""
        sub = consumer.subscription
        if isinstance(sub.topic, NonPersistentTopic):
            raise NotAllowedException("GetLastMessageId is not supported for non-persistent topics")
        ml = sub.topic.ledger
        last = ml.last_confirmed_entry
        md = sub.cursor.mark_delete_position
        partition = sub.topic.partition_index
        if last.entry_id < 0:
            return LastMessageId(-1, -1, partition, -1, md.ledger_id, md.entry_id)
        if not ml.ledger_exists(last.ledger_id):  # trimmed: the last id without its batch index (ledgerExists)
            return LastMessageId(last.ledger_id, last.entry_id, partition, -1, md.ledger_id, md.entry_id)
        n = ml.read_entry(last).metadata.num_messages_in_batch
        return LastMessageId(
            last.ledger_id,
            last.entry_id,
            partition,
            n - 1 if n is not None and n > 0 else -1,
            md.ledger_id,
            md.entry_id,
        )

    def consumer_stats(self, consumer: Consumer) -> ConsumerStatsResult:
        """CONSUMER_STATS (`ServerCnx.handleConsumerStats`): the consumer's counters and its subscription's
        backlog."""
        sub = consumer.subscription
        return ConsumerStatsResult(
            consumer_name=consumer.name,
            available_permits=max(consumer.available_permits, 0),
            unacked_messages=consumer.unacked_messages,
            blocked_consumer_on_unacked_msgs=consumer.blocked,
            connected_since=consumer.stats()["connectedSince"],
            type=sub.attached_dispatcher.type_name,
            msg_backlog=0
            if isinstance(sub.topic, NonPersistentTopic)
            else sub.cursor.number_of_entries_in_backlog(False),
        )


def _positions(positions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ``(ledger, entry)`` pairs of a redeliver command, checked (a clear error for anything else)."""
    out = []
    for p in positions:
        if (
            not isinstance(p, (tuple, list))
            or len(p) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in p)
        ):
            raise TypeError(f"a position to redeliver is a (ledger, entry) pair of ints, not {p!r}")
        out.append((p[0], p[1]))
    return out
