"""The buckets of the bucket delayed-delivery tracker: the open one, the sealed ones, the map of their ledger
ranges, and the choice of buckets to merge.

Models `MutableBucket`, `ImmutableBucket` and `Bucket` of `org.apache.pulsar.broker.delayed.bucket`, the
``immutableBuckets`` range map of `BucketDelayedDeliveryTracker` and its ``selectMergedBuckets``
(docs/guide/delayed-delivery.md#bucket-tracker); the tracker that seals, loads, merges and recovers them is
`pulsarlab.broker.delayed.bucket.tracker`. Simplifies: the mutable bucket keeps three columns rather than a heap
(it is only asked for its earliest time, its due indexes and a sorted drain).
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from pulsarlab.broker.delayed.bucket.snapshot import SnapshotMetadata, SnapshotSegment
from pulsarlab.broker.delayed.in_memory import Position
from pulsarlab.broker.delayed.tracker_names import DELAYED_BUCKET_KEY_PREFIX
from pulsarlab.errors import IllegalArgumentException

DELIMITER = "_"


def remove_bit(bitmap: dict[int, set[int]], ledger_id: int, entry_id: int) -> bool:
    """`Bucket.removeIndexBit`: clear one position's bit (a ledger left empty is dropped); False if it was not set."""
    bits = bitmap.get(ledger_id)
    if bits is None or entry_id not in bits:
        return False
    bits.remove(entry_id)
    if not bits:
        del bitmap[ledger_id]
    return True


def bucket_key(start_ledger_id: int, end_ledger_id: int) -> str:
    """The cursor property naming a bucket: ``#pulsar.internal.delayed.bucket_<start>_<end>``."""
    return DELIMITER.join((DELAYED_BUCKET_KEY_PREFIX, str(start_ledger_id), str(end_ledger_id)))


class MutableBucket:
    """``lastMutableBucket``: the open bucket's indexes, its ledger range and its bitmap.

    The bitmap also holds indexes that went straight to the shared queue (ledger before the range, or in
    a sealed bucket), as Pulsar's does. Indexes are kept as three int64 columns; the earliest time is
    tracked, due indexes are moved out with numpy and sealing sorts once.
    """

    __slots__ = ("start_ledger_id", "end_ledger_id", "bitmap", "_ts", "_ledgers", "_entries", "_min_ts")

    def __init__(self) -> None:
        self.start_ledger_id = -1
        self.end_ledger_id = -1
        self.bitmap: dict[int, set[int]] = {}
        self._ts = array("q")
        self._ledgers = array("q")
        self._entries = array("q")
        self._min_ts: int | None = None

    def size(self) -> int:
        return len(self._ts)

    def is_empty(self) -> bool:
        return not self._ts

    def next_delivery_time(self) -> int:
        if self._min_ts is None:
            raise IllegalArgumentException("the mutable bucket is empty")
        return self._min_ts

    def add_message(self, ledger_id: int, entry_id: int, deliver_at: int) -> None:
        self._ts.append(deliver_at)
        self._ledgers.append(ledger_id)
        self._entries.append(entry_id)
        if self._min_ts is None or deliver_at < self._min_ts:
            self._min_ts = deliver_at
        if self.start_ledger_id == -1:
            self.start_ledger_id = ledger_id
        self.end_ledger_id = ledger_id
        bits = self.bitmap.get(ledger_id)
        if bits is None:
            self.bitmap[ledger_id] = {entry_id}
        else:
            bits.add(entry_id)

    def add_run(self, ledger_id: int, entry_ids: np.ndarray, deliver_ats: np.ndarray) -> None:
        """``add_message`` for many entries of one ledger, in order."""
        self._ts.frombytes(deliver_ats.astype(np.int64).tobytes())
        self._entries.frombytes(entry_ids.astype(np.int64).tobytes())
        self._ledgers.frombytes(np.full(len(entry_ids), ledger_id, dtype=np.int64).tobytes())
        low = int(deliver_ats.min())
        if self._min_ts is None or low < self._min_ts:
            self._min_ts = low
        if self.start_ledger_id == -1:
            self.start_ledger_id = ledger_id
        self.end_ledger_id = ledger_id
        self.bitmap.setdefault(ledger_id, set()).update(entry_ids.tolist())

    def put_index_bit(self, ledger_id: int, entry_id: int) -> None:
        bits = self.bitmap.get(ledger_id)
        if bits is None:
            self.bitmap[ledger_id] = {entry_id}
        else:
            bits.add(entry_id)

    def remove_index_bit(self, ledger_id: int, entry_id: int) -> bool:
        return remove_bit(self.bitmap, ledger_id, entry_id)

    def contains_message(self, ledger_id: int, entry_id: int) -> bool:
        bits = self.bitmap.get(ledger_id)
        return bits is not None and entry_id in bits

    def items(self, limit: int | None = None) -> list[tuple[int, int, int]]:
        """(deliverAt, ledger, entry) of the held indexes in delivery order (the first ``limit``), for views."""
        ts, ledgers, entries = self.columns()
        order = np.lexsort((entries, ledgers, ts))[:limit]
        return list(zip(ts[order].tolist(), ledgers[order].tolist(), entries[order].tolist()))

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(timestamps, ledger ids, entry ids) as numpy views, in insertion order."""
        return (
            np.frombuffer(self._ts, dtype=np.int64),
            np.frombuffer(self._ledgers, dtype=np.int64),
            np.frombuffer(self._entries, dtype=np.int64),
        )

    def move_scheduled_to(self, cutoff: int, shared: list[tuple[int, int, int]]) -> int:
        """``moveScheduledMessageToSharedQueue``: every index due by ``cutoff`` joins the shared queue."""
        if self._min_ts is None or self._min_ts > cutoff:
            return 0
        ts, ledgers, entries = (c.copy() for c in self.columns())
        due = ts <= cutoff
        push_many(shared, ts[due], ledgers[due], entries[due])
        keep = ~due
        self._reset_columns(ts[keep], ledgers[keep], entries[keep])
        return int(due.sum())

    def drain_sorted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Take every index, sorted by (timestamp, ledger, entry) as the priority queue pops them."""
        ts, ledgers, entries = (c.copy() for c in self.columns())
        order = np.lexsort((entries, ledgers, ts))
        self._reset_columns(ts[:0], ledgers[:0], entries[:0])
        return ts[order], ledgers[order], entries[order]

    def reset_range(self) -> None:
        self.start_ledger_id = -1
        self.end_ledger_id = -1

    def clear(self) -> None:
        self.reset_range()
        self.bitmap.clear()
        self._reset_columns(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))

    def _reset_columns(self, ts: np.ndarray, ledgers: np.ndarray, entries: np.ndarray) -> None:
        self._ts = array("q", ts.tobytes())
        self._ledgers = array("q", ledgers.tobytes())
        self._entries = array("q", entries.tobytes())
        self._min_ts = int(ts.min()) if len(ts) else None


