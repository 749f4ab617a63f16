"""Failover's choice of the active consumer: priority order, then partition index or a hash ring.

Models the consumer list of `AbstractDispatcherSingleActiveConsumer` (`addConsumer`, `removeConsumer`,
`pickAndScheduleActiveConsumer`, `makeHashRing`, `peekConsumerIndexFromHashRing`,
`notifyActiveConsumerChanged`) for a Failover subscription (docs/guide/subscription-types.md#failover-switch, golden
README-dispatch §2).
Simplifies: no Exclusive rules, no closing dispatcher, no max-consumers check and no
`activeConsumerFailoverDelayTimeMillis` (the dispatcher that owns this object schedules the
ACTIVE_CONSUMER_CHANGE notifications, rewind and read); the notifications are returned as what
Pulsar's no-delay path sends, in order.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, Hashable, Protocol, TypeVar

from pulsarlab.errors import ServerMetadataException
from pulsarlab.hashing import murmur3_32

CONSUMER_CONSISTENT_HASH_REPLICAS = 100


class FailoverConsumer(Protocol):
    """What the active-consumer choice reads of a consumer."""

    @property
    def id(self) -> Hashable: ...

    @property
    def name(self) -> str: ...

    @property
    def priority(self) -> int: ...


def java_string_order(name: str) -> bytes:
    """A sort key that orders names like Java's ``String.compareTo`` (UTF-16 code units)."""
    return name.encode("utf-16-be", "surrogatepass")


def _java_bytes(text: str) -> bytes:
    """``String.getBytes()`` with a UTF-8 default charset: unpaired surrogates become '?'."""
    return text.encode("utf-8", "replace")


@lru_cache(maxsize=4096)
def ring_points(name: str) -> tuple[int, ...]:
    """The 100 ring points of a consumer name: ``murmur3_32(name + str(j))`` for j = 0..99."""
    return tuple(murmur3_32(_java_bytes(f"{name}{j}")) for j in range(CONSUMER_CONSISTENT_HASH_REPLICAS))


def topic_hash(topic: str) -> int:
    """`Murmur3Hash32.makeHash(topicName)`: masked Murmur3 of the full topic name's UTF-8 bytes."""
    return murmur3_32(_java_bytes(topic))


def ring_index(names: list[str], hash_value: int) -> int:
    """`makeHashRing` + `peekConsumerIndexFromHashRing`: which of ``names`` owns ``hash_value``.

    A later name's point overwrites an earlier one's, so among equal names the last one owns the shared
    points; the owner is the first point at or after the hash, else the first point of the ring.
    """
    ring: dict[int, int] = {}
    for i, name in enumerate(names):
        for point in ring_points(name):
            ring[point] = i
    points = sorted(ring)
    at = bisect_left(points, hash_value)
    return ring[points[at] if at < len(points) else points[0]]


FC = TypeVar("FC", bound=FailoverConsumer)  # the consumer type a list holds and hands back


@dataclass
class ActiveConsumerPick(Generic[FC]):
    """The outcome of an add or remove: whether the active consumer changed, and who was notified of whom.

    ``notifications`` lists ``(notified consumer, active consumer)`` in the order Pulsar sends the
    CommandActiveConsumerChange (every listed consumer learns whether it is the active one).
    """

    changed: bool
    notifications: list[tuple[FC, FC]] = field(default_factory=list)


@dataclass(frozen=True)
class FailoverSelection:
    """The pick's choice: the first ``level_size`` consumers share the top priority; ``index`` among them is the
    active one, chosen by partition index modulo their count (``by_partition``) or on the hash ring."""

    level_size: int
    index: int
    by_partition: bool


