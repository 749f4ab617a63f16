"""The consistent-hashing Key_Shared selector: a ring of per-consumer points, in Pulsar's four generations.

Models `ConsistentHashingStickyKeyConsumerSelector` with its `ConsumerNameIndexTracker` and ring entries
(`HashRingEntry`, `HashRingPointEntry`), docs/guide/key-shared-selectors.md#consistent-hashing and golden README §4.
The profile's
``consistent_hashing`` variant picks the generation:

* LEGACY (up to 3.0.2): point key ``name + i``; a shared point keeps a name-sorted list and selects
  ``list[hash % len]``.
* V3_COUNTERS (3.0.3-3.0.6): point key ``name\\0i``; a shared point orders its entries by priority (desc),
  name, then the instance's selection counter, and selects entry 0.
* V3_IDENTITY (3.0.7+): point key ``name\\0idx\\0i``; a later consumer's point replaces an earlier one.
* V4 (4.x, PIP-379): the same key reduced into [1, range_max]; the first consumer keeps a point and later
  ones queue in its colliding list, taking over in FIFO order when the holder leaves.

Simplifications: a consumer's identity is its id (Pulsar compares instances, or consumerId plus address);
there is no locking; the 4.x "zero points" error is kept as a message rather than logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, Sequence

import numpy as np
from sortedcontainers import SortedDict

from pulsarlab.broker.key_shared.assignments import as_int, impacted_consumers
from pulsarlab.broker.key_shared.base import NO_CONSUMER, C, ImpactedConsumers, StickyKeyConsumerSelector
from pulsarlab.errors import IllegalArgumentException, NullPointerException
from pulsarlab.hashing import INT_MAX, murmur3_32, murmur3_32_bulk, reduce_hash, reduce_hash_bulk
from pulsarlab.profiles import ConsistentHashingVariant, Profile, get_profile

Variant = ConsistentHashingVariant
_JAVA_INT_MIN = -0x80000000
_INDEXED = (Variant.V3_IDENTITY, Variant.V4)


def _java_int(value: int) -> int:
    """``value`` wrapped to a signed 32-bit Java int (Pulsar's range arithmetic can overflow at 2^31-1)."""
    return (value - _JAVA_INT_MIN) % (1 << 32) + _JAVA_INT_MIN


def java_string_order(name: str) -> bytes:
    """A sort key that orders strings like Java's ``String.compareTo`` (by UTF-16 code unit)."""
    return name.encode("utf-16-be", "surrogatepass")


def point_key(variant: Variant, name: str, name_index: int, i: int) -> str:
    """The string hashed for ring point ``i`` of a consumer, as each generation builds it."""
    if variant is Variant.LEGACY:
        return f"{name}{i}"
    if variant is Variant.V3_COUNTERS:
        return f"{name}\0{i}"
    return f"{name}\0{name_index}\0{i}"


def point_hash(key: str, variant: Variant, range_max: int) -> int:
    """The ring position of a point key: masked Murmur3 (3.x), reduced into [1, range_max] in 4.x."""
    # Java's String.getBytes() writes '?' for what UTF-8 cannot encode (lone surrogates); so does "replace".
    masked = murmur3_32(key.encode("utf-8", "replace"))
    return reduce_hash(masked, 1, range_max) if variant is Variant.V4 else masked


def recommended_points(points: int) -> int:
    """4.x's advice when a consumer gets no point: ``max((int) (points * 1.5), points + 1)``."""
    return max(int(points * 1.5), points + 1)


@dataclass(frozen=True)
class RingPointKey:
    """One ring point of a consumer: its index, the key string hashed, the hash, and who holds it now.

    ``holders`` are the ids at that ring position in ring order (the selected one first), empty when no
    point sits there.
    """

    index: int
    key: str
    hash: int
    holders: tuple[int, ...] = ()

    @property
    def display(self) -> str:
        """The key with NUL shown as ``\\0``, e.g. ``c1\\00\\07 -> 12345``."""
        return f"{self.key.replace(chr(0), chr(92) + '0')} -> {self.hash}"


@dataclass
class _NameIndexEntry:
    name: str
    index: int
    refs: int = 0


class ConsumerNameIndexTracker:
    """`ConsumerNameIndexTracker` (3.0.7+/4.x): the smallest free index per consumer name, held per
    instance with a reference count; the index is freed when the count drops to zero."""

    def __init__(self) -> None:
        self._used: dict[str, set[int]] = {}
        self._entries: dict[int, _NameIndexEntry] = {}

    def next_free_index(self, name: str) -> int:
        """The index a new instance with this name would get now."""
        used = self._used.get(name, ())
        index = 0
        while index in used:
            index += 1
        return index

    def add_reference(self, consumer: C) -> int:
        entry = self._entries.get(consumer.id)
        if entry is None:
            index = self.next_free_index(consumer.name)
            self._used.setdefault(consumer.name, set()).add(index)
            entry = self._entries[consumer.id] = _NameIndexEntry(consumer.name, index)
        entry.refs += 1
        return entry.index

    def remove_reference(self, consumer: C) -> None:
        entry = self._entries[consumer.id]
        entry.refs -= 1
        if entry.refs == 0:
            used = self._used[entry.name]
            used.discard(entry.index)
            if not used:
                del self._used[entry.name]
            del self._entries[consumer.id]

    def tracked_index(self, consumer: C) -> int | None:
        entry = self._entries.get(consumer.id)
        return None if entry is None else entry.index

    def indexes(self) -> dict[int, int]:
        """consumer id -> name index, for every tracked instance."""
        return {cid: e.index for cid, e in self._entries.items()}


@dataclass(eq=False)
class _CountedEntry(Generic[C]):
    """v3_counters `ConsumerEntry`: compared by identity, so the same consumer may sit twice at a point."""

    consumer: C


@dataclass(eq=False)
class _CountedPoint(Generic[C]):
    """v3_counters `HashRingEntry`: ordered entries and the selected one (always entry 0 after a change)."""

    entries: list[_CountedEntry[C]] = field(default_factory=list)
    selected: _CountedEntry[C] | None = None


@dataclass(eq=False)
class _SharedPoint(Generic[C]):
    """v4 `HashRingPointEntry`: the consumer holding the point and those queued behind it (FIFO)."""

    selected: C | None
    colliding: list[C] = field(default_factory=list)

    def remove(self, consumer: C) -> bool:
        """Drop a consumer; True when the point is left empty."""
        if self.selected == consumer:
            self.selected = self.colliding.pop(0) if self.colliding else None
        elif self.colliding:
            self.colliding = [c for c in self.colliding if c != consumer]
        return self.selected is None


@dataclass(frozen=True)
class _BulkArrays:
    points: np.ndarray  # sorted ring positions
    owners: np.ndarray  # selected id per point (LEGACY: unused)
    offsets: np.ndarray  # LEGACY: start of each point's list in ``flat``
    sizes: np.ndarray  # LEGACY: list length per point
    flat: np.ndarray  # LEGACY: every list's ids, concatenated in ring order
    table: np.ndarray | None = None  # V4 with a small key-hash range: the selected id for every hash 0..range_max


class ConsistentHashingSelector(StickyKeyConsumerSelector[C]):
    """Pulsar's consistent-hashing selector for the profile's generation (see the module docstring).

    ``points`` is `subscriptionKeySharedConsistentHashingReplicaPoints`. 4.x only: ``range_max`` is the top
    of the key-hash range [1, range_max] (default the profile's, 65535) and ``return_impacted`` makes
    add/remove return the `ImpactedConsumers` diff of the assignment snapshots (default on for 4.x).
    """

    kind = "consistent_hashing"

    def __init__(
        self,
        profile: Profile | str | None = None,
        points: int = 100,
        range_max: int | None = None,
        return_impacted: bool | None = None,
    ) -> None:
        super().__init__(get_profile(profile))
        self.variant: Variant = self.profile.consistent_hashing
        self.points = as_int(points, "points")
        if self.points < 1:
            raise ValueError(
                f"points (subscriptionKeySharedConsistentHashingReplicaPoints) must be at least 1, not {self.points}"
            )
        is_v4 = self.variant is Variant.V4
        if range_max is not None and not is_v4:
            raise ValueError(
                f"range_max applies to the 4.x selector only; the {self.variant.value} ring spans every 31-bit hash"
            )
        if return_impacted and not is_v4:
            raise ValueError(f"the {self.variant.value} selector does not report impacted consumers (4.x only)")
        if is_v4:
            top = self.profile.consistent_hashing_key_range_max if range_max is None else range_max
            top = as_int(top, "range_max")
            if top < 1:
                raise IllegalArgumentException("Range end must >= range start.")
            if top > INT_MAX:
                raise ValueError(f"range_max must fit a Java int (at most {INT_MAX}), not {top}")
            self.range_max = top
        else:
            self.range_max = INT_MAX
        self.return_impacted = bool(self.profile.is_4x if return_impacted is None else return_impacted) and is_v4

        self._ring: SortedDict = SortedDict()
        # select() answers by hash since the ring last changed (cleared by add_consumer / remove_consumer, the
        # only paths that change the ring); a pure speed-up of the per-entry dispatch path
        self._selected: dict[int, C] = {}
        self._attached: dict[int, C] = {}
        self._tracker = ConsumerNameIndexTracker()
        self._added_index: dict[int, int] = {}  # name index each attached consumer was added with
        self._counters: dict[int, int] = {}  # v3_counters: points where each instance is selected
        self._zero_point_messages: dict[int, str] = {}  # v4: Pulsar's error log for consumers with no point
        self._assignments_snapshot: list[tuple[int, int, C]] = []
        self._bulk: _BulkArrays | None = None

    # -- membership ---------------------------------------------------------------------------
    @property
    def consumers(self) -> list[C]:
        return list(self._attached.values())

    def add_consumer(self, consumer: C) -> ImpactedConsumers[C] | None:
        self._selected.clear()
        consumer = _check_consumer(consumer)
        if consumer.id in self._attached:
            raise ValueError(f"consumer id {consumer.id} is already attached ({self._attached[consumer.id]})")
        if self.variant is Variant.LEGACY:
            self._add_legacy(consumer)
        elif self.variant is Variant.V3_COUNTERS:
            self._add_counted(consumer)
        elif self.variant is Variant.V3_IDENTITY:
            self._add_identity(consumer)
        else:
            self._add_v4(consumer)
        self._attached[consumer.id] = consumer
        self._bulk = None
        return self._impacted()

    def remove_consumer(self, consumer: C) -> ImpactedConsumers[C] | None:
        """Detach a consumer. An instance that was never attached: v3_counters fails with a
        NullPointerException (state unchanged) when a point of its name is missing; others do nothing.
        (v3_counters also throws, part-way and leaving the consumer attached, in the near-impossible case
        of two of one consumer's own points sharing a ring position, as Pulsar's code would.)"""
        self._selected.clear()
        consumer = _check_consumer(consumer)
        attached = self._attached.get(consumer.id)
        target = attached if attached is not None else consumer
        if self.variant is Variant.LEGACY:
            self._remove_legacy(target)
        elif self.variant is Variant.V3_COUNTERS:
            self._remove_counted(target)
        elif attached is not None:
            if self.variant is Variant.V3_IDENTITY:
                self._remove_identity(target)
            else:
                self._remove_v4(target)
        if attached is not None:
            del self._attached[consumer.id]
            self._added_index.pop(consumer.id, None)
            self._counters.pop(consumer.id, None)
            self._zero_point_messages.pop(consumer.id, None)
            self._bulk = None
        return self._impacted()

    def _impacted(self) -> ImpactedConsumers[C] | None:
        if not self.return_impacted:
            return None
        after = self._v4_assignments()
        result = impacted_consumers(self._assignments_snapshot, after)
        self._assignments_snapshot = after
        return result

    def _hash_of(self, name: str, name_index: int, i: int) -> int:
        return point_hash(point_key(self.variant, name, name_index, i), self.variant, self.range_max)

    # LEGACY: lists, no duplicates, stable-sorted by name.
    def _add_legacy(self, consumer: C) -> None:
        for i in range(self.points):
            h = self._hash_of(consumer.name, 0, i)
            holders = self._ring.get(h)
            if holders is None:
                self._ring[h] = [consumer]
            elif consumer not in holders:
                holders.append(consumer)
                holders.sort(key=lambda c: java_string_order(c.name))

    def _remove_legacy(self, consumer: C) -> None:
        for i in range(self.points):
            h = self._hash_of(consumer.name, 0, i)
            holders = self._ring.get(h)
            if holders is not None:
                holders[:] = [c for c in holders if c != consumer]
                if not holders:
                    del self._ring[h]

    # V3_COUNTERS: ordered entries with per-instance selection counters.
    def _entry_order(self, consumer: C) -> tuple[int, bytes, int]:
        return (-consumer.priority, java_string_order(consumer.name), self._counters[consumer.id])

    def _reselect(self, point: _CountedPoint[C]) -> None:
        new = point.entries[0] if point.entries else None
        if new is point.selected:
            return
        if point.selected is not None:
            self._counters[point.selected.consumer.id] -= 1
        point.selected = new
        if new is not None:
            self._counters[new.consumer.id] += 1

    def _add_counted(self, consumer: C) -> None:
        self._counters.setdefault(consumer.id, 0)
        for i in range(self.points):
            h = self._hash_of(consumer.name, 0, i)
            point = self._ring.get(h)
            if point is None:
                point = self._ring[h] = _CountedPoint()
            order = self._entry_order(consumer)
            at = next(
                (k for k, e in enumerate(point.entries) if self._entry_order(e.consumer) > order),
                len(point.entries),
            )
            point.entries.insert(at, _CountedEntry(consumer))
            self._reselect(point)

    def _remove_counted(self, consumer: C) -> None:
        for i in range(self.points):
            h = self._hash_of(consumer.name, 0, i)
            point = self._ring.get(h)
            if point is None:
                raise NullPointerException(
                    f'Cannot invoke "HashRingEntry.removeConsumer(Consumer)" because "v" is null '
                    f"(no ring point {h} for {point_key(self.variant, consumer.name, 0, i)!r})"
                )
            point.entries = [e for e in point.entries if e.consumer != consumer]
            self._reselect(point)
            if point.selected is None:
                del self._ring[h]

    # V3_IDENTITY: put replaces; reference counts free the name index.
    def _add_identity(self, consumer: C) -> None:
        for i in range(self.points):
            index = self._tracker.add_reference(consumer)
            self._added_index[consumer.id] = index
            h = self._hash_of(consumer.name, index, i)
            replaced = self._ring.get(h)
            self._ring[h] = consumer
            if replaced is not None:
                self._tracker.remove_reference(replaced)

    def _remove_identity(self, consumer: C) -> None:
        index = self._tracker.tracked_index(consumer)
        if index is None:  # every point was taken over; the index is already free
            return
        for i in range(self.points):
            h = self._hash_of(consumer.name, index, i)
            if self._ring.get(h) == consumer:
                del self._ring[h]
                self._tracker.remove_reference(consumer)

    # V4: first keeps the point, later ones queue behind it.
    def _add_v4(self, consumer: C) -> None:
        added = collisions = 0
        for i in range(self.points):
            index = self._tracker.add_reference(consumer)
            self._added_index[consumer.id] = index
            h = self._hash_of(consumer.name, index, i)
            point = self._ring.get(h)
            if point is None:
                self._ring[h] = _SharedPoint(consumer)
                added += 1
            else:
                point.colliding.append(consumer)
                collisions += 1
        if added == 0:
            self._zero_point_messages[consumer.id] = (
                f"Failed to add consumer '{consumer}' to the hash ring. There were {collisions} collisions. "
                f"Consider increasing the number of points ({self.points}) per consumer by setting "
                f"subscriptionKeySharedConsistentHashingReplicaPoints={recommended_points(self.points)}"
            )

    def _remove_v4(self, consumer: C) -> None:
        index = self._tracker.tracked_index(consumer)
        if index is None:
            return
        for i in range(self.points):
            h = self._hash_of(consumer.name, index, i)
            point = self._ring.get(h)
            if point is None:
                raise NullPointerException(f"hash ring entry wasn't found for hash {h}")
            if point.remove(consumer):
                del self._ring[h]
            self._tracker.remove_reference(consumer)

    # -- selection ----------------------------------------------------------------------------
    def key_hash_range(self) -> tuple[int, int]:
        return (1, self.range_max) if self.variant is Variant.V4 else (0, INT_MAX)

    def make_sticky_key_hash(self, key: str | bytes) -> int:
        masked = murmur3_32(key)
        return reduce_hash(masked, 1, self.range_max) if self.variant is Variant.V4 else masked

    def sticky_hashes_bulk(self, keys: Sequence[str | bytes] | np.ndarray) -> np.ndarray:
        masked = keys if isinstance(keys, np.ndarray) else murmur3_32_bulk(keys)
        if self.variant is Variant.V4:
            return reduce_hash_bulk(masked.astype(np.int64, copy=True), 1, self.range_max)
        return masked

    def _holders(self, value: Any) -> list[C]:
        """The consumers at a ring point, the selected one first (LEGACY: list order)."""
        if self.variant is Variant.LEGACY:
            return list(value)
        if self.variant is Variant.V3_COUNTERS:
            return [e.consumer for e in value.entries]
        if self.variant is Variant.V3_IDENTITY:
            return [value]
        return [value.selected, *value.colliding]

    def _owner(self, value: Any) -> C:
        """The consumer a non-LEGACY ring point selects."""
        owner: C
        if self.variant is Variant.V3_COUNTERS:
            owner = value.selected.consumer
        elif self.variant is Variant.V3_IDENTITY:
            owner = value
        else:
            owner = value.selected
        return owner

    def select(self, key_hash: int) -> C | None:
        if type(key_hash) is int:  # a hash already selected since the last ring change: the same answer
            cached = self._selected.get(key_hash)
            if cached is not None:
                return cached
        h = _check_hash(key_hash)
        if not self._ring:
            return None
        at = self._ring.bisect_left(h)
        _, value = self._ring.peekitem(at if at < len(self._ring) else 0)
        selected: C
        if self.variant is Variant.LEGACY:
            selected = value[h % len(value)]
        else:
            selected = self._owner(value)
        selected_cache = self._selected
        if len(selected_cache) >= _SELECTED_CACHE_MAX:
            selected_cache.clear()
        selected_cache[h] = selected
        return selected

    def _arrays(self) -> _BulkArrays:
        if self._bulk is None:
            n = len(self._ring)
            points = np.fromiter(self._ring.keys(), dtype=np.int64, count=n)
            empty = np.empty(0, dtype=np.int64)
            if self.variant is Variant.LEGACY:
                sizes = np.fromiter((len(v) for v in self._ring.values()), dtype=np.int64, count=n)
                offsets = np.cumsum(sizes) - sizes
                flat = np.fromiter((c.id for v in self._ring.values() for c in v), dtype=np.int64)
                self._bulk = _BulkArrays(points, empty, offsets, sizes, flat)
            else:
                owners = np.fromiter((self._owner(v).id for v in self._ring.values()), dtype=np.int64, count=n)
                table = None
                if self.variant is Variant.V4 and self.range_max <= _TABLE_MAX:
                    # one ceiling lookup per possible hash, once per membership change; select_bulk then indexes
                    at = np.searchsorted(points, np.arange(self.range_max + 1, dtype=np.int64), side="left")
                    at[at == n] = 0
                    table = owners[at]
                self._bulk = _BulkArrays(points, owners, empty, empty, empty, table)
        return self._bulk

    def select_bulk(self, key_hashes: np.ndarray) -> np.ndarray:
        hashes = _check_hashes(key_hashes)
        if not self._ring:
            return np.full(hashes.shape, NO_CONSUMER, dtype=np.int64)
        arrays = self._arrays()
        if arrays.table is not None and hashes.size and int(hashes.max()) < len(arrays.table):
            selected: np.ndarray = arrays.table[hashes]
            return selected
        at = np.searchsorted(arrays.points, hashes, side="left")
        at[at == len(arrays.points)] = 0
        ids: np.ndarray = (
            arrays.flat[arrays.offsets[at] + hashes % arrays.sizes[at]]
            if self.variant is Variant.LEGACY
            else arrays.owners[at]
        )
        return ids

    # -- reporting ----------------------------------------------------------------------------
    def consumer_key_hash_ranges(self) -> dict[C, list[tuple[int, int]]]:
        """`getConsumerKeyHashRanges()` as each generation reports it (golden README §4), quirks included:
        LEGACY has no wrap range and lists every holder of a shared point; 3.x gives the wrap range
        [lastPoint+1, 2^31-2] (V3_IDENTITY: from lastPoint+2) to the first point's consumer; V4 merges per
        consumer from the assignment snapshot."""
        result: dict[C, list[tuple[int, int]]] = {}
        if not self._ring:
            return result
        if self.variant is Variant.V4:
            for start, end, consumer in self._v4_assignments():
                ranges = result.setdefault(consumer, [])
                if ranges and ranges[-1][1] >= start - 1:
                    ranges[-1] = (ranges[-1][0], max(ranges[-1][1], end))
                else:
                    ranges.append((start, end))
            return result
        start = 0
        last_key = 0
        for point, value in self._ring.items():
            holders = value if self.variant is Variant.LEGACY else [self._owner(value)]
            for consumer in holders:
                result.setdefault(consumer, []).append((start, point))
            if self.variant is Variant.V3_IDENTITY:
                last_key = _java_int(point + 1)
                start = last_key
            else:
                last_key = point
                start = point + 1
        if self.variant is not Variant.LEGACY and last_key != INT_MAX - 1:
            first = self._owner(self._ring.peekitem(0)[1])
            result[first].append((_java_int(last_key + 1), INT_MAX - 1))
        return result

    def _v4_assignments(self) -> list[tuple[int, int, C]]:
        """The 4.x `ConsumerHashAssignmentsSnapshot`: arcs from 1, joined per consumer, wrap to range_max."""
        out: list[tuple[int, int, C]] = []
        if not self._ring:
            return out
        start, last_key, previous = 1, -1, None
        for point, value in self._ring.items():
            consumer = value.selected
            if consumer == previous:
                out[-1] = (out[-1][0], point, consumer)
            else:
                out.append((start, point, consumer))
            last_key, start, previous = point, point + 1, consumer
        if last_key != self.range_max:
            first = self._ring.peekitem(0)[1].selected
            if first == previous:
                out[-1] = (out[-1][0], self.range_max, first)
            else:
                out.append((last_key + 1, self.range_max, first))
        return out

    def _arcs(self) -> Iterator[tuple[int, int, tuple[C, ...]]]:
        """What select() gives over [0, 2^31-1]: (start, end, holders) arcs, equal neighbours joined."""
        if not self._ring:
            return
        arcs: list[tuple[int, int, tuple[C, ...]]] = []
        start = 0
        for point, value in self._ring.items():
            holders = tuple(value) if self.variant is Variant.LEGACY else (self._owner(value),)
            arcs.append((start, point, holders))
            start = point + 1
        if start <= INT_MAX:
            first = arcs[0][2]
            arcs.append((start, INT_MAX, first))
        merged = [arcs[0]]
        for arc in arcs[1:]:
            if _same_ids(arc[2], merged[-1][2]):
                merged[-1] = (merged[-1][0], arc[1], arc[2])
            else:
                merged.append(arc)
        yield from merged

    def assignments(self) -> list[tuple[int, int, C]]:
        """4.x: Pulsar's `ConsumerHashAssignmentsSnapshot`. 3.x (which has none): the arcs select() really
        gives over [0, 2^31-1], with the wrap arc; a LEGACY point shared by k consumers splits its arc by
        ``hash % k``, which ranges cannot express, so such an arc is listed once per holder."""
        if self.variant is Variant.V4:
            return self._v4_assignments()
        return [(s, e, c) for s, e, holders in self._arcs() for c in holders]

    def consumers_without_points(self) -> list[C]:
        """Attached consumers selected at no ring point now, and so receiving no keys: 4.x colliders,
        3.0.7+ consumers whose points were all replaced, 3.0.3 same-name instances never put first.
        A LEGACY consumer counts as holding every point whose list it is in (it gets ``hash % k`` keys)."""
        holding: set[int] = set()
        for value in self._ring.values():
            if self.variant is Variant.LEGACY:
                holding.update(c.id for c in value)
            else:
                holding.add(self._owner(value).id)
        return [c for c in self._attached.values() if c.id not in holding]

    def zero_points_message(self, consumer: C) -> str | None:
        """The error 4.x logs when an added consumer got no point of its own, with Pulsar's advice
        ``subscriptionKeySharedConsistentHashingReplicaPoints = max(1.5*points, points+1)``; else None."""
        return self._zero_point_messages.get(_check_consumer(consumer).id)

    def point_keys(self, consumer: C, name_index: int | None = None) -> list[RingPointKey]:
        """Each point of a consumer: the key string hashed, its ring position and who holds it now.

        The name index is the one the consumer was added with, else ``name_index``, else the index a new
        instance of that name would get now.
        """
        consumer = _check_consumer(consumer)
        if self.variant in _INDEXED:
            if consumer.id in self._attached and name_index is None:
                name_index = self._added_index.get(consumer.id)
            if name_index is None:
                name_index = self._tracker.next_free_index(consumer.name)
        index = 0 if name_index is None else as_int(name_index, "name_index")
        out = []
        for i in range(self.points):
            key = point_key(self.variant, consumer.name, index, i)
            h = point_hash(key, self.variant, self.range_max)
            value = self._ring.get(h)
            holders = () if value is None else tuple(c.id for c in self._holders(value))
            out.append(RingPointKey(i, key, h, holders))
        return out

    def name_indexes(self) -> dict[int, int]:
        """consumer id -> name index still tracked (3.0.7+/4.x; empty for older generations)."""
        return self._tracker.indexes()

    def snapshot(self) -> dict[str, Any]:
        ring = []
        for point, value in self._ring.items():
            ids = tuple(c.id for c in self._holders(value))
            ring.append((point, ids[0], ids[1:]))
        snap: dict[str, Any] = {
            "kind": self.kind,
            "variant": self.variant.value,
            "points_per_consumer": self.points,
            "ring": ring,
            "consumers": [(c.id, c.name) for c in self._attached.values()],
            "range_max": self.range_max,
            "key_hash_range": self.key_hash_range(),
            "consumers_without_points": tuple(c.id for c in self.consumers_without_points()),
        }
        if self.variant is Variant.V3_COUNTERS:
            snap["selection_counters"] = [(cid, self._counters[cid]) for cid in self._attached]
        if self.variant in _INDEXED:
            snap["name_indexes"] = sorted(self._tracker.indexes().items())
        return snap


def _same_ids(a: tuple[C, ...], b: tuple[C, ...]) -> bool:
    return len(a) == len(b) and all(x.id == y.id for x, y in zip(a, b))


def _check_consumer(consumer: C) -> C:
    for attr in ("id", "name", "priority"):
        if not hasattr(consumer, attr):
            raise TypeError(f"a consumer needs id, name and priority attributes; {consumer!r} has no {attr!r}")
    if not isinstance(consumer.name, str):
        raise TypeError(f"a consumer name must be a str, not {type(consumer.name).__name__} ({consumer.name!r})")
    as_int(consumer.id, "consumer id")
    as_int(consumer.priority, "consumer priority")
    return consumer


_SELECTED_CACHE_MAX = 65536


def _check_hash(key_hash: Any) -> int:
    h = as_int(key_hash, "a sticky-key hash")
    if not 0 <= h <= INT_MAX:
        raise ValueError(f"a sticky-key hash is a non-negative Java int in [0, {INT_MAX}], not {h}")
    return h


_TABLE_MAX = 1 << 20  # largest 4.x key-hash range given a per-hash lookup table (8 MiB)


def _check_hashes(key_hashes: Any) -> np.ndarray:
    hashes = np.asarray(key_hashes)
    if hashes.size == 0:
        return hashes.astype(np.int64)
    if hashes.dtype.kind not in "iu":
        raise TypeError(f"sticky-key hashes must be an integer array, not dtype {hashes.dtype}")
    hashes = hashes.astype(np.int64, copy=False)
    low, high = int(hashes.min()), int(hashes.max())
    if low < 0 or high > INT_MAX:
        bad = low if low < 0 else high
        raise ValueError(f"sticky-key hashes must lie in [0, {INT_MAX}]; found {bad}")
    return hashes


__all__ = [
    "ConsistentHashingSelector",
    "ConsumerNameIndexTracker",
    "RingPointKey",
    "java_string_order",
    "point_hash",
    "point_key",
    "recommended_points",
]
