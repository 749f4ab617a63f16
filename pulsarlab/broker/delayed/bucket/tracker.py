"""The bucket delayed-delivery tracker: delay indexes sealed into stored, segmented buckets.

Models `org.apache.pulsar.broker.delayed.bucket.BucketDelayedDeliveryTracker` with `MutableBucket`,
`ImmutableBucket`, `Bucket` and `BucketDelayedDeliveryTrackerFactory` (docs/guide/delayed-delivery.md#bucket-tracker),
on the 4.0 line:

* ``addMessage``: a position already held returns True; one due by the cutoff returns False; otherwise it
  goes to the mutable bucket (ledger ids only grow there), or straight to the shared queue when its ledger
  lies before the mutable range's end or inside a sealed bucket (4.0 refuses a ledger inside the mutable
  range but before its end with ``checkArgument``, which a wired dispatcher reaches with a replayed delayed
  entry and then loses it; the later releases' rule, straight to the shared queue, is modelled).
* Sealing: when a new ledger arrives, nothing covers it and the mutable bucket holds at least
  ``delayedDeliveryMinIndexCountPerBucket`` indexes, the mutable bucket is cut into segments (a time step,
  at most ``delayedDeliveryMaxIndexesPerBucketSnapshotSegment`` indexes), segment 1 joins the shared queue
  and the snapshot is written (`bucket_snapshot`) with the cursor property
  ``#pulsar.internal.delayed.bucket_<start>_<end>`` = its ledger id. A failed write (after 3 retries)
  puts the other segments back in the shared queue and drops the bucket (memory mode).
* Taking the last index of a bucket's loaded segment loads its next segment; past the last one the bucket
  is deleted (snapshot ledger and cursor property).
* With ``delayedDeliveryMaxNumBuckets > 0``, going over it merges up to 4 adjacent buckets: a window
  replaces the choice when it holds no more messages than any window before it and its next schedule
  time is earlier (Java's loop, quirk included). A failed segment load re-arms the timer at 0 ms.
* Recovery (the constructor): every bucket property is reopened, segments already due
  (``max_schedule_timestamp <= cutoff``) are skipped, bitmaps and counts are rebuilt from the rest and the
  next segment is loaded. The mutable bucket and the shared queue are lost; the cursor re-reads from
  mark-delete and re-adds them. `new_delayed_delivery_tracker` picks the tracker by
  ``delayedDeliveryTrackerFactoryClassName`` and falls back to the in-memory one if recovery fails.

The timer rules, cutoff and ``readMoreEntries`` callback are `InMemoryDelayedDeliveryTracker`'s
(`AbstractDelayedDeliveryTracker` in Pulsar), reused by subclassing; ``close()`` stops the timer and
leaves what is stored for the next tracker. ``add_messages`` is a vectorised ``add_message`` for bulk
runs (same results and state); ``memory_bytes()`` prices the in-memory state as `delayed_memory` says.
The buckets themselves and the merge choice are `pulsarlab.broker.delayed.bucket.buckets`; the factory function
`new_delayed_delivery_tracker` is `pulsarlab.broker.delayed.factory`'s.

Simplifies: storage calls complete at once, so "asynchronous" writes, loads and merges finish inside the
call that starts them (no pending-load or merging windows); the mutable bucket keeps columns rather than
a heap (it is only asked for its earliest time, its due indexes and a sorted drain); no operation counters or
latencies (the dispatcher's stats show the gauges, `delayed_dispatch`), no trimming
of buckets below the mark-delete position (later Pulsar releases). Where 4.0 has bugs fixed later, the
fix is modelled: merge window ``min(4, buckets)`` (4.0 fails below 5 buckets), the next unloaded
segment's timestamp when ranking windows (4.0 reads one segment too far), a cleared mutable queue on
``clear()``, no error when only stored segments remain (4.0 peeks an empty queue).
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, MutableMapping, TypeVar

import numpy as np

from pulsarlab.broker.delayed import jvm_memory as mem
from pulsarlab.broker.delayed.bucket.buckets import (
    DELIMITER,
    BucketRangeMap,
    BucketState,
    ImmutableBucket,
    MutableBucket,
    SealedBucket,
    bucket_key,
    check_int,
    group_by_ledger,
    parse_bucket_id,
    push_many,
    segment_bounds,
    select_merged_buckets,
)
from pulsarlab.broker.delayed.bucket.snapshot import (
    BucketNotExistException,
    BucketSnapshotPersistenceException,
    BucketSnapshotStorage,
    InMemoryBucketSnapshotStorage,
    RecoverDelayedDeliveryTrackerException,
    SnapshotMetadata,
    SnapshotSegment,
    SnapshotSegmentMetadata,
)
from pulsarlab.broker.delayed.in_memory import DEFAULT_TICK_TIME_MILLIS, InMemoryDelayedDeliveryTracker, Position
from pulsarlab.broker.delayed.tracker_names import (
    BUCKET_TRACKER_FACTORY,
    DELAYED_BUCKET_KEY_PREFIX,
    IN_MEMORY_TRACKER_FACTORY,
)
from pulsarlab.clock import Scheduler
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.event_catalogue.delayed_buckets import (
    BUCKET_DELETED,
    BUCKET_RECOVERED,
    BUCKET_SEALED,
    BUCKETS_MERGED,
    SEGMENT_LOADED,
    SNAPSHOT_FAILED,
)
from pulsarlab.events import EventLog
from pulsarlab.profiles import Profile

MAX_MERGE_NUM = 4
MAX_RETRY_TIMES = 3  # Bucket.MaxRetryTimes: one try plus three retries


DEFAULT_MIN_INDEX_COUNT_PER_BUCKET = 50000
DEFAULT_MAX_TIME_STEP_PER_BUCKET_SNAPSHOT_SEGMENT_SECONDS = 300
DEFAULT_MAX_INDEXES_PER_BUCKET_SNAPSHOT_SEGMENT = 5000
DEFAULT_MAX_NUM_BUCKETS = -1

# In-memory costs beyond the queues and bitmaps (delayed_memory prices those), 64-bit JVM:
INDEX_TABLE_ENTRY_BYTES = 72  # ConcurrentHashMap node 32 + SnapshotKey record 32 + table slot 8
BUCKET_OBJECT_BYTES = 280  # ImmutableBucket fields, its HashMap and ArrayList, a TreeRangeMap entry
SCHEDULE_TIMESTAMP_BYTES = 24  # firstScheduleTimestamps: a boxed Long and its reference

_T = TypeVar("_T")
_NO_DELIVERY_TIME = 2**63 - 1  # Long.MAX_VALUE: only stored segments remain, nothing to wait for in memory


# --- the tracker ---------------------------------------------------------------------------------


class BucketDelayedDeliveryTracker(InMemoryDelayedDeliveryTracker):
    """One dispatcher's bucket tracker; the constructor recovers what ``cursor_properties`` name.

    ``cursor_properties`` is the subscription cursor's property map (it survives a restart as the cursor
    does); ``snapshot_storage`` the bucket snapshot store (BookKeeper in Pulsar). Times are ms; the segment
    time step is in ms here, in seconds in broker.conf (the factory converts). ``name`` is the dispatcher
    name, ``"<topic> / <subscription>"``; ``events`` receives the bucket events.
    """

    BUCKET_BASED = True  # `tracker_names.is_bucket_tracker`

    def __init__(
        self,
        scheduler: Scheduler,
        read_more_entries: Callable[[], object],
        *,
        profile: str | Profile | None = None,
        tick_time_millis: int = DEFAULT_TICK_TIME_MILLIS,
        is_delayed_delivery_deliver_at_time_strict: bool = False,
        clock: Callable[[], int] | None = None,
        snapshot_storage: BucketSnapshotStorage | None = None,
        cursor_properties: MutableMapping[str, str] | None = None,
        min_index_count_per_bucket: int = DEFAULT_MIN_INDEX_COUNT_PER_BUCKET,
        time_step_per_bucket_snapshot_segment_millis: int = DEFAULT_MAX_TIME_STEP_PER_BUCKET_SNAPSHOT_SEGMENT_SECONDS
        * 1000,
        max_indexes_per_bucket_snapshot_segment: int = DEFAULT_MAX_INDEXES_PER_BUCKET_SNAPSHOT_SEGMENT,
        max_num_buckets: int = DEFAULT_MAX_NUM_BUCKETS,
        name: str = "persistent://public/default/topic / subscription",
        events: EventLog | None = None,
    ) -> None:
        check_int("delayedDeliveryMinIndexCountPerBucket", min_index_count_per_bucket, 0)
        check_int("timeStepPerBucketSnapshotSegmentInMillis", time_step_per_bucket_snapshot_segment_millis, 0)
        check_int("delayedDeliveryMaxIndexesPerBucketSnapshotSegment", max_indexes_per_bucket_snapshot_segment, -1)
        if max_indexes_per_bucket_snapshot_segment == 0:
            raise IllegalArgumentException(
                "delayedDeliveryMaxIndexesPerBucketSnapshotSegment must be -1 (no limit) or at least 1, got 0"
            )
        check_int("delayedDeliveryMaxNumBuckets", max_num_buckets, -1)
        if not isinstance(name, str) or " / " not in name:
            raise IllegalArgumentException(f"name must be '<topic> / <subscription>', got {name!r}")
        super().__init__(
            scheduler,
            read_more_entries,
            profile=profile,
            tick_time_millis=tick_time_millis,
            is_delayed_delivery_deliver_at_time_strict=is_delayed_delivery_deliver_at_time_strict,
            fixed_delay_detection_lookahead=0,
            clock=clock,
        )
        self.min_index_count_per_bucket = min_index_count_per_bucket
        self.time_step_per_bucket_snapshot_segment_millis = time_step_per_bucket_snapshot_segment_millis
        self.max_indexes_per_bucket_snapshot_segment = max_indexes_per_bucket_snapshot_segment
        self.max_num_buckets = max_num_buckets
        self.name = name
        self.topic_name, _, self.cursor_name = name.rpartition(" / ")
        self.snapshot_storage: BucketSnapshotStorage = (
            snapshot_storage if snapshot_storage is not None else InMemoryBucketSnapshotStorage()
        )
        self.cursor_properties: MutableMapping[str, str] = cursor_properties if cursor_properties is not None else {}
        self._events = events
        self._mutable = MutableBucket()
        self._shared: list[tuple[int, int, int]] = []  # sharedBucketPriorityQueue, a heap
        self._buckets = BucketRangeMap()  # immutableBuckets
        self._last_index: dict[Position, ImmutableBucket] = {}  # snapshotSegmentLastIndexMap
        self._count = 0  # numberDelayedMessages
        try:
            self._count = self._recover_bucket_snapshot()
        except RecoverDelayedDeliveryTrackerException:
            self.close()
            raise

    # --- DelayedDeliveryTracker API -----------------------------------------------------------

    def add_message(self, ledger_id: int, entry_id: int, deliver_at: int) -> bool:
        """Hold a position until ``deliver_at``; False means "deliver it now" (not tracked)."""
        mutable = self._mutable
        bits = mutable.bitmap.get(ledger_id)
        if bits is not None and entry_id in bits:
            return True
        bucket = self._buckets.get(ledger_id) if self._buckets._starts else None
        if bucket is not None and bucket.contains_message(ledger_id, entry_id):
            return True
        if deliver_at < 0:
            return False
        now = self._clock()
        if deliver_at <= (now if self.is_delayed_delivery_deliver_at_time_strict else now + self.tick_time_millis):
            return False
        self._seal_if_due(ledger_id, bucket)
        if ledger_id < mutable.end_ledger_id or bucket is not None:
            heapq.heappush(self._shared, (deliver_at, ledger_id, entry_id))
            mutable.put_index_bit(ledger_id, entry_id)
        else:
            mutable.add_message(ledger_id, entry_id, deliver_at)
        self._count += 1
        # updateTimer: an armed timer already targets the earliest time unless this one is earlier
        if self._timeout is None or self._count == 1 or not 0 <= self._current_timeout_target <= deliver_at:
            self._update_timer()
        return True

    def add_messages(self, ledger_ids: Any, entry_ids: Any, deliver_ats: Any) -> np.ndarray:
        """``add_message`` for each (ledger, entry, deliverAt) in order, vectorised per run of one ledger.

        Same results, state, events and timer as the scalar calls (the clock does not move within one
        call); a batch naming a position twice goes through the scalar path.
        """
        ledgers = np.asarray(ledger_ids, dtype=np.int64).reshape(-1)
        entries = np.asarray(entry_ids, dtype=np.int64).reshape(-1)
        times = np.asarray(deliver_ats, dtype=np.int64).reshape(-1)
        n = len(ledgers)
        if not n == len(entries) == len(times):
            raise IllegalArgumentException(
                f"add_messages needs as many entry ids and deliverAt times as ledger ids, got "
                f"{n}, {len(entries)} and {len(times)}"
            )
        results = np.zeros(n, dtype=bool)
        if n == 0:
            return results
        order = np.lexsort((entries, ledgers))
        if n > 1 and bool(((np.diff(ledgers[order]) == 0) & (np.diff(entries[order]) == 0)).any()):
            for i in range(n):
                results[i] = self.add_message(int(ledgers[i]), int(entries[i]), int(times[i]))
            return results
        due = (times < 0) | (times <= self.cutoff_time())
        starts = np.flatnonzero(np.r_[True, ledgers[1:] != ledgers[:-1]])
        ends = np.r_[starts[1:], n]
        mutable = self._mutable
        added = False
        try:
            for s, e in zip(starts.tolist(), ends.tolist()):
                ledger_id = int(ledgers[s])
                run_entries = entries[s:e]
                bucket = self._buckets.get(ledger_id) if self._buckets else None
                held = [
                    x for x in (mutable.bitmap.get(ledger_id), bucket.bitmap.get(ledger_id) if bucket else None) if x
                ]
                take = ~due[s:e]
                hits: set[int] = set()
                if held:
                    listed = run_entries.tolist()
                    for h in held:
                        hits.update(h.intersection(listed))
                if hits:
                    contained = np.isin(run_entries, np.fromiter(hits, dtype=np.int64, count=len(hits)))
                    results[s:e] = contained | take
                    take &= ~contained
                else:
                    results[s:e] = take
                if not take.any():
                    continue
                run_entries = run_entries[take]
                run_times = times[s:e][take]
                self._seal_if_due(ledger_id, bucket)
                if ledger_id < mutable.end_ledger_id or bucket is not None:
                    push_many(self._shared, run_times, np.full(len(run_times), ledger_id), run_entries)
                    mutable.bitmap.setdefault(ledger_id, set()).update(run_entries.tolist())
                else:
                    mutable.add_run(ledger_id, run_entries, run_times)
                self._count += len(run_entries)
                added = True
        finally:
            if added:
                self._update_timer()
        return results

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        """Take up to ``max_messages`` due positions (loading next segments on the way), sorted."""
        cutoff = self.cutoff_time()
        shared = self._shared
        self._mutable.move_scheduled_to(cutoff, shared)
        positions: list[Position] = []
        last_index = self._last_index
        buckets = self._buckets
        mutable_bits = self._mutable.bitmap
        cached_ledger: int | None = None
        cached_bucket: ImmutableBucket | None = None
        n = max_messages
        load_failed = False
        while n > 0 and shared:
            top = shared[0]
            if top[0] > cutoff:
                break
            ledger_id, entry_id = key = (top[1], top[2])
            bucket = last_index.get(key) if last_index else None
            if bucket is not None and buckets.contains_value(bucket):
                if not self._load_next_segment(bucket, key):
                    load_failed = True
                    break
                cached_ledger = None  # loading may have deleted a bucket
            heapq.heappop(shared)
            positions.append(key)
            # removeIndexBit: the mutable bucket's bitmap first, then the sealed bucket covering the ledger
            bits = mutable_bits.get(ledger_id)
            if bits is not None and entry_id in bits:
                bits.remove(entry_id)
                if not bits:
                    del mutable_bits[ledger_id]
            else:
                if ledger_id != cached_ledger:
                    cached_ledger = ledger_id
                    cached_bucket = buckets.get(ledger_id) if buckets._starts else None
                if cached_bucket is not None:
                    cached_bucket.remove_index_bit(ledger_id, entry_id)
            n -= 1
        self._count -= len(positions)
        self._update_timer()
        if load_failed:
            self._wake_dispatcher_now()
        positions.sort()
        return positions

    def should_pause_all_deliveries(self) -> bool:
        """The bucket tracker never pauses reads (no fixed-delay look-ahead)."""
        return False

    def would_pause_all_deliveries(self) -> bool:
        return self.should_pause_all_deliveries()

    def contains_message(self, ledger_id: int, entry_id: int) -> bool:
        if self._mutable.contains_message(ledger_id, entry_id):
            return True
        bucket = self._buckets.get(ledger_id) if self._buckets else None
        return bucket is not None and bucket.contains_message(ledger_id, entry_id)

    def clear(self) -> None:
        """Drop everything: every bucket's snapshot and property, the shared queue, the mutable bucket."""
        for bucket in self._buckets.distinct():
            self._buckets.remove_exact(bucket.start_ledger_id, bucket.end_ledger_id)
            self._count -= bucket.number_bucket_delayed_messages
            bucket.bitmap.clear()
            self._delete_bucket_snapshot(bucket, "cleared")
        self._buckets = BucketRangeMap()
        self._shared.clear()
        self._mutable.clear()
        self._last_index.clear()
        self._count = 0

    def number_of_delayed_messages(self) -> int:
        return self._count

    def buffer_memory_usage(self) -> int:
        """``getBufferMemoryUsage``: the mutable bucket's and the shared queue's ``bytesCapacity``."""
        return mem.bytes_capacity(self._mutable.size()) + mem.bytes_capacity(len(self._shared))

    def memory_breakdown(self) -> dict[str, int]:
        """Estimated JVM bytes of the in-memory state, by structure (`delayed_memory` has the costs)."""
        buckets = self._buckets.distinct()
        return {
            "mutable_bucket_queue": mem.bytes_capacity(self._mutable.size()),
            "mutable_bucket_bitmap": mem.ledger_bitmaps_bytes(self._mutable.bitmap),
            "shared_queue": mem.bytes_capacity(len(self._shared)),
            "bucket_bitmaps": sum(mem.ledger_bitmaps_bytes(b.bitmap, run_optimized=True) for b in buckets),
            "segment_last_index_table": INDEX_TABLE_ENTRY_BYTES * len(self._last_index),
            "buckets": sum(
                BUCKET_OBJECT_BYTES + SCHEDULE_TIMESTAMP_BYTES * len(b.first_schedule_timestamps) for b in buckets
            ),
        }

    def memory_bytes(self) -> int:
        """Estimated JVM bytes of everything the tracker keeps in memory (not what is stored)."""
        return sum(self.memory_breakdown().values())

    # --- views ----------------------------------------------------------------------------------

    @property
    def mutable_bucket(self) -> MutableBucket:
        return self._mutable

    def shared_queue(self, limit: int | None = None) -> list[tuple[int, int, int]]:
        """The shared queue's (deliverAt, ledger, entry) items in delivery order (the first ``limit``)."""
        if limit is not None:
            return heapq.nsmallest(limit, self._shared)
        return sorted(self._shared)

    def shared_queue_size(self) -> int:
        return len(self._shared)

    def buckets(self) -> list[BucketState]:
        """The sealed buckets in ledger order."""
        return [
            BucketState(
                b.start_ledger_id,
                b.end_ledger_id,
                b.bucket_id,
                b.current_segment_entry_id,
                b.last_segment_entry_id,
                b.number_bucket_delayed_messages,
                tuple(b.first_schedule_timestamps),
            )
            for b in self._buckets.distinct()
        ]

    def snapshot_length_bytes(self) -> int:
        """Bytes of the sealed buckets' snapshots (``totalSnapshotLength``, the stats gauge)."""
        return sum(b.snapshot_length for b in self._buckets.distinct())

    def bucket_count(self) -> int:
        """``bucketsCount``: mapped ranges in ``immutableBuckets``."""
        return len(self._buckets)

    # --- AbstractDelayedDeliveryTracker hooks ------------------------------------------------

    def _next_delivery_time(self) -> int:
        mutable = self._mutable
        if mutable.is_empty():
            return self._shared[0][0] if self._shared else _NO_DELIVERY_TIME
        if not self._shared:
            return mutable.next_delivery_time()
        return min(mutable.next_delivery_time(), self._shared[0][0])

    def _update_timer(self) -> None:
        if not self._shared and self._mutable.is_empty():
            # only stored segments remain (or nothing): no time to wait for
            if self._timeout is not None:
                self._current_timeout_target = -1
                self._timeout.cancel()
                self._timeout = None
            return
        super()._update_timer()

    def _run(self) -> None:
        self._mutable.move_scheduled_to(self.cutoff_time(), self._shared)
        super()._run()

    def _wake_dispatcher_now(self) -> None:
        """A failed segment load re-arms the timer at 0 ms, so the dispatcher tries again."""
        if self._timeout is not None:
            self._timeout.cancel()
        self._timeout = self._scheduler.call_later(0, self._run, "BucketDelayedDeliveryTracker")
        self.timeouts_created += 1

    # --- sealing, loading, merging, deleting -------------------------------------------------

    def _seal_if_due(self, ledger_id: int, bucket: object) -> None:
        """Seal the mutable bucket when a message of a later ledger (in no sealed bucket) arrives and it holds
        at least ``delayedDeliveryMinIndexCountPerBucket`` indexes."""
        mutable = self._mutable
        if (
            bucket is None
            and ledger_id > mutable.end_ledger_id
            and mutable.size() >= self.min_index_count_per_bucket
            and not mutable.is_empty()
        ):
            self._seal_mutable_bucket()

    def _seal_mutable_bucket(self) -> None:
        mutable = self._mutable
        start, end = mutable.start_ledger_id, mutable.end_ledger_id
        ts, ledgers, entries = mutable.drain_sorted()
        for ledger_id, group in group_by_ledger(ledgers, entries):
            bits = mutable.bitmap.get(ledger_id)
            if bits is not None:
                bits.difference_update(group.tolist())
                if not bits:
                    del mutable.bitmap[ledger_id]
        sealed = self._create_immutable_bucket(ts, ledgers, entries, start, end)
        snapshot = self._after_create_immutable_bucket(sealed)
        mutable.reset_range()
        self._emit(
            BUCKET_SEALED,
            start=start,
            end=end,
            messages=len(ts),
            segments=len(sealed.segments),
            snapshot=-1 if snapshot is None else snapshot,
        )
        if self.max_num_buckets > 0 and len(self._buckets) > self.max_num_buckets:
            self._merge_bucket_snapshots()

    def _create_immutable_bucket(
        self, ts: np.ndarray, ledgers: np.ndarray, entries: np.ndarray, start: int, end: int
    ) -> SealedBucket:
        """``createImmutableBucketAndAsyncPersistent`` before the write: cut segments, push segment 1."""
        bounds = segment_bounds(
            ts, self.time_step_per_bucket_snapshot_segment_millis, self.max_indexes_per_bucket_snapshot_segment
        )
        seg_ids = np.repeat(np.arange(len(bounds)), [j - i for i, j in bounds])
        order = np.lexsort((entries, ledgers, seg_ids))
        s_seg, s_ledgers, s_entries = seg_ids[order], ledgers[order], entries[order]
        cuts = np.flatnonzero(np.r_[True, (s_seg[1:] != s_seg[:-1]) | (s_ledgers[1:] != s_ledgers[:-1])])
        bitmaps: list[dict[int, np.ndarray]] = [{} for _ in bounds]
        for a, b in zip(cuts.tolist(), np.r_[cuts[1:], len(order)].tolist()):
            bitmaps[int(s_seg[a])][int(s_ledgers[a])] = s_entries[a:b]
        metas = []
        segments = []
        for k, (i, j) in enumerate(bounds):
            metas.append(SnapshotSegmentMetadata(bitmaps[k], int(ts[j - 1]), int(ts[i])))
            segments.append(SnapshotSegment(ts[i:j], ledgers[i:j], entries[i:j]))
        i0, j0 = bounds[0]
        push_many(self._shared, ts[i0:j0], ledgers[i0:j0], entries[i0:j0])
        bucket = ImmutableBucket(start, end)
        bucket.current_segment_entry_id = 1
        bucket.number_bucket_delayed_messages = len(ts)
        bucket.last_segment_entry_id = len(bounds)
        bucket.first_schedule_timestamps = [int(ts[i]) for i, _ in bounds]
        bucket.bitmap = {lid: set(group.tolist()) for lid, group in group_by_ledger(ledgers, entries)}
        return SealedBucket(
            bucket, SnapshotMetadata(tuple(metas)), segments, (int(ledgers[j0 - 1]), int(entries[j0 - 1]))
        )

    def _after_create_immutable_bucket(self, sealed: SealedBucket) -> int | None:
        """Map the bucket, index its loaded segment's last position, write the snapshot; None if that failed."""
        bucket = sealed.bucket
        self._buckets.put(bucket.start_ledger_id, bucket.end_ledger_id, bucket)
        self._last_index[sealed.first_last_index] = bucket
        try:
            bucket_id = self._with_retry(
                lambda: self.snapshot_storage.create_bucket_snapshot(
                    sealed.metadata, sealed.segments, bucket.bucket_key, self.topic_name, self.cursor_name
                )
            )
        except BucketSnapshotPersistenceException as err:
            for segment in sealed.segments[1:]:
                push_many(self._shared, segment.timestamps, segment.ledger_ids, segment.entry_ids)
            bucket.current_segment_entry_id = bucket.last_segment_entry_id
            self._buckets.remove_exact(bucket.start_ledger_id, bucket.end_ledger_id)
            self._last_index.pop(sealed.first_last_index, None)
            self._emit(
                SNAPSHOT_FAILED, start=bucket.start_ledger_id, end=bucket.end_ledger_id, op="create", error=str(err)
            )
            return None
        bucket.bucket_id = bucket_id
        self.cursor_properties[bucket.bucket_key] = str(bucket_id)
        try:
            bucket.snapshot_length = self.snapshot_storage.get_bucket_snapshot_length(bucket_id)
        except BucketSnapshotPersistenceException:
            pass  # Pulsar only logs a failed length update
        return bucket_id

    def _load_next_segment(self, bucket: ImmutableBucket, key: Position) -> bool:
        """Load the bucket's next segment into the shared queue (or delete the bucket after its last one)."""
        next_id = bucket.current_segment_entry_id + 1
        segment: SnapshotSegment | None = None
        if next_id <= bucket.last_segment_entry_id:
            bucket_id = self._bucket_id(bucket)
            try:
                loaded = self._with_retry(
                    lambda: self.snapshot_storage.get_bucket_snapshot_segment(bucket_id, next_id, next_id)
                )
            except BucketSnapshotPersistenceException as err:
                self._emit(
                    SNAPSHOT_FAILED,
                    start=bucket.start_ledger_id,
                    end=bucket.end_ledger_id,
                    op=f"load segment {next_id}",
                    error=str(err),
                )
                return False
            segment = loaded[0] if loaded and len(loaded[0]) else None
        del self._last_index[key]
        if segment is None:
            self._buckets.remove_exact(bucket.start_ledger_id, bucket.end_ledger_id)
            self._delete_bucket_snapshot(bucket, "all indexes delivered")
            return True
        bucket.current_segment_entry_id = next_id
        last = segment.last_index()
        self._last_index[(last[1], last[2])] = bucket
        push_many(self._shared, segment.timestamps, segment.ledger_ids, segment.entry_ids)
        self._emit(
            SEGMENT_LOADED,
            start=bucket.start_ledger_id,
            end=bucket.end_ledger_id,
            segment=next_id,
            segments=bucket.last_segment_entry_id,
            indexes=len(segment),
        )
        return True

    def _merge_bucket_snapshots(self) -> None:
        """``asyncMergeBucketSnapshot``: merge the chosen adjacent buckets' unloaded segments into one."""
        chosen = select_merged_buckets(self._buckets.values(), MAX_MERGE_NUM)
        if not chosen:
            return  # "Can't find able merged buckets"

        def unloaded_segments(b: ImmutableBucket) -> Callable[[], list[SnapshotSegment]]:
            return lambda: self.snapshot_storage.get_bucket_snapshot_segment(
                self._bucket_id(b), b.current_segment_entry_id + 1, b.last_segment_entry_id
            )

        try:
            remaining = [self._with_retry(unloaded_segments(b)) for b in chosen]
        except BucketSnapshotPersistenceException as err:
            self._emit(
                SNAPSHOT_FAILED,
                start=chosen[0].start_ledger_id,
                end=chosen[-1].end_ledger_id,
                op="merge",
                error=str(err),
            )
            return
        segments = [s for segs in remaining for s in segs]
        ts = np.concatenate([s.timestamps for s in segments])
        ledgers = np.concatenate([s.ledger_ids for s in segments])
        entries = np.concatenate([s.entry_ids for s in segments])
        order = np.lexsort((entries, ledgers, ts))
        start, end = chosen[0].start_ledger_id, chosen[-1].end_ledger_id
        sealed = self._create_immutable_bucket(ts[order], ledgers[order], entries[order], start, end)
        merged_bitmap: dict[int, set[int]] = {}
        for b in chosen:
            for ledger_id, bits in b.bitmap.items():
                merged_bitmap.setdefault(ledger_id, set()).update(bits)
        sealed.bucket.bitmap = merged_bitmap
        snapshot = self._after_create_immutable_bucket(sealed)
        for b in chosen:
            self._delete_bucket_snapshot(b, "merged")
        for b in chosen:
            self._buckets.remove_exact(b.start_ledger_id, b.end_ledger_id)
        self._emit(
            BUCKETS_MERGED,
            start=start,
            end=end,
            buckets=len(chosen),
            messages=sealed.bucket.number_bucket_delayed_messages,
            snapshot=-1 if snapshot is None else snapshot,
        )

    def _delete_bucket_snapshot(self, bucket: ImmutableBucket, reason: str) -> None:
        """``asyncDeleteBucketSnapshot``: delete the ledger, then (only then) its cursor property."""
        bucket_id = bucket.bucket_id
        if bucket_id is None:
            value = self.cursor_properties.get(bucket.bucket_key)
            if value is None:
                return
            bucket_id = parse_bucket_id(bucket.bucket_key, value)
        try:
            self._with_retry(lambda: self.snapshot_storage.delete_bucket_snapshot(bucket_id))
        except BucketSnapshotPersistenceException as err:
            self._emit(
                SNAPSHOT_FAILED, start=bucket.start_ledger_id, end=bucket.end_ledger_id, op="delete", error=str(err)
            )
            return
        self.cursor_properties.pop(bucket.bucket_key, None)
        self._emit(
            BUCKET_DELETED, start=bucket.start_ledger_id, end=bucket.end_ledger_id, snapshot=bucket_id, reason=reason
        )

    # --- recovery ------------------------------------------------------------------------------

    def _recover_bucket_snapshot(self) -> int:
        """Rebuild the sealed buckets the cursor properties name; returns how many indexes they hold."""
        to_delete: list[ImmutableBucket] = []
        for key in list(self.cursor_properties):
            if not key.startswith(DELAYED_BUCKET_KEY_PREFIX):
                continue
            parts = key.split(DELIMITER)
            if len(parts) != 3:
                raise IllegalArgumentException(
                    f"bucket cursor property {key!r} is not {DELAYED_BUCKET_KEY_PREFIX}_<start>_<end>"
                )
            try:
                start, end = int(parts[1]), int(parts[2])
            except ValueError:
                raise IllegalArgumentException(f"bucket cursor property {key!r} has a non-numeric ledger id") from None
            self._put_and_clean_overlap_range(ImmutableBucket(start, end), to_delete)
        if not self._buckets:
            return 0
        for bucket in self._buckets.distinct():
            try:
                recovered = self._recover_bucket(bucket)
            except BucketNotExistException:
                recovered = None
            except BucketSnapshotPersistenceException as err:
                raise RecoverDelayedDeliveryTrackerException(
                    f"Failed to recover delayed message index bucket snapshot {bucket.bucket_key}: {err}"
                ) from err
            if recovered is None:
                to_delete.append(bucket)
                continue
            segment, skipped = recovered
            last = segment.last_index()
            self._last_index[(last[1], last[2])] = bucket
            push_many(self._shared, segment.timestamps, segment.ledger_ids, segment.entry_ids)
            self._emit(
                BUCKET_RECOVERED,
                start=bucket.start_ledger_id,
                end=bucket.end_ledger_id,
                skipped=skipped,
                segments=bucket.last_segment_entry_id,
                messages=bucket.number_bucket_delayed_messages,
            )
        for bucket in to_delete:
            self._buckets.remove_exact(bucket.start_ledger_id, bucket.end_ledger_id)
            self._delete_bucket_snapshot(bucket, "nothing left to deliver at recovery")
        return sum(b.number_bucket_delayed_messages for b in self._buckets.distinct())

    def _put_and_clean_overlap_range(self, bucket: ImmutableBucket, to_delete: list[ImmutableBucket]) -> None:
        start, end = bucket.start_ledger_id, bucket.end_ledger_id
        overlapping = self._buckets.overlapping(start, end)
        can_put = not overlapping
        for other in overlapping:
            if start <= other.start_ledger_id and other.end_ledger_id <= end:
                to_delete.append(other)
                can_put = True
        if can_put:
            self._buckets.put(start, end, bucket)

    def _recover_bucket(self, bucket: ImmutableBucket) -> tuple[SnapshotSegment, int] | None:
        """``asyncRecoverBucketSnapshotEntry``: skip due segments, rebuild, load the next; None if none left."""
        bucket_id = self._bucket_id(bucket)
        cutoff = self.cutoff_time()
        metadata = self._with_retry(lambda: self.snapshot_storage.get_bucket_snapshot_metadata(bucket_id))
        metas = metadata.metadata_list
        skipped = 0
        while skipped < len(metas) and metas[skipped].max_schedule_timestamp <= cutoff:
            skipped += 1
        bucket.last_segment_entry_id = len(metas)
        bucket.bitmap = {}
        count = 0
        for meta in metas[skipped:]:
            for ledger_id, entries in meta.delayed_index_bit_map.items():
                bucket.bitmap.setdefault(ledger_id, set()).update(entries.tolist())
                count += len(entries)
        bucket.number_bucket_delayed_messages = count
        bucket.first_schedule_timestamps = [m.min_schedule_timestamp for m in metas]
        next_id = skipped + 1
        if next_id > bucket.last_segment_entry_id:
            return None
        loaded = self._with_retry(
            lambda: self.snapshot_storage.get_bucket_snapshot_segment(bucket_id, next_id, next_id)
        )
        if not loaded or not len(loaded[0]):
            return None
        bucket.current_segment_entry_id = next_id
        try:
            bucket.snapshot_length = self.snapshot_storage.get_bucket_snapshot_length(bucket_id)
        except BucketSnapshotPersistenceException:
            pass
        return loaded[0], skipped

    # --- helpers -------------------------------------------------------------------------------

    def _bucket_id(self, bucket: ImmutableBucket) -> int:
        """``getAndUpdateBucketId``: the bucket's ledger id, read from its cursor property the first time."""
        if bucket.bucket_id is None:
            value = self.cursor_properties.get(bucket.bucket_key)
            if value is None:
                raise IllegalArgumentException(f"no cursor property {bucket.bucket_key!r} for this bucket")
            bucket.bucket_id = parse_bucket_id(bucket.bucket_key, value)
        return bucket.bucket_id

    @staticmethod
    def _with_retry(operation: Callable[[], _T]) -> _T:
        """``executeWithRetry(op, BucketSnapshotPersistenceException, MaxRetryTimes)``."""
        attempt = 0
        while True:
            try:
                return operation()
            except BucketNotExistException:
                raise  # retrying cannot bring a missing ledger back
            except BucketSnapshotPersistenceException:
                if attempt >= MAX_RETRY_TIMES:
                    raise
                attempt += 1

    def _emit(self, event_type_: Any, **fields: Any) -> None:
        if self._events is not None:
            self._events.append(event_type_, self._clock(), tracker=self.name, **fields)


# what the tracker's callers import from here: its buckets and the names that choose it
__all__ = [
    "BUCKET_TRACKER_FACTORY",
    "DELAYED_BUCKET_KEY_PREFIX",
    "IN_MEMORY_TRACKER_FACTORY",
    "BucketDelayedDeliveryTracker",
    "BucketState",
    "ImmutableBucket",
    "MutableBucket",
    "RecoverDelayedDeliveryTrackerException",
    "bucket_key",
    "select_merged_buckets",
]
