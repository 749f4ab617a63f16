"""What a subscribe carries on the wire: subscription type, initial position, and the Key_Shared meta.

Models `CommandSubscribe.SubType`, `CommandSubscribe.InitialPosition`, `KeySharedMeta` (mode, hash ranges,
out-of-order delivery) with Pulsar's `Range` for a hash range, under the names of the Python ``pulsar-client``
package (``pulsar.ConsumerType``, ``pulsar.InitialPosition``, ``pulsar.KeySharedMode``,
``pulsar.ConsumerKeySharedPolicy``, which is the meta the broker receives). Each enum's value is its wire
number (as in the Python client); ``.wire`` is the name the broker's stats print, and the enums also take
that name (``ConsumerType("Key_Shared")``). Sticky ranges are validated
like Java's ``KeySharedPolicySticky.validate()``, on the client side, with Pulsar's texts.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Any, Iterable

from pulsarlab.errors import IllegalArgumentException

CLIENT_HASH_RANGE_SIZE = 2 << 15  # KeySharedPolicy.DEFAULT_HASH_RANGE_SIZE


class ConsumerType(enum.Enum):
    """``pulsar.ConsumerType`` = `CommandSubscribe.SubType`; ``.wire`` is the broker's name, as stats print it."""

    Exclusive = 0
    Shared = 1
    Failover = 2
    KeyShared = 3

    def __int__(self) -> int:
        return self.value

    @property
    def wire(self) -> str:
        return "Key_Shared" if self is ConsumerType.KeyShared else self.name

    @classmethod
    def _missing_(cls, value: object) -> ConsumerType | None:
        # ConsumerType("Key_Shared"): the broker's name, as stats print it
        return next((t for t in cls if t.wire == value), None)

    @property
    def individual_ack_mode(self) -> bool:
        """`Subscription.isIndividualAckMode`: Shared and Key_Shared track pending acks per consumer."""
        return self is ConsumerType.Shared or self is ConsumerType.KeyShared


class InitialPosition(enum.Enum):
    """``pulsar.InitialPosition`` = `CommandSubscribe.InitialPosition`: where a new subscription's cursor starts."""

    Latest = 0
    Earliest = 1

    def __int__(self) -> int:
        return self.value

    @classmethod
    def _missing_(cls, value: object) -> InitialPosition | None:
        # InitialPosition("Earliest")
        return cls.__members__.get(value) if isinstance(value, str) else None


class KeySharedMode(enum.Enum):
    """``pulsar.KeySharedMode`` = `KeySharedMode`; ``.wire`` is the protocol name (AUTO_SPLIT / STICKY)."""

    AutoSplit = 0
    Sticky = 1

    def __int__(self) -> int:
        return self.value

    @property
    def wire(self) -> str:
        return "AUTO_SPLIT" if self is KeySharedMode.AutoSplit else "STICKY"

    @classmethod
    def _missing_(cls, value: object) -> KeySharedMode | None:
        # KeySharedMode("STICKY"): the protocol name, as stats print it
        return next((m for m in cls if m.wire == value), None)


@dataclass(frozen=True)
class HashRange:
    """An inclusive hash range [start, end] (Pulsar's `Range`, the wire's `IntRange`); ``str`` is ``[s, e]``."""

    start: int
    end: int

    def __str__(self) -> str:
        return f"[{self.start}, {self.end}]"

    @property
    def size(self) -> int:
        return self.end - self.start + 1

    def contains(self, h: int) -> bool:
        return self.start <= h <= self.end


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not bool ({value!r})")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__} ({value!r})") from None


def hash_range_pair(item: Any, what: str) -> tuple[int, int]:
    """``item`` as a ``(start, end)`` pair of ints; TypeError naming ``what`` for anything else."""
    try:
        start, end = item
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a (start, end) pair of ints, not {item!r}") from None
    return _as_int(start, f"{what} start"), _as_int(end, f"{what} end")


def _overlaps(a: HashRange, b: HashRange) -> bool:
    return max(a.start, b.start) <= min(a.end, b.end)


