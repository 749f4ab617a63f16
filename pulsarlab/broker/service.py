"""The broker: its topics and the commands clients send it.

Models `BrokerService` (topic lookup and auto-creation, partitioned-topic metadata) and the command handling of
`ServerCnx` (docs/architecture.md): SUBSCRIBE, FLOW, SEND, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES and
CLOSE_CONSUMER arrive as method calls with the command's fields; MESSAGE and ACTIVE_CONSUMER_CHANGE go back through
the consumer's ``cnx`` (the client-side object). These methods are the only way in for the lab's client, the
binary-protocol front end (`pulsarlab.serve`, which also asks for GET_LAST_MESSAGE_ID, CONSUMER_STATS, readers'
non-durable subscriptions, SEEK and GET_TOPICS_OF_NAMESPACE) and ``lab.admin``; what they return to a caller
outside the broker is a handle to pass back or a read-only result. `client_error_code` maps the model's
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
from typing import TYPE_CHECKING, Any, Sequence

from pulsarlab.broker.compaction import COMPACTION_SUBSCRIPTION, CompactionStatus
from pulsarlab.broker.compaction import compact as compact_topic
from pulsarlab.broker.delayed.bucket.snapshot import InMemoryBucketSnapshotStorage
from pulsarlab.broker.delayed.factory import load_delayed_delivery_tracker_factory
from pulsarlab.broker.inactive_topics import InactivityMonitor
from pulsarlab.broker.non_persistent import NonPersistentTopic
from pulsarlab.broker.restart import RestartReport, restart_broker
from pulsarlab.broker.schema_registry import SchemaData, SchemaRegistry
from pulsarlab.broker.tenancy import STANDALONE_CLUSTER, NamespacePolicies, Tenancy, TenantInfo, valid_name
from pulsarlab.broker.topic import PersistentTopic, ProducerHandle, partition_index_of
from pulsarlab.errors import (
    ConsumerAssignException,
    ConsumerBusyException,
    IllegalArgumentException,
    IncompatibleSchemaException,
    NamingException,
    NotAllowedException,
    ProducerBusyException,
    ProducerFencedException,
    PulsarError,
    ServerMetadataException,
    SubscriptionBusyException,
)
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue.redelivery import REDELIVER_IDS
from pulsarlab.managed_ledger.entry_cache import EntryCacheManager
from pulsarlab.managed_ledger.exceptions import ManagedLedgerException
from pulsarlab.managed_ledger.ledger import LedgerIdAllocator
from pulsarlab.managed_ledger.position import EARLIEST, LATEST, Position
from pulsarlab.managed_ledger.retention import RetentionPolicies
from pulsarlab.protocol.acks import AckCommand
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition, KeySharedMode

if TYPE_CHECKING:
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.lab import Lab


class NotFoundException(PulsarError):
    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$NotFoundException"


class ConflictException(PulsarError):
    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$ConflictException"


class PreconditionFailedException(PulsarError):
    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$PreconditionFailedException"


class BadRequestException(PulsarError):
    """What pulsar-admin raises for a 400 answer (a `PulsarAdminException` caused by JAX-RS's `BadRequestException`),
    e.g. an invalid retention policy."""

    java_class = "org.apache.pulsar.client.admin.PulsarAdminException"


class MethodNotAllowedException(PulsarError):
    """An admin operation Pulsar refuses for this kind of resource (HTTP 405)."""

    java_class = "org.apache.pulsar.client.admin.PulsarAdminException$NotAllowedException"


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
        self.topics: dict[str, PersistentTopic] = {}
        self.non_persistent_topics: dict[str, NonPersistentTopic] = {}  # apart: nothing stored to show or restart
        self.partitioned: dict[str, int] = {}
        self.schemas = SchemaRegistry(str(self.config.get("schemaCompatibilityStrategy", "FULL")))
        self._next_producer = 0
        self._next_consumer = 0
        self._next_subscription = 0
        self._next_topic = 0
        self.tenancy = Tenancy.standalone(STANDALONE_CLUSTER)
        self.retention_policies("public/default").validate()  # the broker's defaults: refused at start, not per topic
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

    def deduplication_enabled(self, namespace: str) -> bool:
        """The namespace's ``deduplicationEnabled``, else the broker's ``brokerDeduplicationEnabled``."""
        policies = self.tenancy.namespaces.get(namespace)
        if policies is not None and policies.deduplication_enabled is not None:
            return policies.deduplication_enabled
        return bool(self.config.get("brokerDeduplicationEnabled", False))

    def _apply_deduplication(self, topic: PersistentTopic) -> None:
        on = self.deduplication_enabled(namespace_of(topic.name))
        topic.deduplication = topic.dedup_state if on else None

    def retention_policies(self, namespace: str) -> RetentionPolicies:
        """The retention a topic of the namespace follows: the namespace's policy, else the broker's defaults
        (`BrokerService.getManagedLedgerConfig`)."""
        policies = self.tenancy.namespaces.get(namespace)
        if policies is not None and policies.retention_policies is not None:
            return policies.retention_policies
        return RetentionPolicies(
            self.config.get("defaultRetentionTimeInMinutes", 0), self.config.get("defaultRetentionSizeInMB", 0)
        )

    def topic_retention(self, name: str) -> RetentionPolicies:
        """The retention a topic (by name) follows."""
        return self.retention_policies(namespace_of(name))

    def _apply_retention(self, topic: PersistentTopic) -> None:
        ledger = getattr(topic, "ledger", None)  # a non-persistent topic stores nothing
        if ledger is not None:
            ledger.set_retention(self.retention_policies(namespace_of(topic.name)))

    def _check_namespace(self, name: str) -> None:
        """A topic is only created in a registered namespace (``TopicNotFound`` on the wire)."""
        if namespace_of(name) not in self.tenancy.namespaces:
            raise NotFoundException("Namespace does not exist")

    # --- topics --------------------------------------------------------------------------------
    normalize = staticmethod(normalize_topic)
    partition_index = staticmethod(partition_index_of)

    def partition_count(self, name: str) -> int:
        """PARTITIONED_METADATA: the partitions of a partitioned topic, 0 for any other name."""
        return self.partitioned.get(name, 0)

    def _topic_map(self, name: str) -> dict[str, Any]:
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

    def partitioned_topics_of_namespace(self, namespace: str) -> list[str]:
        """``pulsar-admin topics list-partitioned-topics``: the partitioned topics of the namespace, sorted."""
        prefix = f"persistent://{namespace}/"
        return sorted(n for n in self.partitioned if n.startswith(prefix))

    def existing_topic(self, name: str) -> PersistentTopic:
        """The topic (or partition) of a normalised name, without auto-creation; NotFoundException if absent."""
        t = self._topic_map(name).get(name)
        if t is None:
            raise NotFoundException("Topic not found")
        return t

    def subscriptions_of(self, name: str) -> list[str]:
        """``pulsar-admin topics subscriptions``: a topic's subscriptions (the union over the partitions of a
        partitioned topic, sorted)."""
        if name in self.partitioned:
            subs: set[str] = set()
            for partition in self._partitions_or_self(name):
                if partition in self.topics:  # a partition deleted for inactivity is created again on use
                    subs.update(self.topics[partition].subscriptions)
            return sorted(subs)
        return list(self.existing_topic(name).subscriptions)

    def topic_stats(self, name: str) -> dict[str, Any]:
        """``pulsar-admin topics stats`` (`TopicStatsImpl`) of a topic or partition."""
        return self.existing_topic(name).stats()

    def topic_stats_internal(self, name: str) -> dict[str, Any]:
        """``pulsar-admin topics stats-internal`` (`PersistentTopicInternalStats`) of a topic or partition."""
        return self.existing_topic(name).stats_internal()

    def _create_topic(self, name: str, partitions: int = 0) -> PersistentTopic:
        self._check_namespace(name)
        kind = NonPersistentTopic if name.startswith("non-persistent://") else PersistentTopic
        topic = kind(self, name, self._next_topic)
        self._apply_deduplication(topic)
        self._apply_retention(topic)
        self._next_topic += 1
        self._topic_map(name)[name] = topic
        if self.events.enabled:
            self.events.append(ev.TOPIC_CREATED, self.scheduler.now(), topic=topic.id, name=name, partitions=partitions)
        return topic

    def ensure_topic(self, name: str) -> int:
        """Create the topic if it does not exist (auto-creation); returns its partition count (0: not partitioned)."""
        if name in self.partitioned:
            return self.partitioned[name]
        if name not in self._topic_map(name):
            self._create_topic(name)
        return 0

    def get_topic(self, name: str) -> PersistentTopic:
        topic = self._topic_map(name).get(name)
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
            raise PreconditionFailedException("Partitioned Topic Name should not contain '-partition-'")
        self._check_namespace(name)
        self.partitioned[name] = partitions
        if self.events.enabled:
            self.events.append(ev.TOPIC_CREATED, self.scheduler.now(), topic=-1, name=name, partitions=partitions)
        for i in range(partitions):
            self._create_topic(f"{name}-partition-{i}")

    def create_non_partitioned_topic(self, name: str) -> None:
        if name in self.partitioned or name in self.topics:
            raise ConflictException("This topic already exists")
        self._create_topic(name)

    def _partitions_or_self(self, name: str) -> list[str]:
        n = self.partitioned.get(name, 0)
        return [f"{name}-partition-{i}" for i in range(n)] if n else [name]

    def _refuse_if_in_use(self, topic: PersistentTopic) -> None:
        """`PersistentTopic.delete` without force: a topic with producers or connected consumers stays."""
        if topic.producers or any(sub.consumers() for sub in topic.subscriptions.values()):
            raise PreconditionFailedException("Topic has active producers/subscriptions")

    def _drop_topic(self, topic: PersistentTopic) -> None:
        for sub in list(topic.subscriptions):
            topic.delete_subscription(sub)
        del self._topic_map(topic.name)[topic.name]
        if isinstance(topic, PersistentTopic):
            topic.ledger.delete_storage()

    def drop_inactive_topic(self, topic: PersistentTopic) -> None:
        """`PersistentTopic.checkGC`'s delete: the topic with its subscriptions, storage and (unless it is a
        partition) schema."""
        self._drop_topic(topic)
        if topic.partition_index < 0:
            self.schemas.delete(topic.name)

    def drop_partitioned_metadata_if_empty(self, partition: str) -> None:
        """`tryToDeletePartitionedMetadata`: the partitioned topic's metadata and schema go once none of its
        partitions is left."""
        name = partition[: partition.rindex("-partition-")]
        n = self.partitioned.get(name)
        if n is not None and not any(p in self.topics for p in self._partitions_or_self(name)):
            del self.partitioned[name]
            self.schemas.delete(name)

    def delete_topic(self, name: str) -> None:
        """``pulsar-admin topics delete``: a non-partitioned topic (or one partition) with its subscriptions;
        refused while it has producers or connected consumers (no ``force`` in the model)."""
        topic = self.existing_topic(name)
        self._refuse_if_in_use(topic)
        self._drop_topic(topic)

    def delete_partitioned_topic(self, name: str) -> None:
        """``pulsar-admin topics delete-partitioned-topic``: the metadata and every partition, refused while
        any partition is in use."""
        if name not in self.partitioned:
            raise NotFoundException("Partitioned topic does not exist")
        parts = [self.topics[p] for p in self._partitions_or_self(name) if p in self.topics]
        for topic in parts:
            self._refuse_if_in_use(topic)
        for topic in parts:
            self._drop_topic(topic)
        del self.partitioned[name]

    def update_partitions(self, name: str, partitions: int) -> None:
        """``pulsar-admin topics update-partitioned-topic``: more partitions only (new ones start empty)."""
        if name not in self.partitioned:
            raise NotFoundException("Partitioned topic does not exist")
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
            raise PreconditionFailedException("The number of partitions must be more than 0")
        current = self.partitioned[name]
        if partitions <= current:
            raise ConflictException(
                f"Number of partitions can only be increased, current {current}, requested {partitions}"
            )
        for i in range(current, partitions):
            self._create_topic(f"{name}-partition-{i}")
        self.partitioned[name] = partitions

    def create_subscription(self, name: str, subscription: str, position: Position | tuple[int, int]) -> None:
        """``pulsar-admin topics create-subscription``: a durable subscription at ``position`` (earliest,
        latest or an entry; on every partition of a partitioned topic); 409 if it exists."""
        if not subscription:
            raise PreconditionFailedException("Subscription name is not valid")
        if isinstance(position, tuple):
            position = message_id_position(*position)
        topics = [self.existing_topic(p) for p in self._partitions_or_self(name)]
        if any(subscription in t.subscriptions for t in topics):
            raise ConflictException("Subscription already exists for topic")
        for t in topics:
            initial = InitialPosition.Earliest.name if position == EARLIEST else InitialPosition.Latest.name
            sub = t.get_or_create_subscription(subscription, initial)
            if position not in (EARLIEST, LATEST):
                sub.cursor.reset_cursor(position)

    def delete_subscription(self, name: str, subscription: str, force: bool = False) -> None:
        """``pulsar-admin topics unsubscribe``: refused while consumers are connected unless ``force``, which
        disconnects them first (a real client then re-subscribes, as with Pulsar)."""
        topics = [self.existing_topic(p) for p in self._partitions_or_self(name)]
        subs = [t.subscriptions[subscription] for t in topics if subscription in t.subscriptions]
        if not subs:
            raise NotFoundException("Subscription not found")
        if not force and any(s.consumers() for s in subs):
            raise PreconditionFailedException("Subscription has active connected consumers")
        for s in subs:
            for c in list(s.consumers()):
                self._close_consumer(c, "subscription deleted")
                closed = getattr(c.cnx, "closed_by_broker", None)
                if closed is not None:
                    closed()
            self._delete_subscription_if_present(s.topic.name, s.name)

    # --- schemas -------------------------------------------------------------------------------
    def add_schema(self, topic: str, schema: SchemaData) -> int:
        """A producer's schema (PRODUCER, GET_OR_CREATE_SCHEMA): its version on the topic, stored if new and
        compatible, else `IncompatibleSchemaException` (`schema_registry`)."""
        self._check_namespace(topic)
        return self.schemas.put_if_absent(topic, schema)

    def check_consumer_schema(self, topic: str, schema: SchemaData) -> None:
        """A consumer's schema (SUBSCRIBE): compatible with the topic's, or the topic's first if it is idle (no
        producers, no connected consumers, no entries)."""
        self._check_namespace(topic)
        idle = True
        for name in self._partitions_or_self(topic):
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

    # --- compaction ----------------------------------------------------------------------------
    def compact(self, name: str) -> None:
        """``pulsar-admin topics compact`` (every partition of a partitioned topic): runs at once
        (`compaction.compact`); 409 "Compaction already in progress" cannot happen in the model."""
        retain = bool(self.config.get("topicCompactionRetainNullKey", False))
        for t in [self.existing_topic(p) for p in self._partitions_or_self(name)]:
            t.compaction_status = CompactionStatus.RUNNING
            try:
                t.compacted = compact_topic(t, retain)
            except Exception:
                t.compaction_status = CompactionStatus.ERROR
                raise
            t.compaction_status = CompactionStatus.SUCCESS
            t.compaction_succeeded_at = self.scheduler.now_ms
            t.ledger.hold(COMPACTION_SUBSCRIPTION, t.compacted.horizon)  # the compactor's cursor acks to the horizon

    def compaction_status(self, name: str) -> dict[str, str]:
        """``pulsar-admin topics compaction-status``: `LongRunningProcessStatus` as JSON (``status``,
        ``lastError``); over the partitions of a partitioned topic, the least advanced one."""
        order = [CompactionStatus.ERROR, CompactionStatus.NOT_RUN, CompactionStatus.RUNNING, CompactionStatus.SUCCESS]
        states = [self.existing_topic(p).compaction_status for p in self._partitions_or_self(name)]
        status = min(states, key=order.index)
        return {"status": status.value, "lastError": ""}

    # --- tenants and namespaces (admin) -------------------------------------------------------
    def known_namespaces(self) -> set[str]:
        """Registered namespaces and every namespace a topic lives in (``tenant/ns``)."""
        out = set(self.tenancy.namespaces)
        for name in (*self.topics, *self.partitioned):
            tenant, namespace = name.split("://", 1)[1].split("/")[:2]
            out.add(f"{tenant}/{namespace}")
        return out

    def known_tenants(self) -> set[str]:
        return set(self.tenancy.tenants) | {ns.split("/")[0] for ns in self.known_namespaces()}

    def create_tenant(
        self, tenant: str, admin_roles: Sequence[str] = (), allowed_clusters: Sequence[str] = (STANDALONE_CLUSTER,)
    ) -> None:
        """``pulsar-admin tenants create`` (`TenantsBase.createTenant`)."""
        clusters = list(allowed_clusters)
        if not clusters or any(not isinstance(c, str) or not c.strip() for c in clusters):
            raise PreconditionFailedException("Clusters can not be empty")
        if any(c != STANDALONE_CLUSTER for c in clusters):
            raise PreconditionFailedException(f"Clusters do not exist: {sorted(set(clusters) - {STANDALONE_CLUSTER})}")
        if not valid_name(tenant):
            raise PreconditionFailedException("Tenant name is not valid")
        if tenant in self.known_tenants():
            raise ConflictException("Tenant already exist")
        self.tenancy.tenants[tenant] = TenantInfo(tuple(admin_roles), tuple(clusters))

    def tenant_info(self, tenant: str) -> TenantInfo:
        """``pulsar-admin tenants get``; a tenant known only from its topics has the standalone cluster."""
        info = self.tenancy.tenants.get(tenant)
        if info is not None:
            return info
        if tenant in self.known_tenants():
            return TenantInfo((), (STANDALONE_CLUSTER,))
        raise NotFoundException("Tenant does not exist")

    def delete_tenant(self, tenant: str) -> None:
        """``pulsar-admin tenants delete`` (no ``force``): refused while the tenant has namespaces."""
        if tenant not in self.known_tenants():
            raise NotFoundException("Tenant doesn't exist")
        if any(ns.split("/")[0] == tenant for ns in self.known_namespaces()):
            raise ConflictException("The tenant still has active namespaces")
        self.tenancy.tenants.pop(tenant, None)

    def create_namespace(self, namespace: str) -> None:
        """``pulsar-admin namespaces create`` (`NamespacesBase.internalCreateNamespace`)."""
        parts = namespace.split("/") if isinstance(namespace, str) else []
        if len(parts) != 2 or not all(valid_name(p) for p in parts):
            raise PreconditionFailedException("Namespace name is not valid")
        if parts[0] not in self.known_tenants():
            raise NotFoundException("Tenant does not exist")
        if namespace in self.known_namespaces():
            raise ConflictException("Namespace already exists")
        self.tenancy.namespaces[namespace] = NamespacePolicies()

    def delete_namespace(self, namespace: str) -> None:
        """``pulsar-admin namespaces delete`` (no ``force``): refused while it has topics."""
        if namespace not in self.known_namespaces():
            raise NotFoundException("Namespace does not exist")
        if self.topics_of_namespace(namespace) or self.partitioned_topics_of_namespace(namespace):
            raise ConflictException("Cannot delete non empty namespace")
        self.tenancy.namespaces.pop(namespace, None)

    def _namespace_policies(self, namespace: str) -> NamespacePolicies:
        if namespace not in self.known_namespaces():
            raise NotFoundException("Namespace does not exist")
        return self.tenancy.namespaces.setdefault(namespace, NamespacePolicies())

    def deduplication(self, namespace: str) -> bool | None:
        """``namespaces get-deduplication``: the namespace's ``deduplicationEnabled`` (None: not set)."""
        return self._namespace_policies(namespace).deduplication_enabled

    def set_deduplication(self, namespace: str, enabled: bool | None) -> None:
        """``namespaces set-deduplication`` (True/False) or ``remove-deduplication`` (None)."""
        if enabled is not None and not isinstance(enabled, bool):
            raise IllegalArgumentException(f"deduplication is true, false or None, not {enabled!r}")
        self._namespace_policies(namespace).deduplication_enabled = enabled
        prefix = f"persistent://{namespace}/"
        for name, topic in self.topics.items():  # the topics follow at once
            if name.startswith(prefix):
                self._apply_deduplication(topic)

    def retention(self, namespace: str) -> RetentionPolicies | None:
        """``namespaces get-retention``: the namespace's `RetentionPolicies` (None: not set)."""
        return self._namespace_policies(namespace).retention_policies

    def set_retention(self, namespace: str, policy: RetentionPolicies | None) -> None:
        """``namespaces set-retention`` (a policy) or ``remove-retention`` (None; `NamespacesBase.internalSetRetention`
        with null): validated as `validateRetentionPolicies` does (BadRequestException with Pulsar's text); the
        namespace's topics follow at once, and their next trim applies it."""
        if policy is not None:
            if not isinstance(policy, RetentionPolicies):
                raise BadRequestException(f"Invalid retention policy: {policy!r}")
            try:
                policy.validate()
            except ValueError as e:
                raise BadRequestException(str(e)) from None
        self._namespace_policies(namespace).retention_policies = policy
        prefix = f"persistent://{namespace}/"
        for name, topic in self.topics.items():
            if name.startswith(prefix):
                self._apply_retention(topic)

    # --- subscription cursor moves (admin) ----------------------------------------------------
    def _subscriptions_named(self, name: str, subscription: str) -> list[Any]:
        """The subscription on the topic, or on each partition of a partitioned topic that has it."""
        topics = [self.existing_topic(p) for p in self._partitions_or_self(name)]
        subs = [t.subscriptions[subscription] for t in topics if subscription in t.subscriptions]
        if not subs:
            raise NotFoundException("Subscription not found")
        return subs

    def skip_messages(self, name: str, subscription: str, n: int) -> None:
        """``topics skip`` (`PersistentSubscription.skipMessages`): the next ``n`` unacknowledged entries are
        acknowledged; consumers stay connected. Refused on a partitioned topic, as Pulsar does."""
        if name in self.partitioned:
            raise MethodNotAllowedException("Skip messages on a partitioned topic is not allowed")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise PreconditionFailedException(f"The number of messages to skip must be >= 0, got {n!r}")
        for sub in self._subscriptions_named(name, subscription):
            sub.cursor.skip_entries(n)

    def skip_all(self, name: str, subscription: str) -> None:
        """``topics clear-backlog`` / ``skip-all`` (`PersistentSubscription.clearBacklog`): everything published
        so far is acknowledged (on every partition of a partitioned topic), and the dispatcher drops its delayed
        messages (`clearDelayedMessages`: a bucket tracker deletes its snapshots and their cursor properties)."""
        for sub in self._subscriptions_named(name, subscription):
            sub.cursor.clear_backlog()
            clear_delayed = getattr(sub.dispatcher, "clear_delayed_messages", None)  # Shared and Key_Shared only
            if clear_delayed is not None:
                clear_delayed()

    def expire_messages(self, name: str, subscription: str, seconds: int) -> None:
        """``topics expire-messages`` (`PersistentMessageExpiryMonitor.expireMessages`): the mark-delete position
        moves to the newest entry whose publish time is more than ``seconds`` before now (lab clock)."""
        if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            raise PreconditionFailedException(f"The expiry time must be >= 0 seconds, got {seconds!r}")
        now = self.scheduler.now()
        for sub in self._subscriptions_named(name, subscription):
            cursor = sub.cursor
            found = self._newest_published_before(sub.topic, now - seconds * 1000, cursor.mark_delete_position)
            if found is not None:
                cursor.advance_mark_delete(found)

    @staticmethod
    def _newest_published_before(topic: PersistentTopic, cutoff: int, after: Position) -> Position | None:
        """The newest entry after ``after`` with ``publish_time + ttl < now`` (`MessageImpl.isEntryExpired`)."""
        ml = topic.ledger
        stop = (after.ledger_id, after.entry_id)
        for info in reversed(list(ml.ledgers)):
            if info.ledger_id < after.ledger_id:
                break
            entries = ml.entries_of(info.ledger_id)
            for e in range(len(entries) - 1, -1, -1):
                if (info.ledger_id, e) <= stop:
                    return None
                if entries[e].metadata.publish_time < cutoff:
                    return ml.position_of(info.ledger_id, e)
        return None

    def _reset_subscription(self, sub: Any, position: Position, reason: str = "reset cursor") -> Position:
        """`PersistentSubscription.resetCursor`: consumers are disconnected (a real client re-subscribes), the
        cursor reads again from ``position``; ``reason`` is the consumers' close reason ("seek" for a client's
        seek)."""
        for c in list(sub.consumers()):
            self._close_consumer(c, reason)
            closed = getattr(c.cnx, "closed_by_broker", None)
            if closed is not None:
                closed()
        read = sub.cursor.reset_cursor(position)
        if sub.dispatcher is not None:
            sub.dispatcher.on_cursor_rewound()
        return read

    def reset_cursor_to_time(self, name: str, subscription: str, timestamp: int) -> None:
        """``topics reset-cursor --time``: each partition's subscription reads again from the first entry
        published at or after ``timestamp`` (lab clock, ms)."""
        if not isinstance(timestamp, int) or isinstance(timestamp, bool):
            raise PreconditionFailedException(f"The timestamp must be an integer (ms), got {timestamp!r}")
        for sub in self._subscriptions_named(name, subscription):
            self._reset_subscription(sub, self._position_after_publish_time(sub.topic, timestamp))

    def reset_cursor_to_position(
        self, name: str, subscription: str, message_id: tuple[int, int], excluded: bool = False
    ) -> None:
        """``topics reset-cursor --messageId``: read again from the message id (``excluded``: from the entry
        after it). Refused on a partitioned topic (reset one of its partitions)."""
        if name in self.partitioned:
            raise MethodNotAllowedException("Reset-cursor at position is not allowed for partitioned-topic")
        position = message_id_position(*message_id)
        for sub in self._subscriptions_named(name, subscription):
            target = position
            if excluded and position not in (EARLIEST, LATEST):
                target = sub.topic.ledger.next_valid_position(position)
            self._reset_subscription(sub, target)

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
        on_ready: Any = None,
        on_fenced: Any = None,
    ) -> ProducerHandle:
        """PRODUCER; with ``initial_subscription`` (CommandProducer's ``initial_subscription_name``) that
        subscription is created at the earliest position of the topic if it does not exist yet. The access mode
        may refuse it (``ProducerBusy`` / ``ProducerFenced``) or queue it (``WaitForExclusive``: the handle is
        not ``ready`` until ``on_ready(handle)``); a producer fenced out later hears ``on_fenced(handle,
        reason)`` (`producer_access`). ``handle.topic.last_published_sequence_id(name)`` is what
        PRODUCER_SUCCESS reports (deduplication)."""
        handle = self.get_topic(topic).add_producer(producer_id, name, access_mode, topic_epoch, on_ready, on_fenced)
        if initial_subscription:
            handle.topic.get_or_create_subscription(initial_subscription, InitialPosition.Earliest.name)
        return handle

    def create_initial_subscription(self, topic: str, subscription: str) -> None:
        """CommandProducer's ``initial_subscription_name``: create the subscription (at the end of the topic, or
        of each partition) when the producer connects, if it does not exist yet."""
        n = self.ensure_topic(topic)
        for name in [f"{topic}-partition-{i}" for i in range(n)] if n else [topic]:
            self.get_topic(name).get_or_create_subscription(subscription, InitialPosition.Latest.name)

    def unregister_producer(self, handle: ProducerHandle) -> None:
        handle.topic.remove_producer(handle)

    def publish(self, handle: ProducerHandle, entry: Any, highest_sequence_id: int | None = None):
        """SEND: the entry's position, or ``-1:-1`` for a duplicate (deduplication)."""
        return handle.topic.publish(handle, entry, highest_sequence_id)

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
        cnx: Any,
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
            max_unacked_messages=self.config["maxUnackedMessagesPerConsumer"],
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
        d = consumer.subscription.dispatcher
        events = self.events if self.events.enabled else None
        ids = _positions(positions) if positions else None
        if ids and consumer.individual_ack_mode:
            if events is not None:
                pending = consumer.pending_acks
                held = sum(1 for p in ids if p in pending)
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
            position = self._position_after_publish_time(sub.topic, publish_time)
        if position is None:
            raise IllegalArgumentException("reset_cursor needs a position or a publish time")
        return self._reset_subscription(sub, position, "seek")

    @staticmethod
    def _position_after_publish_time(topic: PersistentTopic, publish_time: int) -> Position:
        """`PersistentMessageFinder`: the position after the newest entry published before ``publish_time``
        (`MessageImpl.isEntryPublishedEarlierThan` is ``entryTimestamp < timestamp``), so an entry published in
        that very millisecond is read again."""
        ml = topic.ledger
        for info in reversed(list(ml.ledgers)):
            entries = ml.entries_of(info.ledger_id)
            for e in range(len(entries) - 1, -1, -1):
                if entries[e].metadata.publish_time < publish_time:
                    return Position(info.ledger_id, e + 1)
        return ml.first_position()

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
            type=sub.dispatcher.type_name,
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
