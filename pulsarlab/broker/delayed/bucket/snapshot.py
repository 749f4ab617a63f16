"""A bucket snapshot: the ledger a sealed delayed-index bucket is written to, and the store that keeps it.

Models the snapshot format (`DelayedMessageIndexBucketSnapshotFormat.proto`: `SnapshotMetadata`,
`SnapshotSegmentMetadata`, `SnapshotSegment`, `DelayedIndex`), the `BucketSnapshotStorage` interface and
its BookKeeper implementation `BookkeeperBucketSnapshotStorage` (docs/guide/delayed-delivery.md#bucket-tracker): one
ledger per bucket;
entry 0 is the metadata (per segment: ledger id -> bitmap of entry ids, max and min schedule timestamps),
entries 1..N are the segments, each a run of (timestamp, ledger id, entry id) indexes in delivery order.
Ledger metadata: application=pulsar, component=delayed-index-bucket, the bucket key, topic and cursor.
A missing ledger reads as `BucketNotExistException`; deleting one that is gone succeeds, as in Pulsar.

`InMemoryBucketSnapshotStorage` stands in for BookKeeper: what it stores outlives any tracker, so it
survives a broker restart. Tests and views make it fail on purpose (as Pulsar's
`MockBucketSnapshotStorage` does): each queued exception fails one call of its operation, and
``available = False`` fails every call ("bookies down").

Simplifies: entries are typed, read-only objects (numpy arrays), not protobuf bytes; ``length`` is the
protobuf size computed from them (bitmaps priced as serialized roaring bitmaps); every call completes at
once (no BookKeeper latency, ensembles or ledger handles).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

from pulsarlab.broker.delayed.jvm_memory import roaring_serialized_sizes
from pulsarlab.errors import PulsarError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

_PKG = "org.apache.pulsar.broker.delayed.bucket."
NO_SUCH_LEDGER = "No such ledger exists on Bookies"  # BKException.getMessage(NoSuchLedgerExistsException)
BOOKIES_UNAVAILABLE = "Bookie handle is not available"  # BKException.getMessage(BookieHandleNotAvailable)


class BucketSnapshotPersistenceException(PulsarError):
    """A snapshot ledger operation failed; the tracker retries it (``executeWithRetry``)."""

    java_class = _PKG + "BucketSnapshotPersistenceException"

    def __init__(self, message: str) -> None:
        super().__init__(message, via="future")


class BucketNotExistException(BucketSnapshotPersistenceException):
    """The snapshot ledger does not exist (deleted, or never written)."""

    java_class = _PKG + "BucketNotExistException"


class RecoverDelayedDeliveryTrackerException(PulsarError):
    """Rebuilding the tracker from its stored buckets failed; the factory falls back to the in-memory one."""

    java_class = _PKG + "RecoverDelayedDeliveryTrackerException"


def _frozen(values: object) -> np.ndarray:
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    arr = np.array(values, dtype=np.int64, copy=True).reshape(-1)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class SnapshotSegment:
    """One segment entry: its indexes as three parallel int64 arrays, sorted by (timestamp, ledger, entry)."""

    timestamps: np.ndarray
    ledger_ids: np.ndarray
    entry_ids: np.ndarray

    def __post_init__(self) -> None:
        cols = [_frozen(c) for c in (self.timestamps, self.ledger_ids, self.entry_ids)]
        if not len(cols[0]) == len(cols[1]) == len(cols[2]):
            raise ValueError("a snapshot segment needs as many timestamps as ledger ids and entry ids")
        object.__setattr__(self, "timestamps", cols[0])
        object.__setattr__(self, "ledger_ids", cols[1])
        object.__setattr__(self, "entry_ids", cols[2])

    def __len__(self) -> int:
        return len(self.timestamps)

    def last_index(self) -> tuple[int, int, int]:
        """The segment's last (timestamp, ledger, entry): taking it loads the next segment."""
        return int(self.timestamps[-1]), int(self.ledger_ids[-1]), int(self.entry_ids[-1])

    def indexes(self) -> list[tuple[int, int, int]]:
        """The (timestamp, ledger, entry) indexes, in order."""
        return list(zip(self.timestamps.tolist(), self.ledger_ids.tolist(), self.entry_ids.tolist()))

    def serialized_size(self) -> int:
        """Protobuf bytes: repeated DelayedIndex {timestamp=1, ledger_id=2, entry_id=3} (all uint64)."""
        return _segments_size([self])


