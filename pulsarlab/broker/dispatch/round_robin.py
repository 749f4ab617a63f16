"""The Shared dispatcher's consumer list and its priority round robin (`getNextConsumer`).

Models `AbstractDispatcherMultipleConsumers` (consumerList, consumerSet, currentConsumerRoundRobinIndex,
`getNextConsumer` and its helpers) with `addConsumer`, `removeConsumer` and `isConsumerAvailable` of
`PersistentDispatcherMultipleConsumers` (3.0, 4.0) and 4.0's `...Classic`
(docs/guide/subscription-types.md#shared-round-robin, golden
README-dispatch §1). Only the list logic: the cursor, replay set, permits bookkeeping and the
max-consumers check stay with the dispatcher that owns this object. Consumer equality is by ``id``
(Pulsar: consumerId plus client address).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Hashable, Protocol, TypeVar

from pulsarlab.errors import IllegalStateException
from pulsarlab.profiles import Profile, SharedDispatcherForm, get_profile


class SharedConsumer(Protocol):
    """What the round robin reads of a consumer (the broker's consumer objects have these attributes)."""

    @property
    def id(self) -> Hashable: ...

    @property
    def priority(self) -> int: ...  # priorityLevel: 0 is the highest

    @property
    def available_permits(self) -> int: ...  # may be negative

    @property
    def blocked(self) -> bool: ...  # blockedConsumerOnUnackedMsgs

    @property
    def cnx_active(self) -> bool: ...  # consumer.cnx().isActive()


SC = TypeVar("SC", bound=SharedConsumer)  # the consumer type a list holds and hands back


@dataclass(eq=False)
class DispatchConsumer:
    """A plain consumer for the dispatch rules: identity is the instance, equality for removal is ``id``."""

    id: int
    name: str = ""
    priority: int = 0
    available_permits: int = 0
    blocked: bool = False
    cnx_active: bool = True


def is_consumer_available(consumer: SharedConsumer, form: SharedDispatcherForm) -> bool:
    """`isConsumerAvailable`: not blocked, permits > 0 and, in branch-4.0's form, an active connection."""
    if consumer.blocked or consumer.available_permits <= 0:
        return False
    return form is SharedDispatcherForm.V3 or consumer.cnx_active


class SharedConsumerList(Generic[SC]):
    """The consumer list of a Shared dispatcher and its round-robin index (rr).

    ``consumers`` keeps Pulsar's list order: by priority, stable, with duplicates if an instance was
    added twice. ``distinct`` is the consumer set (hppc ObjectHashSet) keyed by ``id``.
    """

    __slots__ = ("form", "consumers", "_distinct", "round_robin_index")

    def __init__(self, profile: Profile | str | None = None) -> None:
        self.form: SharedDispatcherForm = get_profile(profile).shared_dispatcher
        self.consumers: list[SC] = []
        self._distinct: dict[Hashable, SC] = {}
        self.round_robin_index = 0  # currentConsumerRoundRobinIndex: the index after the last served

    @property
    def set_size(self) -> int:
        """How many distinct consumers are registered (consumerSet.size())."""
        return len(self._distinct)

    def __len__(self) -> int:
        return len(self.consumers)

    def __contains__(self, consumer: SC) -> bool:
        return consumer.id in self._distinct

    def is_available(self, consumer: SC) -> bool:
        return is_consumer_available(consumer, self.form)

    def add(self, consumer: SC) -> None:
        """`addConsumer`: append; re-sort (stable, by priority) when it outranks the previous last one."""
        consumers = self.consumers
        consumers.append(consumer)
        if len(consumers) > 1 and consumer.priority < consumers[-2].priority:
            consumers.sort(key=_priority)
        self._distinct.setdefault(consumer.id, consumer)

    def remove(self, consumer: SC) -> None:
        """`removeConsumer`: the first occurrence if registered, else every occurrence (the removeIf path)."""
        key = consumer.id
        consumers = self.consumers
        if self._distinct.pop(key, None) is not None:
            for i, c in enumerate(consumers):
                if c.id == key:
                    del consumers[i]
                    break
        else:
            consumers[:] = [c for c in consumers if c.id != key]

    def next_consumer(self) -> SC | None:
        """`getNextConsumer`: the next available consumer by priority and round robin, or None."""
        consumers = self.consumers
        size = len(consumers)
        if not size:
            return None
        if self.round_robin_index >= size:
            self.round_robin_index = 0
        rr = self.round_robin_index
        form = self.form
        current = consumers[rr]
        priority = current.priority
        if priority != 0:
            # a strictly higher priority consumer before rr wins; the scan stops at the first one that is not
            for i in range(rr):
                c = consumers[i]
                if c.priority >= priority:
                    break
                if is_consumer_available(c, form):
                    self.round_robin_index = i + 1
                    return c
        # _same_or_lower_level's first answer (rr itself is available), inlined: the common turn
        if (
            not current.blocked
            and current.available_permits > 0
            and (current.cnx_active or form is SharedDispatcherForm.V3)
        ):
            self.round_robin_index = rr + 1
            return current
        index = self._same_or_lower_level(rr)
        if index < 0:
            return None
        self.round_robin_index = index + 1
        return consumers[index]

    def _same_or_lower_level(self, rr: int) -> int:
        """`getNextConsumerFromSameOrLowerLevel`: rr, then rr's priority block cyclically, then lower levels."""
        consumers = self.consumers
        size = len(consumers)
        form = self.form
        if is_consumer_available(consumers[rr], form):
            return rr
        priority = consumers[rr].priority
        scan = rr + 1
        block_end = rr
        for _ in range(2 * size + 2):
            if scan >= size or consumers[scan].priority != priority:
                block_end = scan
                scan = self._first_index_of(priority)
            else:
                if is_consumer_available(consumers[scan], form):
                    return scan
                scan += 1
            if scan == rr:
                break
        else:  # only reachable if someone changed a registered consumer's priority
            raise IllegalStateException("consumer list is not sorted by priority level")
        for i in range(block_end, size):
            if is_consumer_available(consumers[i], form):
                return i
        return -1

    def _first_index_of(self, priority: int) -> int:
        for i, c in enumerate(self.consumers):
            if c.priority == priority:
                return i
        return -1


def _priority(consumer: SharedConsumer) -> int:
    return consumer.priority
