"""4.x hash-range assignment snapshots and the "impacted consumers" diff between two of them.

Models `ConsumerHashAssignmentsSnapshot`, `ImpactedConsumersResult` and `UpdatedHashRanges` of
branch-4.0 (docs/guide/key-shared-ordering.md#draining-hashes, golden README-dispatch §6). A snapshot is a sorted list
of inclusive
``(start, end, consumer)`` assignments; `diff_ranges` walks two of them like Pulsar does, quirks
included (a range present on one side only is paired with the other side's *current* consumer; the
head of a before-range that overlaps an after-range is not reported). Simplification: consumers are
any hashable objects compared with ``==`` (Pulsar compares consumerId plus address, and keys the
result maps by identity); result maps list consumers in first-seen order instead of identity-hash order.
Also holds the input checks (ints, sticky-key hashes) that the hash-range selectors share.
"""

from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass
from typing import Any, Generic, Iterable, Sequence, SupportsIndex

import numpy as np
import numpy.typing as npt

from pulsarlab.broker.key_shared.base import H, ImpactedConsumers
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.hashing import INT_MAX

Assignment = tuple[int, int, H]  # (start, end, consumer), both ends inclusive
RangeT = tuple[int, int]

_UNSORTED = "Ranges must be non-overlapping and sorted"
_INVERTED = "Range end must >= range start."


def as_int(value: object, what: str) -> int:
    """``value`` as a Python int; TypeError naming ``what`` for bools, floats, strings and the like."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not bool ({value!r})")
    if not isinstance(value, SupportsIndex):  # what operator.index refuses
        raise TypeError(f"{what} must be an int, not {type(value).__name__} ({value!r})")
    return operator.index(value)


def check_key_hash(value: object) -> int:
    """A sticky-key hash as ``select(int)`` takes it: an int in [0, 2^31-1]."""
    key_hash = as_int(value, "a sticky key hash")
    if not 0 <= key_hash <= INT_MAX:
        raise ValueError(f"a sticky key hash must be in [0, {INT_MAX}] (a masked Murmur3 hash), not {key_hash}")
    return key_hash


def check_key_hashes(values: npt.ArrayLike) -> np.ndarray:
    """Vectorised `check_key_hash`: an int64 array of hashes in [0, 2^31-1]."""
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"sticky key hashes must be an integer array, not dtype {arr.dtype}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high > INT_MAX:
        bad = low if low < 0 else high
        raise ValueError(f"a sticky key hash must be in [0, {INT_MAX}] (a masked Murmur3 hash), not {bad}")
    return arr.astype(np.int64, copy=False)


def make_range(start: object, end: object) -> RangeT:
    """Pulsar's `Range.of(start, end)`: two ints with end >= start."""
    low, high = as_int(start, "hash range start"), as_int(end, "hash range end")
    if high < low:
        raise IllegalArgumentException(_INVERTED)
    return low, high


def _range_of(item: Any) -> RangeT:  # any (start, end) pair a caller gives
    try:
        start, end = item
    except (TypeError, ValueError):
        raise TypeError(f"a hash range must be a (start, end) pair, not {item!r}") from None
    return make_range(start, end)


def merge_overlapping_ranges(ranges: Iterable[Sequence[int]]) -> list[RangeT]:
    """`mergeOverlappingRanges`: the ranges as a sorted set, with overlapping and adjacent ones joined."""
    ordered = sorted({_range_of(r) for r in ranges})
    merged: list[RangeT] = []
    for start, end in ordered:
        if merged and merged[-1][1] >= start - 1:
            prev_start, prev_end = merged[-1]
            merged[-1] = (prev_start, max(prev_end, end))
        else:
            merged.append((start, end))
    return merged


class UpdatedHashRanges(list[RangeT]):
    """`UpdatedHashRanges`: one consumer's merged, sorted hash ranges (a list of ``(start, end)``).

    Build it with `of`; the list must stay sorted and merged for `contains_sticky_key` to hold.
    """

    @classmethod
    def of(cls, ranges: Iterable[Sequence[int]]) -> "UpdatedHashRanges":
        return cls(merge_overlapping_ranges(ranges))

    def contains_sticky_key(self, sticky_key_hash: int) -> bool:
        """Whether a sticky-key hash lies in one of the ranges (binary search)."""
        sticky_key_hash = as_int(sticky_key_hash, "a sticky key hash")
        i = bisect.bisect_right(self, (sticky_key_hash, float("inf"))) - 1
        return i >= 0 and self[i][0] <= sticky_key_hash <= self[i][1]


def _group_merged(pairs: Iterable[tuple[H, RangeT]]) -> dict[H, UpdatedHashRanges]:
    grouped: dict[H, list[RangeT]] = {}
    for consumer, rng in pairs:
        grouped.setdefault(consumer, []).append(rng)
    return {consumer: UpdatedHashRanges.of(rs) for consumer, rs in grouped.items()}


