"""What the delayed-delivery trackers' in-memory structures would cost on a broker's JVM.

Models no single Pulsar class: it prices the Java structures the trackers hold
(docs/guide/delayed-delivery.md#in-memory-tracker, #bucket-tracker) from the model's contents, so the lab can compare
the two trackers' memory the way a broker operator would see it. The per-item costs, and where they come from:

* ``TripleLongPriorityQueue`` (pulsar-common): 3 longs = 24 bytes per tuple in a ``SegmentedLongArray``
  of direct memory. ``bytes_capacity`` replays its growth (48 longs at first; +100% while <= 256 longs,
  then +50%, up to 2M longs = 16 MB; then whole 16 MB segments), as ``bytesCapacity()`` reports it.
  Shrinking after pops is not replayed: the capacity is the one grown for the current size.
* ``RoaringBitmap`` (org.roaringbitmap) of 32-bit entry ids: one container per 65536 ids. Payload:
  an array container 2 bytes per id (at most 4096 ids), a bitmap container 8192 bytes, a run container
  4 bytes per run; ``run_optimized`` (``runOptimize()``, as the bucket tracker calls on sealed bitmaps)
  takes the smallest, otherwise array or bitmap by cardinality. Each container adds 32 bytes of object
  and array headers plus 10 bytes in the bitmap's key/value arrays; a bitmap object with its
  ``RoaringArray`` costs 72 bytes.
* ``HashMap<Long, RoaringBitmap>`` (a bucket's ``delayedIndexBitMap``): 59 bytes per ledger (a 32-byte
  node, a 16-byte boxed Long, 11 bytes of table at load factor 0.75).
* fastutil ``Long2ObjectOpenHashMap``: 48 bytes plus two arrays of ``capacity + 1`` slots of 8 bytes.

Simplifies: 64-bit JVM with compressed oops; object alignment and allocator slack are ignored; entry
ids above 2^32 are priced as if they were 32-bit (``Roaring64Bitmap`` costs a little more).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


TUPLE_BYTES = 24  # 3 longs per TripleLongPriorityQueue item
_INITIAL_LONGS = 16 * 3  # DEFAULT_INITIAL_CAPACITY = 16 tuples
_MAX_SEGMENT_LONGS = 2 * 1024 * 1024  # 2M longs = 16 MB per SegmentedLongArray buffer

ROARING_BITMAP_BYTES = 72  # RoaringBitmap + RoaringArray objects, empty key/value arrays
ROARING_CONTAINER_OVERHEAD = 32 + 10  # container object + its array header; key char + value ref
ARRAY_CONTAINER_MAX = 4096
BITMAP_CONTAINER_BYTES = 8192
HASHMAP_ENTRY_BYTES = 59  # HashMap.Node + boxed Long key + table slot / 0.75
FASTUTIL_MAP_BYTES = 48


def bytes_capacity(tuples: int) -> int:
    """``TripleLongPriorityQueue.bytesCapacity()`` once grown to hold ``tuples`` items."""
    if tuples < 0:
        raise ValueError(f"a queue cannot hold {tuples} tuples")
    needed = 3 * tuples
    capacity = _INITIAL_LONGS
    while capacity < needed:
        if capacity < _MAX_SEGMENT_LONGS:
            capacity = min(capacity + (capacity if capacity <= 256 else capacity // 2), _MAX_SEGMENT_LONGS)
        else:
            capacity += ((needed - capacity + _MAX_SEGMENT_LONGS - 1) // _MAX_SEGMENT_LONGS) * _MAX_SEGMENT_LONGS
    return capacity * 8


def container_stats(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per roaring container of each group (a bitmap's sorted, distinct ids): (group index, cardinality, runs)."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    lengths = np.fromiter((len(g) for g in groups), dtype=np.int64, count=len(groups))
    total = int(lengths.sum())
    if total == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    ids = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    group = np.repeat(np.arange(len(groups)), lengths)
    high = ids >> 16
    new_container = np.empty(total, dtype=bool)
    new_container[0] = True
    new_container[1:] = (group[1:] != group[:-1]) | (high[1:] != high[:-1])
    starts = np.flatnonzero(new_container)
    cards = np.diff(np.append(starts, total))
    breaks = new_container.copy()
    breaks[1:] |= np.diff(ids) != 1
    runs = np.add.reduceat(breaks.astype(np.int64), starts)
    return group[starts], cards, runs


def _payload(cards: np.ndarray, runs: np.ndarray, run_optimized: bool, run_bytes: np.ndarray) -> np.ndarray:
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    payload = np.where(cards <= ARRAY_CONTAINER_MAX, 2 * cards, BITMAP_CONTAINER_BYTES)
    return np.minimum(payload, run_bytes) if run_optimized else payload


def roaring_bytes_many(groups: list[np.ndarray], run_optimized: bool = False) -> np.ndarray:
    """Heap bytes of one ``RoaringBitmap`` per group of sorted, distinct, non-negative ids."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    group, cards, runs = container_stats(groups)
    per_container = _payload(cards, runs, run_optimized, 4 * runs) + ROARING_CONTAINER_OVERHEAD
    sizes = np.bincount(group, weights=per_container, minlength=len(groups)).astype(np.int64)
    return sizes + ROARING_BITMAP_BYTES


def roaring_serialized_sizes(groups: list[np.ndarray]) -> np.ndarray:
    """``serializedSizeInBytes()`` after ``runOptimize()`` per group: an 8-byte header, 8 bytes of key,
    cardinality and offset per container, and the payload (a run container: 2 + 4 per run)."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    group, cards, runs = container_stats(groups)
    per_container = _payload(cards, runs, True, 2 + 4 * runs) + 8
    return np.bincount(group, weights=per_container, minlength=len(groups)).astype(np.int64) + 8


def roaring_bytes(entries: np.ndarray, run_optimized: bool = False) -> int:
    """Heap bytes of a ``RoaringBitmap`` holding ``entries`` (sorted, distinct, non-negative ids)."""
    return int(roaring_bytes_many([entries], run_optimized)[0])


def ledger_bitmaps_bytes(bitmaps: Mapping[int, Iterable[int]], run_optimized: bool = False) -> int:
    """A ``HashMap<Long, RoaringBitmap>`` of ledger -> entry ids (a bucket's ``delayedIndexBitMap``)."""
    if not bitmaps:
        return 0
    groups = [sorted_array(entries) for entries in bitmaps.values()]
    return HASHMAP_ENTRY_BYTES * len(groups) + int(roaring_bytes_many(groups, run_optimized).sum())


def fastutil_map_bytes(capacity: int) -> int:
    """A fastutil ``Long2ObjectOpenHashMap`` with a table of ``capacity`` slots (values not included)."""
    return FASTUTIL_MAP_BYTES + 2 * 8 * (capacity + 1)


def sorted_array(entries: Iterable[int]) -> np.ndarray:
    """Entry ids as a sorted int64 array."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    if isinstance(entries, np.ndarray):
        return np.sort(entries)
    size = len(entries) if hasattr(entries, "__len__") else -1  # type: ignore[arg-type]
    arr = np.fromiter(entries, dtype=np.int64, count=size)
    arr.sort()
    return arr