@dataclass(frozen=True)
class SnapshotSegmentMetadata:
    """Entry 0's record of one segment: which entries it holds per ledger, and its time bounds."""

    delayed_index_bit_map: Mapping[int, np.ndarray]  # ledger id -> sorted entry ids (a roaring bitmap)
    max_schedule_timestamp: int
    min_schedule_timestamp: int

    def __post_init__(self) -> None:
        bitmaps = {int(k): _frozen(v) for k, v in self.delayed_index_bit_map.items()}
        object.__setattr__(self, "delayed_index_bit_map", MappingProxyType(bitmaps))

    def cardinality(self) -> int:
        return sum(len(v) for v in self.delayed_index_bit_map.values())

    def serialized_size(self) -> int:
        return _metadata_size([self])


@dataclass(frozen=True)
class SnapshotMetadata:
    """Entry 0 of a snapshot ledger: one `SnapshotSegmentMetadata` per segment entry, in order."""

    metadata_list: tuple[SnapshotSegmentMetadata, ...]

    def serialized_size(self) -> int:
        return _metadata_size(list(self.metadata_list))


@dataclass(frozen=True)
class SnapshotLedger:
    """A stored snapshot ledger: entry 0 the metadata, entries 1..N the segments."""

    ledger_id: int
    metadata: SnapshotMetadata
    segments: tuple[SnapshotSegment, ...]
    properties: Mapping[str, str]
    length: int

    @property
    def last_entry_id(self) -> int:
        return len(self.segments)


class BucketSnapshotStorage(Protocol):
    """`BucketSnapshotStorage`: where sealed buckets are written and read back (calls complete at once)."""

    def create_bucket_snapshot(
        self,
        metadata: SnapshotMetadata,
        segments: list[SnapshotSegment],
        bucket_key: str,
        topic_name: str,
        cursor_name: str,
    ) -> int:
        """Write a new snapshot ledger; returns its ledger id (the bucket id)."""
        ...

    def get_bucket_snapshot_metadata(self, bucket_id: int) -> SnapshotMetadata: ...

    def get_bucket_snapshot_segment(
        self, bucket_id: int, first_segment_entry_id: int, last_segment_entry_id: int
    ) -> list[SnapshotSegment]: ...

    def get_bucket_snapshot_length(self, bucket_id: int) -> int: ...

    def delete_bucket_snapshot(self, bucket_id: int) -> None: ...


@dataclass
class StorageOperations:
    """How many calls each operation has seen (failed ones included), for views and tests."""

    create: int = 0
    get_metadata: int = 0
    get_segment: int = 0
    get_length: int = 0
    delete: int = 0


