"""Key_Shared STICKY hash ranges: each consumer declares the ranges it owns exclusively.

Models `HashRangeExclusiveStickyKeyConsumerSelector` (docs/guide/key-shared-selectors.md#sticky-ranges, golden README
§5) in both forms,
chosen by ``profile.sticky_ranges``:
* LEGACY (2.x): a sorted map of range *boundaries* (each range's start and end) -> consumer. A slot is
  served when the boundaries on both sides of it belong to one consumer, so the gaps between one
  consumer's ranges select it too; add-time checks run per range in the given order.
* PAIR (3.x, 4.x): a sorted map start -> (range, consumer), sorted validation of a consumer's own ranges
  ("Consumer's own ranges conflict"), a slot is served only inside a declared range.
(The client-side `KeySharedPolicySticky.validate()` is `pulsarlab.protocol.subscription`'s.) Unowned
hashes select None. Simplifications: the broker's liveness check of a conflicting consumer's
connection (#20026) always finds it alive; failures Pulsar returns as failed futures are raised with
``via="future"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sortedcontainers import SortedDict

from pulsarlab.broker.key_shared.assignments import as_int, check_key_hash, check_key_hashes
from pulsarlab.broker.key_shared.base import NO_CONSUMER, C, StickyKeyConsumerSelector
from pulsarlab.errors import ConsumerAssignException, IllegalArgumentException
from pulsarlab.hashing import INT_MAX
from pulsarlab.profiles import ErrorDelivery, Profile, StickyHashMode, StickyRangesVariant, get_profile
from pulsarlab.protocol.subscription import hash_range_pair

DEFAULT_RANGE_SIZE = 2 << 15


def validate_range_size(range_size: object) -> int:
    size = as_int(range_size, "range_size")
    if size < 1:
        raise IllegalArgumentException("range size must greater than 0")
    if size > INT_MAX:
        raise ValueError(f"range_size {size} does not fit a Java int (at most {INT_MAX})")
    return size


def declared_ranges(consumer: C) -> list[tuple[int, int]] | None:
    """A consumer's KeySharedMeta hash ranges as int pairs, in the given order (None: no KeySharedMeta)."""
    if consumer.ranges is None:
        return None
    if isinstance(consumer.ranges, (str, bytes)):
        raise TypeError(f"consumer {consumer.id} ranges must be a list of (start, end) pairs, not {consumer.ranges!r}")
    return [hash_range_pair(r, f"consumer {consumer.id} hash range") for r in consumer.ranges]


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return max(a[0], b[0]) <= min(a[1], b[1])


