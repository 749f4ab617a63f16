"""The contract every Key_Shared selector model fulfils, and the consumer identity it works on.

Models the `StickyKeyConsumerSelector` interface (docs/guide/key-shared-selectors.md#choosing-a-selector). A selector
maps a sticky-key hash to
one consumer. Selectors are pure state machines: no clock, no event log; the scenario driver
(`pulsarlab.scenarios.key_shared`) diffs their snapshots to produce events for the views.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Generic, Hashable, Iterable, Protocol, Sequence, TypeVar

import numpy as np

from pulsarlab.hashing import make_sticky_key_hash, make_sticky_key_hash_bulk, murmur3_32_bulk
from pulsarlab.profiles import Profile

NO_CONSUMER = -1  # what the bulk path returns where select() would return None


class SelectorConsumer(Protocol):
    """What a selector reads of a consumer: the four attributes of `Consumer` below, which the broker's consumers
    (`pulsarlab.broker.consumer.Consumer`) have too. A selector hands back the consumers it was given."""

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def priority(self) -> int: ...

    @property
    def ranges(self) -> tuple[tuple[int, int], ...] | None: ...

    def __hash__(self) -> int: ...


C = TypeVar("C", bound=SelectorConsumer)  # the consumer type a selector holds and returns
H = TypeVar("H", bound=Hashable)  # a consumer as the assignment diff sees it: anything hashable


@dataclass(frozen=True, eq=False)
class Consumer:
    """What a selector knows of a consumer: Pulsar's consumerId, its name, priority and sticky ranges.

    Equality is by ``id`` (Pulsar compares consumerId plus client address; the lab has one address).
    ``ranges`` is the KeySharedMeta hash-range list of a STICKY consumer, in the given order, or None
    for "no KeySharedMeta". The broker model's consumers expose the same four attributes.
    """

    id: int
    name: str
    priority: int = 0
    ranges: tuple[tuple[int, int], ...] | None = None
    subscription: str | None = None  # the subscription's toString() when the consumer is attached to one

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Consumer) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __str__(self) -> str:
        return consumer_to_string(self.id, self.name, self.subscription)


def subscription_to_string(topic: str, name: str) -> str:
    """Pulsar's `PersistentSubscription.toString()` for a subscription ``name`` of ``topic`` (a short name is
    normalised as `TopicName` does)."""
    if "://" not in topic:
        topic = f"persistent://public/default/{topic}" if "/" not in topic else f"persistent://{topic}"
    return f"PersistentSubscription{{topic={topic}, name={name}}}"


BROKER_ADDRESS = "/127.0.0.1:6650"  # the one client connection's address the lab's consumers report


def consumer_to_string(consumer_id: int, name: str, subscription: str | None) -> str:
    """Pulsar's `Consumer.toString()` (it names the consumer in error texts such as "Range conflict ...").

    A consumer attached to a subscription (every consumer on a broker) prints subscription and address too; one
    with no subscription (the selectors' own unit tests) prints only its id and name.
    """
    if subscription is None:
        return f"Consumer{{consumerId={consumer_id}, consumerName={name}}}"
    return f"Consumer{{subscription={subscription}, consumerId={consumer_id}, consumerName={name}, address={BROKER_ADDRESS}}}"


@dataclass(frozen=True)
class ImpactedConsumers(Generic[H]):
    """4.x `ImpactedConsumersResult`: per consumer, the merged hash ranges it lost and gained."""

    removed: dict[H, list[tuple[int, int]]]
    added: dict[H, list[tuple[int, int]]]

    @property
    def is_empty(self) -> bool:
        return not self.removed


class StickyKeyConsumerSelector(abc.ABC, Generic[C]):
    """Base class of the three selectors. Subclasses implement the abstract methods.

    ``select`` takes the hash value Pulsar's ``select(int)`` receives under the profile (3.x: the
    31-bit masked hash; 4.x: already reduced into ``key_hash_range()``).
    """

    kind: str = ""  # "auto_split" | "consistent_hashing" | "sticky"

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    # -- membership ---------------------------------------------------------------------------
    @abc.abstractmethod
    def add_consumer(self, consumer: C) -> ImpactedConsumers[C] | None:
        """Attach a consumer; raises ConsumerAssignException as Pulsar fails. 4.x may return impacts."""

    @abc.abstractmethod
    def remove_consumer(self, consumer: C) -> ImpactedConsumers[C] | None:
        """Detach a consumer (unknown consumers: as the modelled version does)."""

    @property
    @abc.abstractmethod
    def consumers(self) -> list[C]:
        """Attached consumers, in attach order."""

    # -- selection ----------------------------------------------------------------------------
    @abc.abstractmethod
    def key_hash_range(self) -> tuple[int, int]:
        """The inclusive range 4.x reduces sticky-key hashes into (3.x: what select() covers)."""

    @abc.abstractmethod
    def select(self, key_hash: int) -> C | None:
        """The consumer for a sticky-key hash, or None."""

    def make_sticky_key_hash(self, key: str | bytes) -> int:
        return make_sticky_key_hash(key, self.profile, self.key_hash_range())

    def select_key(self, key: str | bytes) -> C | None:
        """The consumer for a sticky key (its bytes, or text hashed as UTF-8)."""
        return self.select(self.make_sticky_key_hash(key))

    @abc.abstractmethod
    def select_bulk(self, key_hashes: np.ndarray) -> np.ndarray:
        """Vectorised ``select``: an int64 array of consumer ids, NO_CONSUMER where none. No Python
        loop per hash."""

    def sticky_hashes_bulk(self, keys: Sequence[str | bytes] | np.ndarray) -> np.ndarray:
        """Vectorised ``make_sticky_key_hash`` (keys, or masked murmur hashes as an int64 array)."""
        return make_sticky_key_hash_bulk(keys, self.profile, self.key_hash_range())

    def select_keys_bulk(self, keys: Iterable[str | bytes]) -> np.ndarray:
        """Consumer ids for many keys: bulk hash, then vectorised select."""
        masked = murmur3_32_bulk(list(keys))
        return self.select_bulk(self.sticky_hashes_bulk(masked))

    # -- reporting ----------------------------------------------------------------------------
    @abc.abstractmethod
    def consumer_key_hash_ranges(self) -> dict[C, list[tuple[int, int]]]:
        """`getConsumerKeyHashRanges()` exactly as the modelled version reports it, quirks included."""

    def assignments(self) -> list[tuple[int, int, C]]:
        """The hash ranges and owners, sorted and non-overlapping (4.x `ConsumerHashAssignmentsSnapshot`)."""
        out = [(s, e, c) for c, ranges in self.consumer_key_hash_ranges().items() for s, e in ranges]
        return sorted(out, key=lambda t: (t[0], t[1]))

    @abc.abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """An immutable, JSON-friendly picture of the internal state, for views and the scenario diff.

        Keys by kind: auto_split ``{"range_map": [(upper, id), ...]}``; consistent_hashing
        ``{"ring": [(point, selected_id, (other ids...)), ...]}``; sticky ``{"ranges": [(start, end,
        id), ...]}``. Every kind also has ``"consumers": [(id, name), ...]`` in attach order.
        """