class InMemoryBucketSnapshotStorage:
    """Snapshot ledgers kept in memory, outliving trackers (a broker restart keeps them).

    ``ledger_ids`` hands out ledger ids (pass the lab's `LedgerIdAllocator.next` so snapshot ledgers
    share BookKeeper's id space with the topic's ledgers); by default the storage counts from 1.
    """

    def __init__(self, ledger_ids: Callable[[], int] | None = None) -> None:
        self._next_ledger_id = ledger_ids if ledger_ids is not None else itertools.count(1).__next__
        self._ledgers: dict[int, SnapshotLedger] = {}
        self.available = True
        self.create_exception_queue: deque[BucketSnapshotPersistenceException] = deque()
        self.get_metadata_exception_queue: deque[BucketSnapshotPersistenceException] = deque()
        self.get_segment_exception_queue: deque[BucketSnapshotPersistenceException] = deque()
        self.delete_exception_queue: deque[BucketSnapshotPersistenceException] = deque()
        self.operations = StorageOperations()

    # --- failure injection (MockBucketSnapshotStorage) ----------------------------------------

    def inject_create_exception(self, error: BucketSnapshotPersistenceException | str | None = None) -> None:
        self.create_exception_queue.append(_error(error, "Bookie operation timeout, op: Create entry"))

    def inject_get_metadata_exception(self, error: BucketSnapshotPersistenceException | str | None = None) -> None:
        self.get_metadata_exception_queue.append(_error(error, "Bookie operation timeout, op: Get entry"))

    def inject_get_segment_exception(self, error: BucketSnapshotPersistenceException | str | None = None) -> None:
        self.get_segment_exception_queue.append(_error(error, "Bookie operation timeout, op: Get entry"))

    def inject_delete_exception(self, error: BucketSnapshotPersistenceException | str | None = None) -> None:
        self.delete_exception_queue.append(_error(error, "Bookie operation timeout, op: Delete entry"))

    # --- BucketSnapshotStorage ----------------------------------------------------------------

    def create_bucket_snapshot(
        self,
        metadata: SnapshotMetadata,
        segments: list[SnapshotSegment],
        bucket_key: str,
        topic_name: str,
        cursor_name: str,
    ) -> int:
        self.operations.create += 1
        self._check(self.create_exception_queue, -1, "Create ledger")
        if len(metadata.metadata_list) != len(segments):
            raise ValueError(
                f"snapshot metadata lists {len(metadata.metadata_list)} segments but {len(segments)} were given"
            )
        ledger_id = self._next_ledger_id()
        length = metadata.serialized_size() + _segments_size(segments)
        properties = {
            "application": "pulsar",
            "component": "delayed-index-bucket",
            "bucketKey": bucket_key,
            "topicName": topic_name,
            "cursorName": cursor_name,
        }
        self._ledgers[ledger_id] = SnapshotLedger(
            ledger_id, metadata, tuple(segments), MappingProxyType(properties), length
        )
        return ledger_id

    def get_bucket_snapshot_metadata(self, bucket_id: int) -> SnapshotMetadata:
        self.operations.get_metadata += 1
        return self._open(bucket_id, self.get_metadata_exception_queue).metadata

    def get_bucket_snapshot_segment(
        self, bucket_id: int, first_segment_entry_id: int, last_segment_entry_id: int
    ) -> list[SnapshotSegment]:
        self.operations.get_segment += 1
        ledger = self._open(bucket_id, self.get_segment_exception_queue)
        if not 1 <= first_segment_entry_id <= last_segment_entry_id <= ledger.last_entry_id:
            raise BucketSnapshotPersistenceException(
                f"No such entry - ledger={bucket_id} - operation=Read entry "
                f"{first_segment_entry_id}..{last_segment_entry_id} (segments are entries 1..{ledger.last_entry_id})"
            )
        return list(ledger.segments[first_segment_entry_id - 1 : last_segment_entry_id])

    def get_bucket_snapshot_length(self, bucket_id: int) -> int:
        self.operations.get_length += 1
        return self._open(bucket_id, None).length

    def delete_bucket_snapshot(self, bucket_id: int) -> None:
        self.operations.delete += 1
        self._check(self.delete_exception_queue, bucket_id, "Delete ledger")
        self._ledgers.pop(bucket_id, None)  # a ledger that is already gone counts as deleted

    # --- what is stored (for views and tests) -------------------------------------------------

    def ledger(self, bucket_id: int) -> SnapshotLedger:
        try:
            return self._ledgers[bucket_id]
        except KeyError:
            raise KeyError(f"no snapshot ledger {bucket_id}; stored: {sorted(self._ledgers)}") from None

    def ledger_ids(self) -> list[int]:
        return sorted(self._ledgers)

    def __contains__(self, bucket_id: object) -> bool:
        return bucket_id in self._ledgers

    def __len__(self) -> int:
        return len(self._ledgers)

    def total_length(self) -> int:
        """Bytes stored across every snapshot ledger."""
        return sum(ledger.length for ledger in self._ledgers.values())

    def _check(self, queue: deque[BucketSnapshotPersistenceException] | None, ledger_id: int, operation: str) -> None:
        if queue:
            raise queue.popleft()
        if not self.available:
            raise BucketSnapshotPersistenceException(
                f"{BOOKIES_UNAVAILABLE} -  ledger={ledger_id} - operation={operation}"
            )

    def _open(self, bucket_id: int, queue: deque[BucketSnapshotPersistenceException] | None) -> SnapshotLedger:
        self._check(queue, bucket_id, "Open ledger")
        ledger = self._ledgers.get(bucket_id)
        if ledger is None:
            raise BucketNotExistException(f"{NO_SUCH_LEDGER} - ledger={bucket_id} - operation=Open ledger")
        return ledger