class HashRangeExclusiveSelector(StickyKeyConsumerSelector[C]):
    """Exclusive (STICKY) hash-range selector; the consumers' ranges come from ``Consumer.ranges``."""

    kind = "sticky"

    def __init__(self, profile: Profile | str | None = None, range_size: int = DEFAULT_RANGE_SIZE) -> None:
        super().__init__(get_profile(profile))
        self.range_size = validate_range_size(range_size)
        self.variant = self.profile.sticky_ranges
        # LEGACY: boundary key -> Consumer.  PAIR: start -> (start, end, Consumer).
        self._map: SortedDict = SortedDict()
        self._keys_by_consumer: dict[C, list[int]] = {}  # attach order; the map keys each one put
        self._bulk_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- membership ---------------------------------------------------------------------------
    def add_consumer(self, consumer: C) -> None:
        ranges = self._check_meta(declared_ranges(consumer))
        if self.variant is StickyRangesVariant.LEGACY:
            self._validate_legacy(ranges)
            keys = [k for start, end in ranges for k in (start, end)]
            for k in keys:
                self._map[k] = consumer
        else:
            self._validate_pair(ranges)
            keys = [start for start, _end in ranges]
            for start, end in ranges:
                self._map[start] = (start, end, consumer)
        self._keys_by_consumer[consumer] = keys
        self._bulk_cache = None

    def remove_consumer(self, consumer: C) -> None:
        for k in self._keys_by_consumer.pop(consumer, ()):
            self._map.pop(k, None)
        self._bulk_cache = None

    @property
    def consumers(self) -> list[C]:
        return list(self._keys_by_consumer)

    def _fail(self, message: str) -> ConsumerAssignException:
        via = "future" if self.profile.sticky_ranges_errors is ErrorDelivery.FUTURE else "throw"
        return ConsumerAssignException(message, via=via)

    def _check_meta(self, ranges: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
        if ranges is None:
            raise self._fail("Must specify key shared meta for consumer.")
        if not ranges:
            raise self._fail("Ranges for KeyShared policy must not be empty.")
        return ranges

    def _floor(self, key: int) -> Any:
        index = self._map.bisect_right(key)
        return self._map.peekitem(index - 1) if index else None

    def _ceiling(self, key: int) -> Any:
        index = self._map.bisect_left(key)
        return self._map.peekitem(index) if index < len(self._map) else None

    def _validate_legacy(self, ranges: list[tuple[int, int]] | None) -> None:
        for start, end in self._check_meta(ranges):
            if start > end:
                raise self._fail("Fixed hash range start > end")
            floor, ceiling = self._floor(end), self._ceiling(start)
            if floor is not None and floor[0] >= start:
                raise self._conflict(floor[1])
            if ceiling is not None and ceiling[0] <= end:
                raise self._conflict(ceiling[1])
            if floor is not None and ceiling is not None and floor[1] == ceiling[1]:
                # the new range sits in a gap between two boundaries of one consumer
                owner = ceiling[1]
                if any(_overlaps((start, end), r) for r in declared_ranges(owner) or ()):
                    raise self._conflict(owner)

    def _validate_pair(self, ranges: list[tuple[int, int]] | None) -> None:
        ranges = self._check_meta(ranges)
        ordered = sorted(ranges, key=lambda r: r[0])
        for i, (start, end) in enumerate(ordered):
            if start > end:
                raise self._fail(f"Fixed hash range start > end for range: [{start},{end}]")
            if i + 1 < len(ordered) and _overlaps(ordered[i], ordered[i + 1]):
                nxt = ordered[i + 1]
                raise self._fail(f"Consumer's own ranges conflict: [{start},{end}] overlaps with [{nxt[0]},{nxt[1]}]")
        for new in ranges:
            for entry in (self._floor(new[0]), self._ceiling(new[0])):
                if entry is not None and _overlaps(new, entry[1][:2]):
                    raise self._conflict(entry[1][2])

    def _conflict(self, owner: C) -> ConsumerAssignException:
        return self._fail(f"Range conflict with consumer {owner}")

    # -- selection ----------------------------------------------------------------------------
    def key_hash_range(self) -> tuple[int, int]:
        return 0, self.range_size - 1

    def _full_hash(self) -> bool:
        return self.profile.sticky_hash_mode is StickyHashMode.FULL

    def select(self, key_hash: int) -> C | None:
        key_hash = check_key_hash(key_hash)
        if not self._map:
            return None
        slot = key_hash % self.range_size if self._full_hash() else key_hash
        floor = self._floor(slot)
        if self.variant is StickyRangesVariant.LEGACY:
            ceiling = self._ceiling(slot)
            if floor is not None and ceiling is not None and floor[1] == ceiling[1]:
                owner: C = floor[1]
                return owner
            return None
        if floor is not None and floor[1][0] <= slot <= floor[1][1]:
            pair_owner: C = floor[1][2]
            return pair_owner
        return None

    def select_bulk(self, key_hashes: np.ndarray) -> np.ndarray:
        hashes = check_key_hashes(key_hashes)
        if not self._map:
            return np.full(hashes.shape, NO_CONSUMER, dtype=np.int64)
        slots = hashes % self.range_size if self._full_hash() else hashes
        keys, ends, ids = self._arrays()
        floor = np.searchsorted(keys, slots, side="right") - 1
        floor_ok = floor >= 0
        floor_c = np.clip(floor, 0, None)
        if self.variant is StickyRangesVariant.LEGACY:
            ceiling = np.searchsorted(keys, slots, side="left")
            ceiling_ok = ceiling < len(keys)
            ceiling_c = np.clip(ceiling, None, len(keys) - 1)
            served = floor_ok & ceiling_ok & (ids[floor_c] == ids[ceiling_c])
        else:
            served = floor_ok & (slots <= ends[floor_c])
        return np.where(served, ids[floor_c], NO_CONSUMER)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._bulk_cache is None:
            n = len(self._map)
            keys = np.fromiter(self._map.keys(), dtype=np.int64, count=n)
            if self.variant is StickyRangesVariant.LEGACY:
                ends = keys
                ids = np.fromiter((c.id for c in self._map.values()), dtype=np.int64, count=n)
            else:
                ends = np.fromiter((v[1] for v in self._map.values()), dtype=np.int64, count=n)
                ids = np.fromiter((v[2].id for v in self._map.values()), dtype=np.int64, count=n)
            self._bulk_cache = (keys, ends, ids)
        return self._bulk_cache

    # -- reporting ----------------------------------------------------------------------------
    def consumer_key_hash_ranges(self) -> dict[C, list[tuple[int, int]]]:
        """LEGACY pairs the boundary keys (1st, 2nd), (3rd, 4th), ... and reports a pair only when both
        belong to one consumer, so a single-point range shifts the pairing. PAIR lists declared ranges."""
        result: dict[C, list[tuple[int, int]]] = {}
        if self.variant is StickyRangesVariant.LEGACY:
            items = list(self._map.items())
            for (k1, c1), (k2, c2) in zip(items[0::2], items[1::2]):
                if c1 == c2:
                    result.setdefault(c1, []).append((k1, k2))
        else:
            for start, end, consumer in self._map.values():
                result.setdefault(consumer, []).append((start, end))
        return result

    def range_map(self) -> list[tuple[object, ...]]:
        """Pulsar's ``rangeMap``: LEGACY (boundary, consumer); PAIR (start, (start, end), consumer)."""
        if self.variant is StickyRangesVariant.LEGACY:
            return list(self._map.items())
        return [(start, (start, end), c) for start, end, c in self._map.values()]

    def declared_assignments(self) -> list[tuple[int, int, C]]:
        """The ranges the attached consumers declared, sorted by (start, end)."""
        out = [(s, e, c) for c in self._keys_by_consumer for s, e in declared_ranges(c) or ()]
        return sorted(out, key=lambda t: (t[0], t[1]))

    def served_assignments(self) -> list[tuple[int, int, C]]:
        """The slots ``select`` gives each consumer, as sorted runs (boundaries beyond range_size kept).

        PAIR: the declared ranges. LEGACY: every boundary key, plus the whole span between two consecutive
        boundaries of one consumer (so the gaps between a consumer's own ranges are included).
        """
        if self.variant is StickyRangesVariant.PAIR:
            return list(self._map.values())
        runs: list[tuple[int, int, C]] = []
        items = list(self._map.items())
        for i, (key, consumer) in enumerate(items):
            has_next = i + 1 < len(items) and items[i + 1][1] == consumer
            end = items[i + 1][0] if has_next else key
            if runs and runs[-1][2] == consumer and key <= runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], max(runs[-1][1], end), consumer)
            else:
                runs.append((key, end, consumer))
        return runs

    def snapshot(self) -> dict[str, Any]:
        """``ranges`` are the served runs (what ``select`` answers); ``declared_ranges`` what the consumers
        asked for; LEGACY adds its ``boundaries`` map."""
        snap: dict[str, Any] = {
            "range_size": self.range_size,
            "variant": self.variant.value,
            "ranges": tuple((s, e, c.id) for s, e, c in self.served_assignments()),
            "declared_ranges": tuple((s, e, c.id) for s, e, c in self.declared_assignments()),
            "consumers": tuple((c.id, c.name) for c in self._keys_by_consumer),
        }
        if self.variant is StickyRangesVariant.LEGACY:
            snap["boundaries"] = tuple((k, c.id) for k, c in self._map.items())
        return snap
