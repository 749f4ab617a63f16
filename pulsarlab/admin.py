"""``lab.admin``: the pulsar-admin calls the lab answers, in pulsar-admin's JSON shapes.

Models `PulsarAdmin.topics()` (`Topics`): ``list``, ``list_partitioned_topics``, ``create_partitioned_topic``,
``create_non_partitioned_topic``, ``get_partitioned_topic_metadata``, ``stats`` (`TopicStatsImpl`),
``partitioned_stats``, ``stats_internal`` (`PersistentTopicInternalStats`), ``subscriptions``,
``delete``, ``delete_partitioned_topic``, ``update_partitioned_topic``, ``create_subscription``,
``delete_subscription``, ``skip_messages``, ``skip_all_messages``, ``expire_messages``, ``reset_cursor`` (by
publish time or message id), ``trigger_compaction``, ``compaction_status``; `PulsarAdmin.clusters()`;
``tenants()`` (list, create, get, delete) and ``namespaces()`` (list, create, delete, deduplication and retention
policies). Simplifies: one cluster (``standalone``); besides the tenants and namespaces created here the lab knows
``public/default`` and every namespace a topic lives in (topics are auto-created in any namespace); times are on
the lab's clock.
Errors carry pulsar-admin's exception classes and texts (``NotFoundException: Topic not found``,
``ConflictException: This topic already exists``). Every call goes through the broker's admin resources
(`pulsarlab.broker.admin.BrokerAdmin`) or, for what a client may ask too (topic names, partition counts, the
topics of a namespace), its command surface (`BrokerService`); the results are plain JSON-shaped values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pulsarlab.broker.admin import BrokerAdmin
from pulsarlab.errors import (
    BadRequestException,
    ConflictException,
    NotFoundException,
    PreconditionFailedException,
)
from pulsarlab.managed_ledger.retention import RetentionPolicies

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.lab import Lab

CLUSTER = "standalone"
DEFAULT_NAMESPACE = "public/default"
LATEST_ID = (2**63 - 1, 2**63 - 1)  # MessageId.latest

__all__ = [
    "Admin",
    "Clusters",
    "Namespaces",
    "Tenants",
    "Topics",
    "BadRequestException",
    "ConflictException",
    "NotFoundException",
    "PreconditionFailedException",
]


class Topics:
    """``admin.topics()``."""

    def __init__(self, lab: "Lab", broker: BrokerAdmin) -> None:
        self._svc = lab.service
        self._broker = broker

    def _name(self, topic: str) -> str:
        return self._svc.normalize(topic)

    def list(self, namespace: str = "public/default") -> list[str]:
        """Every topic (partitions included, as ``pulsar-admin topics list`` prints them), sorted."""
        return self._svc.topics_of_namespace(namespace)

    def list_partitioned_topics(self, namespace: str = "public/default") -> list[str]:
        return self._broker.partitioned_topics_of_namespace(namespace)

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._broker.create_partitioned_topic(self._name(topic), partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self._broker.create_non_partitioned_topic(self._name(topic))

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, Any]:
        return {"partitions": self._svc.partition_count(self._name(topic))}

    def subscriptions(self, topic: str) -> list[str]:
        return self._broker.subscriptions_of(self._name(topic))

    def delete(self, topic: str) -> None:
        self._broker.delete_topic(self._name(topic))

    def delete_partitioned_topic(self, topic: str) -> None:
        self._broker.delete_partitioned_topic(self._name(topic))

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._broker.update_partitions(self._name(topic), partitions)

    def create_subscription(self, topic: str, subscription: str, message_id: tuple[int, int] = LATEST_ID) -> None:
        """``topics create-subscription``; ``message_id`` ``(ledger, entry)``: (-1, -1) earliest, the default
        latest."""
        self._broker.create_subscription(self._name(topic), subscription, message_id)

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        self._broker.delete_subscription(self._name(topic), subscription, force)

    def stats(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats``."""
        return self._broker.topic_stats(self._name(topic))

    def partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        """``pulsar-admin topics partitioned-stats``: counters summed, ``partitions`` per partition."""
        name = self._name(topic)
        n = self._svc.partition_count(name)
        if n == 0:
            raise NotFoundException("Partitioned Topic not found")
        # a partition deleted for inactivity is absent until it is used again
        parts = {
            p: self._broker.topic_stats(p) for i in range(n) if self._svc.topic_exists(p := f"{name}-partition-{i}")
        }
        total: dict[str, Any] = {"metadata": {"partitions": n}}
        for key in ("msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize"):
            total[key] = sum(p[key] for p in parts.values())
        total["publishers"] = [pub for p in parts.values() for pub in p["publishers"]]
        subs: dict[str, Any] = {}
        for p in parts.values():
            for sname, s in p["subscriptions"].items():
                agg = subs.setdefault(
                    sname,
                    {"msgBacklog": 0, "unackedMessages": 0, "msgOutCounter": 0, "type": s["type"], "consumers": []},
                )
                agg["msgBacklog"] += s["msgBacklog"]
                agg["unackedMessages"] += s["unackedMessages"]
                agg["msgOutCounter"] += s["msgOutCounter"]
                agg["consumers"].extend(s["consumers"])
        total["subscriptions"] = subs
        if per_partition:
            total["partitions"] = parts
        return total

    def stats_internal(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats-internal``."""
        return self._broker.topic_stats_internal(self._name(topic))

    def skip_messages(self, topic: str, subscription: str, n: int) -> None:
        """``topics skip``: acknowledge the subscription's next ``n`` unacknowledged entries."""
        self._broker.skip_messages(self._name(topic), subscription, n)

    def skip_all_messages(self, topic: str, subscription: str) -> None:
        """``topics clear-backlog``: acknowledge everything published so far."""
        self._broker.skip_all(self._name(topic), subscription)

    def expire_messages(self, topic: str, subscription: str, expire_time_in_seconds: int) -> None:
        """``topics expire-messages``: acknowledge every entry published more than that long ago."""
        self._broker.expire_messages(self._name(topic), subscription, expire_time_in_seconds)

    def reset_cursor(
        self,
        topic: str,
        subscription: str,
        timestamp: int | None = None,
        *,
        message_id: tuple[int, int] | None = None,
        is_excluded: bool = False,
    ) -> None:
        """``topics reset-cursor``: by ``timestamp`` (lab clock, ms; the first entry published at or after it)
        or by ``message_id`` ``(ledger, entry)`` (``is_excluded``: from the entry after it)."""
        if (timestamp is None) == (message_id is None):
            raise TypeError("reset_cursor takes a timestamp or a message_id, not both or neither")
        if message_id is not None:
            self._broker.reset_cursor_to_position(self._name(topic), subscription, tuple(message_id), is_excluded)
        else:
            self._broker.reset_cursor_to_time(self._name(topic), subscription, timestamp)

    def trigger_compaction(self, topic: str) -> None:
        """``topics compact`` (`Topics.triggerCompaction`): the topic (every partition of a partitioned one)
        compacted now."""
        self._broker.compact(self._name(topic))

    def compaction_status(self, topic: str) -> dict[str, str]:
        """``topics compaction-status`` (`Topics.compactionStatus`): ``{"status": ..., "lastError": ...}``."""
        return self._broker.compaction_status(self._name(topic))


class Clusters:
    """``admin.clusters()``: the one cluster of a standalone broker."""

    def list(self) -> list[str]:
        return [CLUSTER]


class Tenants:
    """``admin.tenants()``."""

    def __init__(self, broker: BrokerAdmin) -> None:
        self._broker = broker

    def list(self) -> list[str]:
        return sorted(self._broker.known_tenants())

    def create_tenant(
        self, tenant: str, admin_roles: Sequence[str] = (), allowed_clusters: Sequence[str] = (CLUSTER,)
    ) -> None:
        """``tenants create``: a tenant with its ``TenantInfo``."""
        self._broker.create_tenant(tenant, admin_roles, allowed_clusters)

    def get_tenant_info(self, tenant: str) -> dict[str, Any]:
        """``tenants get``: ``{"adminRoles": [...], "allowedClusters": [...]}``."""
        return self._broker.tenant_info(tenant).to_json()

    def delete_tenant(self, tenant: str) -> None:
        self._broker.delete_tenant(tenant)


class Namespaces:
    """``admin.namespaces()``."""

    def __init__(self, broker: BrokerAdmin) -> None:
        self._broker = broker

    def list(self, tenant: str) -> list[str]:
        """The namespaces of ``tenant`` (``tenant/ns``), sorted; NotFoundException for an unknown tenant."""
        broker = self._broker
        if tenant not in broker.known_tenants():
            raise NotFoundException("Tenant does not exist")
        return sorted(ns for ns in broker.known_namespaces() if ns.split("/")[0] == tenant)

    def exists(self, namespace: str) -> bool:
        return namespace in self._broker.known_namespaces()

    def create_namespace(self, namespace: str) -> None:
        self._broker.create_namespace(namespace)

    def delete_namespace(self, namespace: str) -> None:
        self._broker.delete_namespace(namespace)

    def get_deduplication_status(self, namespace: str) -> bool | None:
        """``namespaces get-deduplication``: True/False, or None when the namespace does not set it."""
        return self._broker.deduplication(namespace)

    def set_deduplication_status(self, namespace: str, enabled: bool) -> None:
        self._broker.set_deduplication(namespace, enabled)

    def remove_deduplication_status(self, namespace: str) -> None:
        self._broker.set_deduplication(namespace, None)

    def get_retention(self, namespace: str) -> dict[str, int] | None:
        """``namespaces get-retention``: ``{"retentionTimeInMinutes": ..., "retentionSizeInMB": ...}``, or None
        when the namespace sets none (the broker's ``defaultRetention*`` apply)."""
        policy = self._broker.retention(namespace)
        return None if policy is None else policy.to_json()

    def set_retention(self, namespace: str, retention_time_in_minutes: int = 0, retention_size_in_mb: int = 0) -> None:
        """``namespaces set-retention``: keep consumed data up to that many minutes and MB (-1: no such limit;
        both 0: nothing is kept). BadRequestException("Invalid retention policy: ...") for a policy Pulsar
        refuses (one limit 0 and the other not, or below -1)."""
        try:
            policy = RetentionPolicies(retention_time_in_minutes, retention_size_in_mb)
        except ValueError as e:
            raise BadRequestException(str(e)) from None
        self._broker.set_retention(namespace, policy)

    def remove_retention(self, namespace: str) -> None:
        """``namespaces remove-retention``: back to the broker's defaults."""
        self._broker.set_retention(namespace, None)


class Admin:
    """``lab.admin``: ``lab.admin.topics.stats("orders")`` and friends."""

    def __init__(self, lab: "Lab") -> None:
        broker = BrokerAdmin(lab.service)
        self.topics = Topics(lab, broker)
        self.clusters = Clusters()
        self.tenants = Tenants(broker)
        self.namespaces = Namespaces(broker)
