"""``lab.admin``: the pulsar-admin calls the lab answers, in pulsar-admin's JSON shapes.

Models `PulsarAdmin.topics()` (`Topics`): ``list``, ``list_partitioned_topics``, ``create_partitioned_topic``,
``create_non_partitioned_topic``, ``get_partitioned_topic_metadata``, ``stats`` (`TopicStatsImpl`),
``partitioned_stats``, ``stats_internal`` (`PersistentTopicInternalStats`, reference §11), ``subscriptions``,
``delete``, ``delete_partitioned_topic``, ``update_partitioned_topic``, ``create_subscription`` and
``delete_subscription``; `PulsarAdmin.clusters()`, ``tenants()`` and ``namespaces()`` lists. Simplifies: one
cluster (``standalone``); tenants and namespaces are not registered: the lab knows ``public/default`` and every
namespace a topic lives in (topics are auto-created in any namespace).
Errors carry pulsar-admin's exception classes and texts (``NotFoundException: Topic not found``,
``ConflictException: This topic already exists``). Every call goes through the broker's command surface
(`BrokerService`); the results are plain JSON-shaped values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pulsarlab.broker.service import ConflictException, NotFoundException, PreconditionFailedException

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
    "ConflictException",
    "NotFoundException",
    "PreconditionFailedException",
]


class Topics:
    """``admin.topics()``."""

    def __init__(self, lab: "Lab") -> None:
        self._lab = lab
        self._svc = lab.service

    def _name(self, topic: str) -> str:
        return self._svc.normalize(topic)

    def list(self, namespace: str = "public/default") -> list[str]:
        """Every topic (partitions included, as ``pulsar-admin topics list`` prints them), sorted."""
        return self._svc.topics_of_namespace(namespace)

    def list_partitioned_topics(self, namespace: str = "public/default") -> list[str]:
        return self._svc.partitioned_topics_of_namespace(namespace)

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._svc.create_partitioned_topic(self._name(topic), partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self._svc.create_non_partitioned_topic(self._name(topic))

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, Any]:
        return {"partitions": self._svc.partition_count(self._name(topic))}

    def subscriptions(self, topic: str) -> list[str]:
        return self._svc.subscriptions_of(self._name(topic))

    def delete(self, topic: str) -> None:
        self._svc.delete_topic(self._name(topic))

    def delete_partitioned_topic(self, topic: str) -> None:
        self._svc.delete_partitioned_topic(self._name(topic))

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._svc.update_partitions(self._name(topic), partitions)

    def create_subscription(self, topic: str, subscription: str, message_id: tuple[int, int] = LATEST_ID) -> None:
        """``topics create-subscription``; ``message_id`` ``(ledger, entry)``: (-1, -1) earliest, the default
        latest."""
        self._svc.create_subscription(self._name(topic), subscription, message_id)

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        self._svc.delete_subscription(self._name(topic), subscription, force)

    def stats(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats``."""
        return self._svc.topic_stats(self._name(topic))

    def partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        """``pulsar-admin topics partitioned-stats``: counters summed, ``partitions`` per partition."""
        name = self._name(topic)
        n = self._svc.partition_count(name)
        if n == 0:
            raise NotFoundException("Partitioned Topic not found")
        parts = {f"{name}-partition-{i}": self._svc.topic_stats(f"{name}-partition-{i}") for i in range(n)}
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
        return self._svc.topic_stats_internal(self._name(topic))


def _namespaces(lab: "Lab") -> set[str]:
    svc = lab.service
    out = {DEFAULT_NAMESPACE, *svc.namespaces.namespaces}
    for name in (*svc.topics, *svc.partitioned):
        tenant, namespace = name.split("://", 1)[1].split("/")[:2]
        out.add(f"{tenant}/{namespace}")
    return out


class Clusters:
    """``admin.clusters()``: the one cluster of a standalone broker."""

    def list(self) -> list[str]:
        return [CLUSTER]


class Tenants:
    """``admin.tenants()``."""

    def __init__(self, lab: "Lab") -> None:
        self._lab = lab

    def list(self) -> list[str]:
        return sorted({ns.split("/")[0] for ns in _namespaces(self._lab)} | self._lab.service.namespaces.tenants)


class Namespaces:
    """``admin.namespaces()``."""

    def __init__(self, lab: "Lab") -> None:
        self._lab = lab

    def list(self, tenant: str) -> list[str]:
        """The namespaces of ``tenant`` (``tenant/ns``), sorted; NotFoundException for an unknown tenant."""
        found = sorted(ns for ns in _namespaces(self._lab) if ns.split("/")[0] == tenant)
        if not found and tenant not in self._lab.service.namespaces.tenants:
            raise NotFoundException("Tenant does not exist")
        return found

    def exists(self, namespace: str) -> bool:
        return namespace in _namespaces(self._lab)


class Admin:
    """``lab.admin``: ``lab.admin.topics.stats("orders")`` and friends."""

    def __init__(self, lab: "Lab") -> None:
        self.topics = Topics(lab)
        self.clusters = Clusters()
        self.tenants = Tenants(lab)
        self.namespaces = Namespaces(lab)
