"""One poll of a cluster: which topics a watch follows, and the stats JSON the broker answered for each.

Models what ``pulsar-admin topics stats`` / ``partitioned-stats --per-partition`` and ``stats-internal`` of each
partition print (`PersistentTopics.getStats`, ``getPartitionedStats``, ``getInternalStats``), read for one moment
and kept exactly as answered. A `Reading` parses into the importers' typed stats (`pulsarlab.importers`) for the
diagnosis and the views; its ``as_json`` is what a recording stores.

The topic argument picks one topic (``orders``, ``tenant/ns/orders``, ``persistent://tenant/ns/orders``,
partitioned or not), a namespace (``tenant/ns``: every topic in it) or a regex over the full names of one
namespace's topics (``persistent://public/default/orders-.*``; with no namespace, ``public/default``).
Partitions are followed as their partitioned topic. Simplifies: persistent topics only (non-persistent ones have
no cursor), and a partitioned topic's stats-internal is read partition by partition (``/internalStats`` of each),
which every broker answers, rather than ``partitioned-internalStats``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pulsarlab.importers import PartitionedTopicInternalStats, PersistentTopicInternalStats, TopicStats
from pulsarlab.importers import read as read_json
from pulsarlab.watch.admin_client import AdminClient, TopicName

_REGEX_CHARS = re.compile(r"[*+?()\[\]|^$\\{}]")
_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")
MAX_TOPICS = 50  # a namespace or regex matching more is refused: each topic costs 2+ GETs a poll


@dataclass(frozen=True)
class Selection:
    """What the watch follows: one topic, a namespace, or a regex over a namespace's topic names."""

    kind: str  # "topic", "namespace" or "regex"
    text: str
    tenant: str
    namespace: str
    topic: TopicName | None = None
    pattern: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, text: str) -> "Selection":
        if not text or not text.strip():
            raise ValueError("name a topic, a namespace (tenant/namespace) or a regex of topic names")
        text = text.strip()
        if _REGEX_CHARS.search(text):
            rest = text.split("://", 1)[1] if "://" in text else text
            parts = rest.split("/", 2)
            tenant, namespace = (parts[0], parts[1]) if len(parts) == 3 else ("public", "default")
            full = text if "://" in text else f"persistent://{tenant}/{namespace}/{parts[-1]}"
            try:
                pattern = re.compile(full)
            except re.error as e:
                raise ValueError(f"{text!r} is not a valid regex: {e}") from None
            return cls("regex", text, tenant, namespace, pattern=pattern)
        if "://" not in text and text.count("/") == 1:
            tenant, namespace = text.split("/")
            if not tenant or not namespace:
                raise ValueError(f"not a namespace: {text!r} (tenant/namespace)")
            return cls("namespace", text, tenant, namespace)
        topic = TopicName.parse(text)
        return cls("topic", text, topic.tenant, topic.namespace, topic=topic)

    def resolve(self, client: AdminClient) -> list[tuple[TopicName, int]]:
        """The topics to poll now, each with its partition count (0: not partitioned)."""
        if self.topic is not None:
            return [(self.topic, client.partitions(self.topic))]
        partitioned = set(client.partitioned_topics(self.tenant, self.namespace))
        names: dict[str, None] = {p: None for p in partitioned}
        for name in client.topics(self.tenant, self.namespace):
            m = _PARTITION.match(name)
            if m is None or m.group(1) not in partitioned:
                names.setdefault(name, None)
        chosen = sorted(n for n in names if self.pattern is None or self.pattern.fullmatch(n))
        if len(chosen) > MAX_TOPICS:
            raise ValueError(
                f"{self.text!r} matches {len(chosen)} topics; a watch follows at most {MAX_TOPICS} (narrow it)"
            )
        out = []
        for name in chosen:
            t = TopicName.parse(name)
            out.append((t, client.partitions(t) if name in partitioned else 0))
        return out


@dataclass(frozen=True)
class Reading:
    """One topic's answers at one poll: ``stats`` (partitioned stats per partition for a partitioned topic) and
    ``internal`` (stats-internal, keyed by partition name; the topic's own name when not partitioned)."""

    topic: str
    partitions: int
    stats: dict[str, Any]
    internal: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"partitions": self.partitions, "stats": self.stats, "internal": self.internal}

    @classmethod
    def from_json(cls, topic: str, data: dict[str, Any]) -> "Reading":
        return cls(topic, int(data.get("partitions", 0)), data["stats"], dict(data.get("internal") or {}))

    def parsed(self) -> tuple[TopicStats, PersistentTopicInternalStats | PartitionedTopicInternalStats | None]:
        """The importers' typed stats and stats-internal (partitions gathered as ``partitioned-internalStats``)."""
        stats = read_json(self.stats, source=f"stats of {self.topic}")
        assert isinstance(stats, TopicStats)
        if not self.internal:
            return stats, None
        if self.partitions:
            data: Any = {"metadata": {"partitions": self.partitions}, "partitions": self.internal}
        else:
            data = next(iter(self.internal.values()))
        internal = read_json(data, source=f"stats-internal of {self.topic}")
        assert not isinstance(internal, TopicStats)
        return stats, internal


def read_topic(client: AdminClient, topic: TopicName, partitions: int) -> Reading:
    """Every GET of one topic for one poll (stats first, then each partition's stats-internal)."""
    stats = client.stats(topic, partitioned=partitions > 0)
    if not isinstance(stats, dict):
        raise ValueError(f"the stats of {topic.full} are not a JSON object")
    parts = [topic.partition(i) for i in range(partitions)] if partitions else [topic]
    internal = {p.full: client.internal_stats(p) for p in parts}
    return Reading(topic.full, partitions, stats, internal)


__all__ = ["MAX_TOPICS", "Reading", "Selection", "read_topic"]
