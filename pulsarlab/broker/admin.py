"""The broker's admin resources: what pulsar-admin asks of the broker beside the client commands.

Models the REST resources of Pulsar's web service as `PersistentTopicsBase`, `TenantsBase` and `NamespacesBase`
implement them over the `BrokerService` (Pulsar keeps them apart from the binary protocol's `ServerCnx` and
`BrokerService` the same way): topics and partitioned topics created, listed, deleted and grown; subscriptions
created and deleted; stats; compaction; tenants and namespaces with their deduplication and retention policies;
the cursor moves (skip, clear-backlog, expire, reset-cursor). `BrokerAdmin` is what ``lab.admin``
(`pulsarlab.admin`, pulsar-admin's JSON shapes) and through it the admin REST API (`pulsarlab.serve.admin_http`)
call; it reaches topics and subscriptions only through the broker's command surface (`BrokerService`). Errors
are pulsar-admin's exceptions (`pulsarlab.errors`: ``NotFoundException``, ``ConflictException``, ...) with
Pulsar's texts. Simplifies: one cluster, no ``force`` on deletions of topics, tenants and namespaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pulsarlab.broker.compaction import COMPACTION_SUBSCRIPTION, CompactionStatus
from pulsarlab.broker.compaction import compact as compact_topic
from pulsarlab.broker.service import message_id_position, position_after_publish_time
from pulsarlab.broker.tenancy import STANDALONE_CLUSTER, NamespacePolicies, TenantInfo, valid_name
from pulsarlab.broker.topic import PersistentTopic, partition_index_of
from pulsarlab.errors import (
    BadRequestException,
    ConflictException,
    IllegalArgumentException,
    MethodNotAllowedException,
    NotFoundException,
    PreconditionFailedException,
)
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.managed_ledger.position import EARLIEST, LATEST, Position
from pulsarlab.managed_ledger.retention import RetentionPolicies
from pulsarlab.protocol.subscription import InitialPosition

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.service import BrokerService
    from pulsarlab.broker.subscription import PersistentSubscription


class BrokerAdmin:
    """The admin resources of one broker (`PersistentTopicsBase`, `TenantsBase`, `NamespacesBase`)."""

    def __init__(self, service: "BrokerService") -> None:
        self._svc = service

    def subscriptions_of(self, name: str) -> list[str]:
        """``pulsar-admin topics subscriptions``: a topic's subscriptions (the union over the partitions of a
        partitioned topic, sorted)."""
        if name in self._svc.partitioned:
            subs: set[str] = set()
            for partition in self._svc.partitions_or_self(name):
                if partition in self._svc.topics:  # a partition deleted for inactivity is created again on use
                    subs.update(self._svc.topics[partition].subscriptions)
            return sorted(subs)
        return list(self._svc.existing_topic(name).subscriptions)

    def partitioned_topics_of_namespace(self, namespace: str) -> list[str]:
        """``pulsar-admin topics list-partitioned-topics``: the partitioned topics of the namespace, sorted."""
        prefix = f"persistent://{namespace}/"
        return sorted(n for n in self._svc.partitioned if n.startswith(prefix))

    def topic_stats(self, name: str) -> dict[str, Any]:
        """``pulsar-admin topics stats`` (`TopicStatsImpl`) of a topic or partition."""
        return self._svc.existing_topic(name).stats()

    def topic_stats_internal(self, name: str) -> dict[str, Any]:
        """``pulsar-admin topics stats-internal`` (`PersistentTopicInternalStats`) of a topic or partition."""
        return self._svc.existing_topic(name).stats_internal()

    def create_partitioned_topic(self, name: str, partitions: int) -> None:
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
            raise PreconditionFailedException("The number of partitions must be more than 0")
        if name in self._svc.partitioned or name in self._svc.topics:
            raise ConflictException("This topic already exists")
        if partition_index_of(name) >= 0:
            raise PreconditionFailedException("Partitioned Topic Name should not contain '-partition-'")
        self._svc.check_namespace(name)
        self._svc.partitioned[name] = partitions
        if self._svc.events.enabled:
            self._svc.events.append(
                ev.TOPIC_CREATED, self._svc.scheduler.now(), topic=-1, name=name, partitions=partitions
            )
        for i in range(partitions):
            self._svc.create_topic(f"{name}-partition-{i}")

    def create_non_partitioned_topic(self, name: str) -> None:
        if name in self._svc.partitioned or name in self._svc.topics:
            raise ConflictException("This topic already exists")
        self._svc.create_topic(name)

    def _refuse_if_in_use(self, topic: PersistentTopic) -> None:
        """`PersistentTopic.delete` without force: a topic with producers or connected consumers stays."""
        if topic.producers or any(sub.consumers() for sub in topic.subscriptions.values()):
            raise PreconditionFailedException("Topic has active producers/subscriptions")

    def delete_topic(self, name: str) -> None:
        """``pulsar-admin topics delete``: a non-partitioned topic (or one partition) with its subscriptions;
        refused while it has producers or connected consumers (no ``force`` in the model)."""
        topic = self._svc.existing_topic(name)
        self._refuse_if_in_use(topic)
        self._svc.remove_topic(topic)

    def delete_partitioned_topic(self, name: str) -> None:
        """``pulsar-admin topics delete-partitioned-topic``: the metadata and every partition, refused while
        any partition is in use."""
        if name not in self._svc.partitioned:
            raise NotFoundException("Partitioned topic does not exist")
        parts = [self._svc.topics[p] for p in self._svc.partitions_or_self(name) if p in self._svc.topics]
        for topic in parts:
            self._refuse_if_in_use(topic)
        for topic in parts:
            self._svc.remove_topic(topic)
        del self._svc.partitioned[name]

    def update_partitions(self, name: str, partitions: int) -> None:
        """``pulsar-admin topics update-partitioned-topic``: more partitions only (new ones start empty)."""
        if name not in self._svc.partitioned:
            raise NotFoundException("Partitioned topic does not exist")
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
            raise PreconditionFailedException("The number of partitions must be more than 0")
        current = self._svc.partitioned[name]
        if partitions <= current:
            raise ConflictException(
                f"Number of partitions can only be increased, current {current}, requested {partitions}"
            )
        for i in range(current, partitions):
            self._svc.create_topic(f"{name}-partition-{i}")
        self._svc.partitioned[name] = partitions

    def create_subscription(self, name: str, subscription: str, position: Position | tuple[int, int]) -> None:
        """``pulsar-admin topics create-subscription``: a durable subscription at ``position`` (earliest,
        latest or an entry; on every partition of a partitioned topic); 409 if it exists."""
        if not subscription:
            raise PreconditionFailedException("Subscription name is not valid")
        if isinstance(position, tuple):
            position = message_id_position(*position)
        topics = [self._svc.existing_topic(p) for p in self._svc.partitions_or_self(name)]
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
        topics = [self._svc.existing_topic(p) for p in self._svc.partitions_or_self(name)]
        subs = [t.subscriptions[subscription] for t in topics if subscription in t.subscriptions]
        if not subs:
            raise NotFoundException("Subscription not found")
        if not force and any(s.consumers() for s in subs):
            raise PreconditionFailedException("Subscription has active connected consumers")
        for s in subs:
            self._svc.disconnect_consumers(s, "subscription deleted")
            if s.name in s.topic.subscriptions:
                s.topic.delete_subscription(s.name)

    def compact(self, name: str) -> None:
        """``pulsar-admin topics compact`` (every partition of a partitioned topic): runs at once
        (`compaction.compact`); 409 "Compaction already in progress" cannot happen in the model."""
        retain = self._svc.config.flag("topicCompactionRetainNullKey")
        for t in [self._svc.existing_topic(p) for p in self._svc.partitions_or_self(name)]:
            t.compaction_status = CompactionStatus.RUNNING
            try:
                t.compacted = compact_topic(t, retain)
            except Exception:
                t.compaction_status = CompactionStatus.ERROR
                raise
            t.compaction_status = CompactionStatus.SUCCESS
            t.compaction_succeeded_at = self._svc.scheduler.now_ms
            t.ledger.hold(COMPACTION_SUBSCRIPTION, t.compacted.horizon)  # the compactor's cursor acks to the horizon

    def compaction_status(self, name: str) -> dict[str, str]:
        """``pulsar-admin topics compaction-status``: `LongRunningProcessStatus` as JSON (``status``,
        ``lastError``); over the partitions of a partitioned topic, the least advanced one."""
        order = [CompactionStatus.ERROR, CompactionStatus.NOT_RUN, CompactionStatus.RUNNING, CompactionStatus.SUCCESS]
        states = [self._svc.existing_topic(p).compaction_status for p in self._svc.partitions_or_self(name)]
        status = min(states, key=order.index)
        return {"status": status.value, "lastError": ""}

    def known_namespaces(self) -> set[str]:
        """Registered namespaces and every namespace a topic lives in (``tenant/ns``)."""
        out = set(self._svc.tenancy.namespaces)
        for name in (*self._svc.topics, *self._svc.partitioned):
            tenant, namespace = name.split("://", 1)[1].split("/")[:2]
            out.add(f"{tenant}/{namespace}")
        return out

    def known_tenants(self) -> set[str]:
        return set(self._svc.tenancy.tenants) | {ns.split("/")[0] for ns in self.known_namespaces()}

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
        self._svc.tenancy.tenants[tenant] = TenantInfo(tuple(admin_roles), tuple(clusters))

    def tenant_info(self, tenant: str) -> TenantInfo:
        """``pulsar-admin tenants get``; a tenant known only from its topics has the standalone cluster."""
        info = self._svc.tenancy.tenants.get(tenant)
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
        self._svc.tenancy.tenants.pop(tenant, None)

    def create_namespace(self, namespace: str) -> None:
        """``pulsar-admin namespaces create`` (`NamespacesBase.internalCreateNamespace`)."""
        parts = namespace.split("/") if isinstance(namespace, str) else []
        if len(parts) != 2 or not all(valid_name(p) for p in parts):
            raise PreconditionFailedException("Namespace name is not valid")
        if parts[0] not in self.known_tenants():
            raise NotFoundException("Tenant does not exist")
        if namespace in self.known_namespaces():
            raise ConflictException("Namespace already exists")
        self._svc.tenancy.namespaces[namespace] = NamespacePolicies()

    def delete_namespace(self, namespace: str) -> None:
        """``pulsar-admin namespaces delete`` (no ``force``): refused while it has topics."""
        if namespace not in self.known_namespaces():
            raise NotFoundException("Namespace does not exist")
        if self._svc.topics_of_namespace(namespace) or self.partitioned_topics_of_namespace(namespace):
            raise ConflictException("Cannot delete non empty namespace")
        self._svc.tenancy.namespaces.pop(namespace, None)

    def _namespace_policies(self, namespace: str) -> NamespacePolicies:
        if namespace not in self.known_namespaces():
            raise NotFoundException("Namespace does not exist")
        return self._svc.tenancy.namespaces.setdefault(namespace, NamespacePolicies())

    def deduplication(self, namespace: str) -> bool | None:
        """``namespaces get-deduplication``: the namespace's ``deduplicationEnabled`` (None: not set)."""
        return self._namespace_policies(namespace).deduplication_enabled

    def set_deduplication(self, namespace: str, enabled: bool | None) -> None:
        """``namespaces set-deduplication`` (True/False) or ``remove-deduplication`` (None)."""
        if enabled is not None and not isinstance(enabled, bool):
            raise IllegalArgumentException(f"deduplication is true, false or None, not {enabled!r}")
        self._namespace_policies(namespace).deduplication_enabled = enabled
        prefix = f"persistent://{namespace}/"
        for name, topic in self._svc.topics.items():  # the topics follow at once
            if name.startswith(prefix):
                self._svc.apply_namespace_policies(topic)

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
        for name, topic in self._svc.topics.items():
            if name.startswith(prefix):
                self._svc.apply_namespace_policies(topic)

    def _subscriptions_named(self, name: str, subscription: str) -> list[PersistentSubscription]:
        """The subscription on the topic, or on each partition of a partitioned topic that has it."""
        topics = [self._svc.existing_topic(p) for p in self._svc.partitions_or_self(name)]
        subs = [t.subscriptions[subscription] for t in topics if subscription in t.subscriptions]
        if not subs:
            raise NotFoundException("Subscription not found")
        return subs

    def skip_messages(self, name: str, subscription: str, n: int) -> None:
        """``topics skip`` (`PersistentSubscription.skipMessages`): the next ``n`` unacknowledged entries are
        acknowledged; consumers stay connected. Refused on a partitioned topic, as Pulsar does."""
        if name in self._svc.partitioned:
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
        now = self._svc.scheduler.now()
        for sub in self._subscriptions_named(name, subscription):
            cursor = sub.cursor
            found = _newest_published_before(sub.topic, now - seconds * 1000, cursor.mark_delete_position)
            if found is not None:
                cursor.advance_mark_delete(found)

    def reset_cursor_to_time(self, name: str, subscription: str, timestamp: int) -> None:
        """``topics reset-cursor --time``: each partition's subscription reads again from the first entry
        published at or after ``timestamp`` (lab clock, ms)."""
        if not isinstance(timestamp, int) or isinstance(timestamp, bool):
            raise PreconditionFailedException(f"The timestamp must be an integer (ms), got {timestamp!r}")
        for sub in self._subscriptions_named(name, subscription):
            self._svc.reset_subscription(sub, position_after_publish_time(sub.topic, timestamp))

    def reset_cursor_to_position(
        self, name: str, subscription: str, message_id: tuple[int, int], excluded: bool = False
    ) -> None:
        """``topics reset-cursor --messageId``: read again from the message id (``excluded``: from the entry
        after it). Refused on a partitioned topic (reset one of its partitions)."""
        if name in self._svc.partitioned:
            raise MethodNotAllowedException("Reset-cursor at position is not allowed for partitioned-topic")
        position = message_id_position(*message_id)
        for sub in self._subscriptions_named(name, subscription):
            target = position
            if excluded and position not in (EARLIEST, LATEST):
                target = sub.topic.ledger.next_valid_position(position)
            self._svc.reset_subscription(sub, target)


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