class FailoverConsumerList(Generic[FC]):
    """The consumers of one Failover dispatcher (one topic or partition) and the active one.

    ``partition_index`` is -1 for a non-partitioned topic. ``consistent_hashing`` is the broker setting
    ``activeConsumerFailoverConsistentHashing`` (PIP-392): partitioned topics then use the ring too.
    """

    __slots__ = ("topic", "partition_index", "consistent_hashing", "topic_hash", "consumers", "active")

    def __init__(self, topic: str, partition_index: int = -1, *, consistent_hashing: bool = False) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"topic must be a non-empty topic name, not {topic!r}")
        if type(partition_index) is not int or partition_index < -1:
            raise ValueError(
                f"partition_index must be -1 (non-partitioned) or a partition number, not {partition_index!r}"
            )
        self.topic = topic
        self.partition_index = partition_index
        self.consistent_hashing = bool(consistent_hashing)
        self.topic_hash = topic_hash(topic)
        self.consumers: list[FC] = []
        self.active: FC | None = None

    def add(self, consumer: FC) -> ActiveConsumerPick[FC]:
        """`addConsumer`: append (duplicates allowed) and pick; an unchanged pick notifies only the newcomer."""
        self.consumers.append(consumer)
        pick = self._pick()
        if not pick.changed and self.active is not None:
            pick.notifications.append((consumer, self.active))
        return pick

    def remove(self, consumer: FC) -> ActiveConsumerPick[FC]:
        """`removeConsumer`: drop the first equal consumer (by id) and pick again unless none is left.

        Raises ServerMetadataException("Consumer was not connected") if it is not in the list.
        """
        key = consumer.id
        for i, c in enumerate(self.consumers):
            if c.id == key:
                del self.consumers[i]
                break
        else:
            raise ServerMetadataException("Consumer was not connected")
        if not self.consumers:
            self.active = None
            return ActiveConsumerPick(changed=False)
        return self._pick()

    def selection(self) -> FailoverSelection:
        """Which consumer the pick chooses in the (already sorted, non-empty) list, and by which rule; read-only."""
        consumers = self.consumers
        top = consumers[0].priority
        size = len(consumers)
        for i, c in enumerate(consumers):
            if c.priority != top:
                size = i
                break
        if self.partition_index >= 0 and not self.consistent_hashing:
            return FailoverSelection(size, self.partition_index % size, by_partition=True)
        return FailoverSelection(
            size, ring_index([c.name for c in consumers[:size]], self.topic_hash), by_partition=False
        )

    def selected_index(self) -> int:
        """The index the pick chooses in the (already sorted) list."""
        return self.selection().index

    def active_rule(self) -> str | None:
        """Why the active consumer is the active one (docs/guide/subscription-types.md#failover-switch), as one line;
        None with no active consumer."""
        consumers = self.consumers
        if not consumers or self.active is None:
            return None
        chosen = self.selection()
        top = consumers[0].priority
        level = consumers[: chosen.level_size]
        names = ", ".join(c.name for c in level)
        head = f"sorted by (priority, name); priority {top} has {len(level)}: [{names}]"
        name = level[chosen.index].name
        if chosen.by_partition:
            return f"{head}; partition {self.partition_index} % {len(level)} = {chosen.index} -> {name}"
        why = "non-partitioned topic" if self.partition_index < 0 else "activeConsumerFailoverConsistentHashing"
        return (
            f"{head}; {why}: the topic's hash {self.topic_hash} lands on a ring point of "
            f"{name} ({CONSUMER_CONSISTENT_HASH_REPLICAS} points per consumer)"
        )

    def _pick(self) -> ActiveConsumerPick[FC]:
        """`pickAndScheduleActiveConsumer`: sort in place by (priority, name), choose, notify all on change."""
        self.consumers.sort(key=_failover_order)
        selected = self.consumers[self.selected_index()]
        if selected is self.active:
            return ActiveConsumerPick(changed=False)
        self.active = selected
        return ActiveConsumerPick(changed=True, notifications=[(c, selected) for c in self.consumers])


def _failover_order(consumer: FailoverConsumer) -> tuple[int, bytes]:
    return (consumer.priority, java_string_order(consumer.name))