def roaring_serialized_size(entries: np.ndarray) -> int:
    """``RoaringBitmap.serializedSizeInBytes()`` after ``runOptimize()`` (see `delayed_memory`)."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    return int(roaring_serialized_sizes([np.asarray(entries)])[0])


def _error(error: BucketSnapshotPersistenceException | str | None, default: str) -> BucketSnapshotPersistenceException:
    if isinstance(error, BucketSnapshotPersistenceException):
        return error
    if error is None or isinstance(error, str):
        return BucketSnapshotPersistenceException(error or default)
    raise TypeError(f"inject a BucketSnapshotPersistenceException or its message, not {type(error).__name__}")


_VARINT_LIMITS = [1 << bits for bits in range(7, 64, 7)]  # a varint of n bytes holds values below entry n-1


def _varint_len(values: np.ndarray) -> np.ndarray:
    """Protobuf varint length of each (non-negative) value."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    unsigned = np.asarray(values, dtype=np.int64).astype(np.uint64)
    return np.searchsorted(np.asarray(_VARINT_LIMITS, dtype=np.uint64), unsigned, side="right").astype(np.int64) + 1


def _segments_size(segments: list[SnapshotSegment]) -> int:
    """Bytes of the segment entries: per index a length-prefixed DelayedIndex of three tagged varints."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    if not segments or not sum(len(s) for s in segments):
        return 0
    body = 3 + sum(
        _varint_len(np.concatenate([getattr(s, col) for s in segments]))
        for col in ("timestamps", "ledger_ids", "entry_ids")
    )
    return int((1 + _varint_len(np.asarray(body)) + body).sum())


def _metadata_size(metas: list[SnapshotSegmentMetadata]) -> int:
    """Bytes of entry 0: per segment a length-prefixed record of its bitmap map and two timestamps."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    if not metas:
        return 0
    groups = [entries for m in metas for entries in m.delayed_index_bit_map.values()]
    owner = np.repeat(np.arange(len(metas)), [len(m.delayed_index_bit_map) for m in metas])
    ledgers = np.fromiter((k for m in metas for k in m.delayed_index_bit_map), dtype=np.int64, count=len(groups))
    bitmap = roaring_serialized_sizes(groups) if groups else np.empty(0, dtype=np.int64)
    entry = 1 + _varint_len(ledgers) + 1 + _varint_len(bitmap) + bitmap
    map_entries = np.bincount(owner, weights=1 + _varint_len(entry) + entry, minlength=len(metas)).astype(np.int64)
    times = np.array([[m.max_schedule_timestamp, m.min_schedule_timestamp] for m in metas], dtype=np.int64)
    record = map_entries + 2 + _varint_len(times).sum(axis=1)
    return int((1 + _varint_len(record) + record).sum())


__all__ = [
    "BucketNotExistException",
    "BucketSnapshotPersistenceException",
    "BucketSnapshotStorage",
    "InMemoryBucketSnapshotStorage",
    "SnapshotLedger",
    "SnapshotMetadata",
    "SnapshotSegment",
    "SnapshotSegmentMetadata",
    "StorageOperations",
    "roaring_serialized_size",
]