def validate_sticky_policy_ranges(ranges: Iterable[Any]) -> list[HashRange]:
    """Client-side `KeySharedPolicy.KeySharedPolicySticky.validate()`, with Pulsar's texts.

    Each item is a `HashRange` or a (start, end) pair (built like Pulsar's `Range.of`, which rejects
    end < start). Returns the ranges as `HashRange`s.
    """
    if isinstance(ranges, (str, bytes)):
        raise TypeError(f"ranges must be a list of (start, end) pairs, not {ranges!r}")
    built: list[HashRange] = []
    for item in ranges:
        start, end = (item.start, item.end) if isinstance(item, HashRange) else hash_range_pair(item, "a hash range")
        if end < start:
            raise IllegalArgumentException("Range end must >= range start.")
        built.append(HashRange(start, end))
    if not built:
        raise IllegalArgumentException("Ranges for KeyShared policy must not be empty.")
    # Java checks each range against every other in order (O(n^2)) and reports the first overlapping pair; the
    # same pair is found here in O(n log n): which ranges overlap another (a sweep in start order), the first of
    # them, then the first range it overlaps
    overlapping = _overlapping(built)
    for i, r1 in enumerate(built):
        if r1.start < 0 or r1.end >= CLIENT_HASH_RANGE_SIZE:
            raise IllegalArgumentException(f"Ranges must be [0, 65535] but provided range is {r1}")
        if i in overlapping:
            r2 = next(r2 for j, r2 in enumerate(built) if i != j and _overlaps(r1, r2))
            raise IllegalArgumentException(f"Ranges for KeyShared policy with overlap between {r1} and {r2}")
    return built


def _overlapping(ranges: list[HashRange]) -> set[int]:
    """The indexes of the ranges that overlap at least one other."""
    order = sorted(range(len(ranges)), key=lambda i: (ranges[i].start, i))
    found: set[int] = set()
    reach = None  # the highest end among the ranges before this one in start order
    for p, i in enumerate(order):
        r = ranges[i]
        if reach is not None and reach >= r.start:
            found.add(i)
        if p + 1 < len(order) and ranges[order[p + 1]].start <= r.end:
            found.add(i)
        reach = r.end if reach is None else max(reach, r.end)
    return found


class ConsumerKeySharedPolicy:
    """``pulsar.ConsumerKeySharedPolicy(key_shared_mode, allow_out_of_order_delivery, sticky_ranges)``.

    The `KeySharedMeta` a Key_Shared subscribe carries (wrapping Java's `KeySharedPolicy`,
    docs/guide/key-shared-selectors.md#choosing-a-selector).
    Sticky ranges are validated like Java's ``KeySharedPolicySticky.validate()`` (Pulsar's texts).
    """

    __slots__ = ("_mode", "_allow_out_of_order", "_ranges")

    def __init__(
        self,
        key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit,
        allow_out_of_order_delivery: bool = False,
        sticky_ranges: Iterable[tuple[int, int]] | None = None,
    ) -> None:
        if not isinstance(key_shared_mode, KeySharedMode):
            raise TypeError(f"key_shared_mode must be a KeySharedMode, not {key_shared_mode!r}")
        if key_shared_mode is KeySharedMode.Sticky and sticky_ranges is None:
            raise ValueError("When using key_shared_mode = KeySharedMode.Sticky you must also provide sticky_ranges")
        self._mode = key_shared_mode
        self._allow_out_of_order = bool(allow_out_of_order_delivery)
        self._ranges: tuple[tuple[int, int], ...] | None = None
        if sticky_ranges is not None:
            self._ranges = tuple((r.start, r.end) for r in validate_sticky_policy_ranges(list(sticky_ranges)))

    @property
    def key_shared_mode(self) -> KeySharedMode:
        return self._mode

    @property
    def allow_out_of_order_delivery(self) -> bool:
        return self._allow_out_of_order

    @property
    def sticky_ranges(self) -> list[tuple[int, int]]:
        return list(self._ranges or ())

    def __repr__(self) -> str:
        return (
            f"ConsumerKeySharedPolicy(key_shared_mode={self._mode}, "
            f"allow_out_of_order_delivery={self._allow_out_of_order}, sticky_ranges={self.sticky_ranges})"
        )


__all__ = [
    "CLIENT_HASH_RANGE_SIZE",
    "ConsumerKeySharedPolicy",
    "ConsumerType",
    "HashRange",
    "InitialPosition",
    "KeySharedMode",
    "hash_range_pair",
    "validate_sticky_policy_ranges",
]
