"""A picture of one dispatcher's delayed-delivery tracker for the views: what it holds, where, and what it costs.

Models no Pulsar class; it reads `InMemoryDelayedDeliveryTracker` (3.x/4.0 priority queue, 4.1 time buckets) and
`BucketDelayedDeliveryTracker` (mutable bucket, shared queue, sealed buckets with their segments;
docs/guide/delayed-delivery.md#in-memory-tracker, #bucket-tracker) through their read-only methods, and the bucket
snapshot storage (what is stored, not in memory). Everything is copied into frozen dataclasses, so a snapshot never
changes after it is taken.

A sealed bucket's segment is ``delivered`` (before the loaded one: its indexes were all taken, or skipped as
already due at a recovery), ``loaded`` (in the shared queue, in memory) or ``stored`` (only in the snapshot
ledger, loaded when the loaded segment's last index is taken). Simplifies: at most `MAX_ITEMS` queued indexes
are copied (the earliest), with the full counts beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pulsarlab.broker.delayed import jvm_memory
from pulsarlab.broker.delayed.bucket.buckets import BucketState
from pulsarlab.broker.delayed.bucket.snapshot import BucketSnapshotPersistenceException
from pulsarlab.broker.delayed.bucket.tracker import BucketDelayedDeliveryTracker
from pulsarlab.broker.delayed.factory import buffer_memory_usage, tracker_kind
from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker, TimeBitmapDelayedDeliveryTracker

MAX_ITEMS = 400  # queued indexes copied per snapshot (the earliest ones)

DELIVERED = "delivered"
LOADED = "loaded"
STORED = "stored"

Index = tuple[int, int, int]  # (deliverAt, ledger, entry)


@dataclass(frozen=True)
class SegmentSnap:
    """One segment of a sealed bucket: its entry id in the snapshot ledger, time range, size and state."""

    segment: int
    min_deliver_at: int
    max_deliver_at: int
    indexes: int
    state: str


@dataclass(frozen=True)
class BucketSnap:
    """A sealed bucket: its ledger range, the snapshot ledger (None: the write failed, kept in memory) and segments."""

    start_ledger: int
    end_ledger: int
    snapshot_ledger: int | None
    messages: int
    current_segment: int
    last_segment: int
    snapshot_bytes: int
    segments: tuple[SegmentSnap, ...]

    @property
    def key(self) -> str:
        return f"#pulsar.internal.delayed.bucket_{self.start_ledger}_{self.end_ledger}"


@dataclass(frozen=True)
class TimeBucketSnap:
    """4.1: one time bucket (deliverAt rounded down to ``precision`` ms) and how many positions it holds."""

    timestamp: int
    messages: int


@dataclass(frozen=True)
class DelayedTrackerSnap:
    """A dispatcher's delayed-delivery tracker at one instant.

    ``queue`` is the in-memory priority queue (or the bucket tracker's shared queue), earliest first, at most
    `MAX_ITEMS`; ``memory_bytes`` the estimated JVM bytes of every in-memory structure and ``index_size_bytes``
    what stats print as ``delayedMessageIndexSizeInBytes``; ``stored_bytes`` the snapshot ledgers' bytes;
    ``priority_queue_bytes`` what the 3.x/4.0 in-memory priority queue would take for as many messages (the
    broker's JVM pricing, `pulsarlab.broker.delayed.jvm_memory`), for comparison.
    """

    kind: str
    form: str
    messages: int
    tick: int
    strict: bool
    cutoff: int
    next_delivery: int | None
    timer_deadline: int | None
    paused: bool
    memory_bytes: int
    index_size_bytes: int
    memory_breakdown: tuple[tuple[str, int], ...]
    queue: tuple[Index, ...]
    queue_size: int
    precision_ms: int = 1
    time_buckets: tuple[TimeBucketSnap, ...] = ()
    mutable_range: tuple[int, int] | None = None
    mutable: tuple[Index, ...] = ()
    mutable_size: int = 0
    buckets: tuple[BucketSnap, ...] = ()
    stored_bytes: int = 0
    priority_queue_bytes: int = 0

    @property
    def in_stored_buckets(self) -> int:
        """Indexes whose only copy outside the ledger is a bucket snapshot (not loaded into memory)."""
        return sum(seg.indexes for b in self.buckets for seg in b.segments if seg.state == STORED)


def delayed_snapshot(tracker: InMemoryDelayedDeliveryTracker | None) -> DelayedTrackerSnap | None:
    """The snapshot of ``tracker`` (a dispatcher's ``delayed.tracker``), None when there is none."""
    if tracker is None:
        return None
    timer = tracker.timer
    common = dict(
        kind=tracker_kind(tracker),
        messages=tracker.number_of_delayed_messages(),
        tick=tracker.tick_time_millis,
        strict=tracker.is_delayed_delivery_deliver_at_time_strict,
        cutoff=tracker.cutoff_time(),
        next_delivery=_next_delivery(tracker),
        timer_deadline=timer.deadline if timer is not None else None,
        paused=tracker.would_pause_all_deliveries(),
        index_size_bytes=buffer_memory_usage(tracker),
    )
    common["priority_queue_bytes"] = jvm_memory.bytes_capacity(common["messages"])
    if isinstance(tracker, BucketDelayedDeliveryTracker):
        breakdown = tracker.memory_breakdown()
        mutable = tracker.mutable_bucket
        buckets = tuple(_bucket(tracker, b) for b in tracker.buckets())
        return DelayedTrackerSnap(
            form="bucket",
            memory_bytes=sum(breakdown.values()),
            memory_breakdown=tuple(breakdown.items()),
            queue=tuple(tracker.shared_queue(MAX_ITEMS)),
            queue_size=tracker.shared_queue_size(),
            mutable_range=(mutable.start_ledger_id, mutable.end_ledger_id) if mutable.start_ledger_id >= 0 else None,
            mutable=tuple(mutable.items(MAX_ITEMS)),
            mutable_size=mutable.size(),
            buckets=buckets,
            stored_bytes=sum(b.snapshot_bytes for b in buckets),
            **common,
        )
    memory = tracker.memory_bytes()
    if isinstance(tracker, TimeBitmapDelayedDeliveryTracker):
        groups = tracker.buckets()
        items = []
        for ts, ledgers in groups:
            for ledger, entries in ledgers:
                items.extend((ts, ledger, e) for e in entries)
                if len(items) >= MAX_ITEMS:
                    break
            if len(items) >= MAX_ITEMS:
                break
        return DelayedTrackerSnap(
            form="time_bitmap",
            memory_bytes=memory,
            memory_breakdown=(("time buckets", memory),),
            queue=tuple(sorted(items)[:MAX_ITEMS]),
            queue_size=common["messages"],
            precision_ms=1 << tracker.timestamp_precision_bit_cnt,
            time_buckets=tuple(TimeBucketSnap(ts, sum(len(e) for _, e in ledgers)) for ts, ledgers in groups),
            **common,
        )
    return DelayedTrackerSnap(
        form="priority_queue",
        memory_bytes=memory,
        memory_breakdown=(("priority queue", memory),),
        queue=tuple(tracker.queue(MAX_ITEMS)),
        queue_size=common["messages"],
        **common,
    )


def _next_delivery(tracker: InMemoryDelayedDeliveryTracker) -> int | None:
    if isinstance(tracker, BucketDelayedDeliveryTracker):
        if not tracker.shared_queue_size() and tracker.mutable_bucket.is_empty():
            return None
    return tracker.next_delivery_time()


def _bucket(tracker: BucketDelayedDeliveryTracker, state: BucketState) -> BucketSnap:
    metas: tuple = ()
    length = 0
    if state.bucket_id is not None:
        try:
            ledger = tracker.snapshot_storage.ledger(state.bucket_id)
            metas, length = ledger.metadata.metadata_list, ledger.length
        except (KeyError, BucketSnapshotPersistenceException):
            metas = ()
    segments = []
    for k, meta in enumerate(metas, start=1):
        seg_state = (
            DELIVERED
            if k < state.current_segment_entry_id
            else LOADED
            if k == state.current_segment_entry_id
            else STORED
        )
        segments.append(
            SegmentSnap(k, meta.min_schedule_timestamp, meta.max_schedule_timestamp, meta.cardinality(), seg_state)
        )
    return BucketSnap(
        state.start_ledger_id,
        state.end_ledger_id,
        state.bucket_id,
        state.messages,
        state.current_segment_entry_id,
        state.last_segment_entry_id,
        length,
        tuple(segments),
    )


__all__ = [
    "BucketSnap",
    "DELIVERED",
    "DelayedTrackerSnap",
    "LOADED",
    "MAX_ITEMS",
    "STORED",
    "SegmentSnap",
    "TimeBucketSnap",
    "delayed_snapshot",
]