@dataclass(eq=False)
class ImmutableBucket:
    """A sealed bucket: its ledger range, the bitmap of what it still holds, and where its segments are."""

    start_ledger_id: int
    end_ledger_id: int
    bitmap: dict[int, set[int]] = field(default_factory=dict)  # delayedIndexBitMap
    number_bucket_delayed_messages: int = 0
    last_segment_entry_id: int = -1
    current_segment_entry_id: int = -1
    first_schedule_timestamps: list[int] = field(default_factory=list)  # per segment, 0-based
    bucket_id: int | None = None  # the snapshot ledger id
    snapshot_length: int = 0
    merging: bool = False

    @property
    def bucket_key(self) -> str:
        return bucket_key(self.start_ledger_id, self.end_ledger_id)

    def contains_message(self, ledger_id: int, entry_id: int) -> bool:
        bits = self.bitmap.get(ledger_id)
        return bits is not None and entry_id in bits

    def remove_index_bit(self, ledger_id: int, entry_id: int) -> bool:
        if not remove_bit(self.bitmap, ledger_id, entry_id):
            return False
        if self.number_bucket_delayed_messages > 0:
            self.number_bucket_delayed_messages -= 1
        return True


class BucketRangeMap:
    """Guava's ``TreeRangeMap<Long, ImmutableBucket>`` over closed ledger ranges.

    ``put`` overwrites what it overlaps, leaving the uncovered parts of a partly overlapped bucket mapped
    (Guava clips); ``remove_exact`` drops a range only when its key is exactly that range
    (``asMapOfRanges().remove(Range.closed(start, end))``).
    """

    __slots__ = ("_starts", "_ends", "_buckets")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._buckets: list[ImmutableBucket] = []

    def __len__(self) -> int:
        return len(self._starts)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def get(self, ledger_id: int) -> ImmutableBucket | None:
        i = bisect_right(self._starts, ledger_id) - 1
        if i >= 0 and ledger_id <= self._ends[i]:
            return self._buckets[i]
        return None

    def put(self, start: int, end: int, bucket: ImmutableBucket) -> None:
        pieces = []
        for s, e, b in self.ranges():
            if e < start or s > end:
                pieces.append((s, e, b))
                continue
            if s < start:
                pieces.append((s, start - 1, b))
            if e > end:
                pieces.append((end + 1, e, b))
        pieces.append((start, end, bucket))
        pieces.sort(key=lambda p: p[0])
        self._starts = [p[0] for p in pieces]
        self._ends = [p[1] for p in pieces]
        self._buckets = [p[2] for p in pieces]

    def remove_exact(self, start: int, end: int) -> bool:
        i = bisect_right(self._starts, start) - 1
        if i >= 0 and self._starts[i] == start and self._ends[i] == end:
            del self._starts[i], self._ends[i], self._buckets[i]
            return True
        return False

    def contains_value(self, bucket: ImmutableBucket) -> bool:
        return any(b is bucket for b in self._buckets)

    def overlapping(self, start: int, end: int) -> list[ImmutableBucket]:
        """Distinct buckets with a mapped piece inside [start, end] (``subRangeMap(range)`` values)."""
        out: list[ImmutableBucket] = []
        for s, e, b in self.ranges():
            if e >= start and s <= end and not any(b is o for o in out):
                out.append(b)
        return out

    def ranges(self) -> list[tuple[int, int, ImmutableBucket]]:
        return list(zip(self._starts, self._ends, self._buckets))

    def values(self) -> list[ImmutableBucket]:
        """``asMapOfRanges().values()`` in range order (a clipped bucket appears once per piece)."""
        return list(self._buckets)

    def distinct(self) -> list[ImmutableBucket]:
        out: list[ImmutableBucket] = []
        for b in self._buckets:
            if not any(b is o for o in out):
                out.append(b)
        return out


