"""``lab.admin``: the pulsar-admin calls the lab answers, in pulsar-admin's JSON shapes.

Models `PulsarAdmin.topics()` (`Topics`): ``list``, ``list_partitioned_topics``, ``create_partitioned_topic``,
``create_non_partitioned_topic``, ``get_partitioned_topic_metadata``, ``stats`` (`TopicStatsImpl`),
``partitioned_stats``, ``stats_internal`` (`PersistentTopicInternalStats`, reference §11) and ``subscriptions``.
Errors carry pulsar-admin's exception classes and texts (``NotFoundException: Topic not found``,
``ConflictException: This topic already exists``). Every call goes through the broker's command surface
(`BrokerService`); the results are plain JSON-shaped values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pulsarlab.broker.service import ConflictException, NotFoundException, PreconditionFailedException

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.lab import Lab

__all__ = ["Admin", "Topics", "ConflictException", "NotFoundException", "PreconditionFailedException"]


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


class Admin:
    """``lab.admin``: ``lab.admin.topics.stats("orders")`` and friends."""

    def __init__(self, lab: "Lab") -> None:
        self.topics = Topics(lab)
