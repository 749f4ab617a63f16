"""``lab.admin``: the pulsar-admin calls the lab answers, in pulsar-admin's JSON shapes.

Models `PulsarAdmin.topics()` (`Topics`): ``list``, ``list_partitioned_topics``, ``create_partitioned_topic``,
``create_non_partitioned_topic``, ``get_partitioned_topic_metadata``, ``stats`` (`TopicStatsImpl`),
``partitioned_stats``, ``stats_internal`` (`PersistentTopicInternalStats`, reference §11) and ``subscriptions``.
Errors carry pulsar-admin's exception classes and texts (``NotFoundException: Topic not found``,
``ConflictException: This topic already exists``).
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

    def _topic(self, topic: str):
        name = self._name(topic)
        t = self._svc.topics.get(name)
        if t is None:
            raise NotFoundException("Topic not found")
        return t

    def list(self, namespace: str = "public/default") -> list[str]:
        """Every topic (partitions included, as ``pulsar-admin topics list`` prints them), sorted."""
        prefix = f"persistent://{namespace}/"
        return sorted(n for n in self._svc.topics if n.startswith(prefix))

    def list_partitioned_topics(self, namespace: str = "public/default") -> list[str]:
        prefix = f"persistent://{namespace}/"
        return sorted(n for n in self._svc.partitioned if n.startswith(prefix))

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._svc.create_partitioned_topic(self._name(topic), partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self._svc.create_non_partitioned_topic(self._name(topic))

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, Any]:
        name = self._name(topic)
        return {"partitions": self._svc.partitioned.get(name, 0)}

    def subscriptions(self, topic: str) -> list[str]:
        name = self._name(topic)
        if name in self._svc.partitioned:
            subs: set[str] = set()
            for i in range(self._svc.partitioned[name]):
                subs.update(self._svc.topics[f"{name}-partition-{i}"].subscriptions)
            return sorted(subs)
        return list(self._topic(topic).subscriptions)

    def stats(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats``."""
        return self._topic(topic).stats()

    def partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        """``pulsar-admin topics partitioned-stats``: counters summed, ``partitions`` per partition."""
        name = self._name(topic)
        n = self._svc.partitioned.get(name)
        if n is None:
            raise NotFoundException("Partitioned Topic not found")
        parts = {f"{name}-partition-{i}": self._svc.topics[f"{name}-partition-{i}"].stats() for i in range(n)}
        total: dict[str, Any] = {"metadata": {"partitions": n}}
        for key in ("msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize"):
            total[key] = sum(p[key] for p in parts.values())
        total["publishers"] = [pub for p in parts.values() for pub in p["publishers"]]
        subs: dict[str, Any] = {}
        for p in parts.values():
            for sname, s in p["subscriptions"].items():
                agg = subs.setdefault(sname, {"msgBacklog": 0, "unackedMessages": 0, "msgOutCounter": 0,
                                              "type": s["type"], "consumers": []})
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
        return self._topic(topic).stats_internal()


class Admin:
    """``lab.admin``: ``lab.admin.topics.stats("orders")`` and friends."""

    def __init__(self, lab: "Lab") -> None:
        self.topics = Topics(lab)