@dataclass(frozen=True)
class ConsumerHashAssignmentsSnapshot(Generic[H]):
    """The hash ranges assigned to each consumer at one point in time (sorted by (start, end))."""

    assignments: tuple[Assignment[H], ...]

    @classmethod
    def of(cls, assignments: Iterable[tuple[object, object, H]]) -> "ConsumerHashAssignmentsSnapshot[H]":
        """Build from ``(start, end, consumer)`` items in order.

        Raises Pulsar's IllegalArgumentException when an item is not strictly greater than the previous
        one by (start, end); overlapping-but-sorted ranges such as [1,5],[5,9] are accepted, as in Pulsar.
        """
        out: list[Assignment[H]] = []
        prev: RangeT | None = None
        for item in assignments:
            if len(item) != 3:
                raise TypeError(f"an assignment must be (start, end, consumer), not {item!r}")
            rng = make_range(item[0], item[1])
            if prev is not None and rng <= prev:
                raise IllegalArgumentException(_UNSORTED)
            out.append((rng[0], rng[1], item[2]))
            prev = rng
        return cls(tuple(out))

    @classmethod
    def empty(cls) -> "ConsumerHashAssignmentsSnapshot[H]":
        return cls(())

    def ranges_by_consumer(self) -> dict[H, UpdatedHashRanges]:
        """`getRangesByConsumer()`: each consumer's ranges, merged."""
        return _group_merged((c, (s, e)) for s, e, c in self.assignments)

    def diff_ranges(self, other: "ConsumerHashAssignmentsSnapshot[H]") -> dict[RangeT, tuple[H | None, H | None]]:
        return diff_ranges(self.assignments, other.assignments)

    def resolve_impacted_consumers(self, other: "ConsumerHashAssignmentsSnapshot[H]") -> ImpactedConsumers[H]:
        return resolve_impacted_consumers(self.diff_ranges(other))


def diff_ranges(
    before: Sequence[Assignment[H]], after: Sequence[Assignment[H]]
) -> dict[RangeT, tuple[H | None, H | None]]:
    """`diffRanges`: range -> (consumer before, consumer after), in Pulsar's LinkedHashMap order.

    Both inputs must already be valid snapshots (sorted; see `ConsumerHashAssignmentsSnapshot.of`).
    A later put of an existing range overwrites its value but keeps its first position (as a Python
    dict does).
    """
    impacted: dict[RangeT, tuple[H | None, H | None]] = {}
    i = j = 0
    while i < len(before) and j < len(after):
        b_start, b_end, bc = before[i]
        a_start, a_end, ac = after[j]
        if (b_start, b_end) == (a_start, a_end):
            if bc != ac:
                impacted[(a_start, a_end)] = (bc, ac)
            i += 1
            j += 1
        elif b_end < a_start:
            impacted[(b_start, b_end)] = (bc, ac)  # ac belongs to an unrelated later range (Pulsar quirk)
            i += 1
        elif a_end < b_start:
            impacted[(a_start, a_end)] = (bc, ac)
            j += 1
        else:
            o_end = min(b_end, a_end)
            if bc != ac:
                impacted[(max(b_start, a_start), o_end)] = (bc, ac)
            if b_end <= o_end:
                i += 1
            if a_end <= o_end:
                j += 1
    for b_start, b_end, bc in before[i:]:
        impacted[(b_start, b_end)] = (bc, None)
    for a_start, a_end, ac in after[j:]:
        impacted[(a_start, a_end)] = (None, ac)
    return impacted


def resolve_impacted_consumers(diff: dict[RangeT, tuple[H | None, H | None]]) -> ImpactedConsumers[H]:
    """`resolveImpactedConsumers`: per consumer, the merged ranges it lost (``removed``) and gained (``added``)."""
    removed: dict[H, list[RangeT]] = {**_group_merged((bc, rng) for rng, (bc, _ac) in diff.items() if bc is not None)}
    added: dict[H, list[RangeT]] = {**_group_merged((ac, rng) for rng, (_bc, ac) in diff.items() if ac is not None)}
    return ImpactedConsumers(removed=removed, added=added)


def impacted_consumers(
    before_assignments: Iterable[tuple[object, object, H]], after_assignments: Iterable[tuple[object, object, H]]
) -> ImpactedConsumers[H]:
    """The impact of going from one assignment list to another (lists of ``(start, end, consumer)``).

    What a 4.x selector returns from add/remove when ``addOrRemoveReturnsImpactedConsumersResult`` is on.
    """
    before = ConsumerHashAssignmentsSnapshot.of(before_assignments)
    after = ConsumerHashAssignmentsSnapshot.of(after_assignments)
    return before.resolve_impacted_consumers(after)


__all__ = [
    "as_int",
    "check_key_hash",
    "check_key_hashes",
    "ConsumerHashAssignmentsSnapshot",
    "UpdatedHashRanges",
    "diff_ranges",
    "impacted_consumers",
    "make_range",
    "merge_overlapping_ranges",
    "resolve_impacted_consumers",
]