@dataclass(frozen=True)
class BucketState:
    """What a view shows of one sealed bucket."""

    start_ledger_id: int
    end_ledger_id: int
    bucket_id: int | None
    current_segment_entry_id: int
    last_segment_entry_id: int
    messages: int
    first_schedule_timestamps: tuple[int, ...]


@dataclass(frozen=True)
class SealedBucket:
    """A bucket cut from the mutable one, before its snapshot is written: its segments and last index."""

    bucket: ImmutableBucket
    metadata: SnapshotMetadata
    segments: list[SnapshotSegment]
    first_last_index: Position


def select_merged_buckets(values: list[ImmutableBucket], merge_num: int) -> list[ImmutableBucket]:
    """``selectMergedBuckets``: the adjacent window of up to ``merge_num`` buckets to merge, or [].

    Only windows whose buckets all have an unloaded segment qualify. A window at least as small (in
    stored messages) as the smallest seen so far replaces the choice only if its next schedule time is
    earlier, as in Pulsar's loop. Falls back to smaller windows, down to 2.
    """
    if len(values) < 2 or merge_num < 2:
        return []
    k = min(merge_num, len(values))
    min_messages = min_timestamp = 2**63 - 1
    min_index = -1
    for i in range(len(values) - k + 1):
        window = values[i : i + k]
        if not all(b.last_segment_entry_id > b.current_segment_entry_id and not b.merging for b in window):
            continue
        messages = sum(b.number_bucket_delayed_messages for b in window)
        if messages <= min_messages:
            min_messages = messages
            timestamp = min(b.first_schedule_timestamps[b.current_segment_entry_id] for b in window)
            if timestamp < min_timestamp:
                min_timestamp = timestamp
                min_index = i
    if min_index >= 0:
        return values[min_index : min_index + k]
    if k > 2:
        return select_merged_buckets(values, k - 1)
    return []


# --- helpers -------------------------------------------------------------------------------------------


def segment_bounds(ts: np.ndarray, time_step: int, max_indexes: int) -> list[tuple[int, int]]:
    """Index ranges of the segments of sorted ``ts``: a segment ends when the next timestamp passes
    first + step - 1, or when it holds ``max_indexes`` indexes (-1: no limit)."""
    bounds = []
    n = len(ts)
    i = 0
    while i < n:
        j = int(np.searchsorted(ts, ts[i] + time_step - 1, side="right"))
        if max_indexes != -1:
            j = min(j, i + max_indexes)
        j = max(j, i + 1)
        bounds.append((i, j))
        i = j
    return bounds


def group_by_ledger(ledgers: np.ndarray, entries: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(ledger, its entry ids ascending) for each ledger present."""
    if not len(ledgers):
        return []
    order = np.lexsort((entries, ledgers))
    ls, es = ledgers[order], entries[order]
    cuts = np.flatnonzero(np.r_[True, ls[1:] != ls[:-1]])
    ends = np.r_[cuts[1:], len(ls)]
    return [(int(ls[a]), es[a:b]) for a, b in zip(cuts.tolist(), ends.tolist())]


def push_many(heap: list[tuple[int, int, int]], ts: np.ndarray, ledgers: np.ndarray, entries: np.ndarray) -> None:
    items = list(zip(np.asarray(ts).tolist(), np.asarray(ledgers).tolist(), np.asarray(entries).tolist()))
    if len(items) > len(heap):
        heap.extend(items)
        heapq.heapify(heap)
    else:
        for item in items:
            heapq.heappush(heap, item)


def parse_bucket_id(key: str, value: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise IllegalArgumentException(f"cursor property {key!r} holds {value!r}, not a ledger id") from None


def check_int(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise IllegalArgumentException(f"{name} must be >= {minimum}, got {value}")
