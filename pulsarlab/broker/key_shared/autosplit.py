"""Key_Shared AUTO_SPLIT hash ranges: each new consumer takes the lower half of the biggest range.

Models `HashRangeAutoSplitStickyKeyConsumerSelector` (docs/guide/key-shared-selectors.md#auto-split, golden README §3),
the selector a
Key_Shared AUTO_SPLIT subscription uses when `subscriptionKeySharedUseConsistentHashing=false`. The
state is Pulsar's sorted map ``upper bound -> consumer``: a consumer owns (previous upper, upper], the
first one [0, upper], and the top upper bound is always ``range_size`` (one past the largest slot).
3.x selects the ceiling of ``hash % range_size``; 4.x the ceiling of a hash already reduced into
[0, range_size-1]. Simplification: the biggest range is found with a sorted index of (gap, upper)
instead of Pulsar's linear scan (same choice, ties to the lowest range); failures that Pulsar returns
as a failed future are raised with ``via="future"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sortedcontainers import SortedDict, SortedList

from pulsarlab.broker.key_shared.assignments import (
    ConsumerHashAssignmentsSnapshot,
    as_int,
    check_key_hash,
    check_key_hashes,
)
from pulsarlab.broker.key_shared.base import NO_CONSUMER, C, ImpactedConsumers, StickyKeyConsumerSelector
from pulsarlab.errors import ConsumerAssignException, IllegalArgumentException
from pulsarlab.hashing import INT_MAX
from pulsarlab.profiles import ErrorDelivery, Profile, StickyHashMode, get_profile

DEFAULT_RANGE_SIZE = 2 << 15


def validate_range_size(range_size: object) -> int:
    """The constructor's checks, with Pulsar's IllegalArgumentException texts."""
    size = as_int(range_size, "range_size")
    if size < 2:
        raise IllegalArgumentException("range size must greater than 2")
    if size & (size - 1):
        raise IllegalArgumentException("range size must be nth power with 2")
    if size > INT_MAX:
        raise ValueError(f"range_size {size} does not fit a Java int (at most {INT_MAX})")
    return size


class HashRangeAutoSplitSelector(StickyKeyConsumerSelector[C]):
    """Auto-split hash-range selector; ``return_impacted`` defaults to the 4.x behaviour of the profile."""

    kind = "auto_split"

    def __init__(
        self,
        profile: Profile | str | None = None,
        range_size: int = DEFAULT_RANGE_SIZE,
        return_impacted: bool | None = None,
    ) -> None:
        super().__init__(get_profile(profile))
        self.range_size = validate_range_size(range_size)
        self.return_impacted = self.profile.is_4x if return_impacted is None else bool(return_impacted)
        self._range_map: SortedDict = SortedDict()  # upper bound -> Consumer
        self._consumer_range: dict[C, int] = {}  # Consumer -> its upper bound, in attach order
        self._gaps = SortedList()  # (-(upper - lower upper), upper): first item is the range to split
        self._last_snapshot: ConsumerHashAssignmentsSnapshot[C] | None = (
            ConsumerHashAssignmentsSnapshot.empty() if self.return_impacted else None
        )
        self._bulk_cache: tuple[np.ndarray, np.ndarray] | None = None

    # -- membership ---------------------------------------------------------------------------
    def add_consumer(self, consumer: C) -> ImpactedConsumers[C] | None:
        if not self._range_map:
            self._put(self.range_size, consumer)
        else:
            neg_gap, upper = self._gaps[0]
            if -neg_gap <= 1:
                raise ConsumerAssignException(
                    f"No more range can assigned to new consumer, assigned consumers {len(self._range_map)}",
                    via="future" if self.profile.autosplit_errors is ErrorDelivery.FUTURE else "throw",
                )
            self._put(upper - (-neg_gap >> 1), consumer)
        return self._impacts()

    def remove_consumer(self, consumer: C) -> ImpactedConsumers[C] | None:
        upper = self._consumer_range.pop(consumer, None)
        if upper is not None:
            if upper == self.range_size and len(self._range_map) > 1:
                # the top bound must stay at range_size: the lower neighbour grows upward to it
                lower_upper = self._range_map.peekitem(self._range_map.index(upper) - 1)[0]
                lower_consumer = self._delete(lower_upper)
                self._range_map[upper] = lower_consumer
                self._consumer_range[lower_consumer] = upper
                self._bulk_cache = None
            else:
                self._delete(upper)
        return self._impacts()

    @property
    def consumers(self) -> list[C]:
        return list(self._consumer_range)

    def _put(self, upper: int, consumer: C) -> None:
        index = self._range_map.bisect_left(upper)
        lower = self._range_map.peekitem(index - 1)[0] if index > 0 else 0
        if index < len(self._range_map):
            above = self._range_map.peekitem(index)[0]
            self._gaps.remove((lower - above, above))
            self._gaps.add((upper - above, above))
        self._gaps.add((lower - upper, upper))
        self._range_map[upper] = consumer
        self._consumer_range[consumer] = upper
        self._bulk_cache = None

    def _delete(self, upper: int) -> C:
        index = self._range_map.index(upper)
        lower = self._range_map.peekitem(index - 1)[0] if index > 0 else 0
        self._gaps.remove((lower - upper, upper))
        if index + 1 < len(self._range_map):
            above = self._range_map.peekitem(index + 1)[0]
            self._gaps.remove((upper - above, above))
            self._gaps.add((lower - above, above))
        self._bulk_cache = None
        owner: C = self._range_map.pop(upper)
        return owner

    def _impacts(self) -> ImpactedConsumers[C] | None:
        if not self.return_impacted:
            return None
        after = ConsumerHashAssignmentsSnapshot.of(self.assignments())
        assert self._last_snapshot is not None  # kept whenever return_impacted is on
        impacted = self._last_snapshot.resolve_impacted_consumers(after)
        self._last_snapshot = after
        return impacted

    # -- selection ----------------------------------------------------------------------------
    def key_hash_range(self) -> tuple[int, int]:
        return 0, self.range_size - 1

    def _slot(self, key_hash: int) -> int:
        return key_hash % self.range_size if self.profile.sticky_hash_mode is StickyHashMode.FULL else key_hash

    def select(self, key_hash: int) -> C | None:
        key_hash = check_key_hash(key_hash)
        if not self._range_map:
            return None
        index = self._range_map.bisect_left(self._slot(key_hash))
        if index == len(self._range_map):
            raise ValueError(self._above_range_message(key_hash))
        owner: C = self._range_map.peekitem(index)[1]
        return owner

    def select_bulk(self, key_hashes: np.ndarray) -> np.ndarray:
        hashes = check_key_hashes(key_hashes)
        if not self._range_map:
            return np.full(hashes.shape, NO_CONSUMER, dtype=np.int64)
        uppers, ids = self._arrays()
        slots = hashes % self.range_size if self.profile.sticky_hash_mode is StickyHashMode.FULL else hashes
        index = np.searchsorted(uppers, slots, side="left")
        if index.size and index.max() == len(uppers):
            raise ValueError(self._above_range_message(int(slots.max())))
        return ids[index]

    def _above_range_message(self, key_hash: int) -> str:
        low, high = self.key_hash_range()
        return f"key hash {key_hash} is outside this selector's key hash range [{low}, {high}]"

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._bulk_cache is None:
            uppers = np.fromiter(self._range_map.keys(), dtype=np.int64, count=len(self._range_map))
            ids = np.fromiter((c.id for c in self._range_map.values()), dtype=np.int64, count=len(self._range_map))
            self._bulk_cache = (uppers, ids)
        return self._bulk_cache

    # -- reporting ----------------------------------------------------------------------------
    def consumer_key_hash_ranges(self) -> dict[C, list[tuple[int, int]]]:
        result: dict[C, list[tuple[int, int]]] = {}
        for start, end, consumer in self.assignments():
            result.setdefault(consumer, []).append((start, end))
        return result

    def assignments(self) -> list[tuple[int, int, C]]:
        out = []
        start = 0
        for upper, consumer in self._range_map.items():
            out.append((start, upper, consumer))
            start = upper + 1
        return out

    def range_map(self) -> list[tuple[int, C]]:
        """Pulsar's ``rangeMap``: (upper bound, consumer) in ascending order."""
        return list(self._range_map.items())

    def snapshot(self) -> dict[str, Any]:
        return {
            "range_size": self.range_size,
            "range_map": tuple((upper, c.id) for upper, c in self._range_map.items()),
            "consumers": tuple((c.id, c.name) for c in self._consumer_range),
        }
