"""The bucket delayed-delivery tracker (reference §10.2): Pulsar's test facts, snapshots and cursor properties,
storage failures, bad config, memory estimates, the bulk add path, and properties across broker restarts
compared with the in-memory tracker."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.delayed import jvm_memory as mem
from pulsarlab.broker.delayed.bucket.snapshot import (
    BucketSnapshotPersistenceException,
    InMemoryBucketSnapshotStorage,
    roaring_serialized_size,
)
from pulsarlab.broker.delayed.bucket.tracker import (
    BUCKET_TRACKER_FACTORY,
    DELAYED_BUCKET_KEY_PREFIX,
    IN_MEMORY_TRACKER_FACTORY,
    BucketDelayedDeliveryTracker,
    ImmutableBucket,
    RecoverDelayedDeliveryTrackerException,
    bucket_key,
    select_merged_buckets,
)
from pulsarlab.broker.delayed.factory import new_delayed_delivery_tracker
from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker, timestamp_precision_bit_cnt
from pulsarlab.clock import Scheduler
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.events import EventLog
from pulsarlab.profiles import get_profile

SLOW = settings(max_examples=100, deadline=None)


class Clock:
    """Pulsar's tests' mocked ``Clock``: ``clock.millis()`` reads ``now``."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Env:
    """What survives a restart (snapshot storage, cursor properties) plus the clock and scheduler."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.scheduler = Scheduler()
        self.storage = InMemoryBucketSnapshotStorage()
        self.props: dict[str, str] = {}
        self.events = EventLog()
        self.reads = 0

    def read_more_entries(self) -> None:
        self.reads += 1

    def tracker(
        self, tick: int, strict: bool, min_index: int, step: int, max_indexes: int, max_buckets: int
    ) -> BucketDelayedDeliveryTracker:
        """``new BucketDelayedDeliveryTracker(dispatcher, timer, tick, clock, strict, storage, minIndexCount,
        timeStep, maxIndexesPerSegment, maxNumBuckets)`` as the Java tests write it."""
        return BucketDelayedDeliveryTracker(
            self.scheduler,
            self.read_more_entries,
            clock=self.clock,
            tick_time_millis=tick,
            is_delayed_delivery_deliver_at_time_strict=strict,
            snapshot_storage=self.storage,
            cursor_properties=self.props,
            min_index_count_per_bucket=min_index,
            time_step_per_bucket_snapshot_segment_millis=step,
            max_indexes_per_bucket_snapshot_segment=max_indexes,
            max_num_buckets=max_buckets,
            name="persistent://public/default/testDelay / my_test_cursor",
            events=self.events,
        )


def drain_all(tracker, limit: int, rounds: int = 50) -> list[tuple[int, int]]:
    """Awaitility's loop: call ``getScheduledMessages`` until nothing more comes out."""
    out: list[tuple[int, int]] = []
    for _ in range(rounds):
        batch = tracker.get_scheduled_messages(limit)
        if not batch:
            break
        out.extend(batch)
    return out


# --- BucketDelayedDeliveryTrackerTest facts --------------------------------------------------------


def test_recover_snapshot():
    env = Env()
    tracker = env.tracker(100000, True, 5, 10, -1, 50)
    for i in range(1, 101):
        assert tracker.add_message(i, i, i * 10)
    assert tracker.number_of_delayed_messages() == 100
    env.clock.now = 10
    assert tracker.has_message_available()
    assert tracker.get_scheduled_messages(100) == [(1, 1)]
    tracker.add_message(101, 101, 101 * 10)
    tracker.close()

    env.clock.now = 30 * 10
    tracker2 = env.tracker(1000, True, 5, 10, -1, 50)
    assert not tracker2.contains_message(101, 101)  # it was in the unsealed mutable bucket
    assert tracker2.number_of_delayed_messages() == 70
    env.clock.now = 100 * 10
    assert tracker2.has_message_available()
    assert drain_all(tracker2, 70) == [(i, i) for i in range(31, 101)]


def test_contains_message():
    env = Env()
    tracker = env.tracker(1, True, 1000, 100, -1, 50)  # the Java tests' default provider
    tracker.add_message(1, 1, 10)
    tracker.add_message(2, 2, 20)
    assert tracker.contains_message(1, 1)
    env.clock.now = 20
    assert tracker.get_scheduled_messages(1)[0][1] == 1
    for i in (3, 4, 5, 6):
        tracker.add_message(i, i, 30)
    assert tracker.contains_message(3, 3)


def test_abstract_delivery_tracker_facts():
    """AbstractDeliveryTrackerTest.test on the bucket tracker (tick 1, not strict; reference §10.1)."""
    env = Env()
    tracker = env.tracker(1, False, 5, 10, -1, 50)
    for ledger, entry, at in ((1, 2, 20), (2, 1, 10), (3, 3, 30), (4, 5, 50), (5, 4, 40)):
        assert tracker.add_message(ledger, entry, at)
    assert tracker.number_of_delayed_messages() == 5
    assert not tracker.has_message_available()
    env.clock.now = 15
    assert not tracker.add_message(6, 6, 10)
    assert tracker.has_message_available()
    assert tracker.get_scheduled_messages(10) == [(2, 1)]
    env.clock.now = 60
    assert tracker.get_scheduled_messages(10) == [(1, 2), (3, 3), (4, 5), (5, 4)]


def _add_110_and_111(tracker):
    for i in range(1, 111):
        tracker.add_message(i, i, i * 10)
    assert tracker.number_of_delayed_messages() == 110
    assert tracker.bucket_count() <= 10
    tracker.add_message(111, 1011, 111 * 10)
    return sum(b.messages for b in tracker.buckets())


def test_merge_snapshot():
    env = Env()
    tracker = env.tracker(100000, True, 5, 10, -1, 10)
    in_snapshots = _add_110_and_111(tracker)
    assert env.events.of_kind("buckets_merged")  # 22 sealed buckets could not fit in 10 without merging
    tracker.close()

    tracker2 = env.tracker(1000, True, 5, 10, -1, 10)
    assert tracker2.number_of_delayed_messages() == in_snapshots
    for i in range(1, 111):
        tracker2.add_message(i, i, i * 10)  # the cursor re-reads; what the snapshots hold is not added twice
    env.clock.now = 110 * 10
    assert drain_all(tracker2, 110) == [(i, i) for i in range(1, 111)]


def test_with_bk_exception():
    env = Env()
    storage = env.storage
    storage.inject_create_exception()
    storage.inject_get_metadata_exception()
    storage.inject_get_segment_exception()
    storage.inject_delete_exception()
    tracker = env.tracker(100000, True, 5, 10, -1, 10)
    in_snapshots = _add_110_and_111(tracker)
    tracker.close()

    tracker2 = env.tracker(1000, True, 5, 10, -1, 10)
    assert tracker2.number_of_delayed_messages() == in_snapshots
    env.clock.now = 110 * 10
    for n in range(1, 5):
        storage.inject_get_segment_exception(f"Bookie operation timeout{n}, op: Get entry")
    assert tracker2.get_scheduled_messages(100) == []  # one try and three retries all failed
    assert env.scheduler.next_deadline() == env.scheduler.now()  # the timer is re-armed at 0 ms to retry
    reads = env.reads
    env.scheduler.run_until(env.scheduler.now())
    assert env.reads == reads + 1  # ... and wakes the dispatcher
    assert len(drain_all(tracker2, 100)) == in_snapshots
    assert not (
        storage.create_exception_queue
        or storage.get_metadata_exception_queue
        or storage.get_segment_exception_queue
        or storage.delete_exception_queue
    )


def test_with_create_fail_downgrade():
    env = Env()
    for _ in range(4):
        env.storage.inject_create_exception()
    tracker = env.tracker(100000, True, 5, 10, -1, 10)
    for i in range(1, 7):
        tracker.add_message(i, i, i * 10)
    assert tracker.bucket_count() == 0
    assert [e.op for e in env.events.of_kind("snapshot_failed")] == ["create"]
    env.clock.now = 5 * 10
    assert tracker.number_of_delayed_messages() == 6
    assert tracker.get_scheduled_messages(5) == [(i, i) for i in range(1, 6)]
    assert env.props == {} and len(env.storage) == 0


def test_max_indexes_per_segment():
    env = Env()
    tracker = env.tracker(100000, True, 20, 3_600_000, 5, 100)
    for i in range(1, 102):
        tracker.add_message(i, i, i * 10)
    assert tracker.bucket_count() == 5
    assert all(b.last_segment_entry_id == 4 for b in tracker.buckets())


def test_clear():
    env = Env()
    tracker = env.tracker(1, True, 1000, 100, -1, 50)
    for i in range(1, 1002):
        tracker.add_message(i, i, i * 10)
    assert tracker.number_of_delayed_messages() == 1001
    assert tracker.bucket_count() > 0
    assert tracker.mutable_bucket.size() == 1
    tracker.clear()
    assert tracker.number_of_delayed_messages() == 0
    assert tracker.bucket_count() == 0
    assert tracker.mutable_bucket.size() == 0
    assert tracker.shared_queue_size() == 0
    assert env.props == {} and len(env.storage) == 0


@pytest.mark.parametrize("max_num_buckets", [1, 2, 3])
def test_merge_supports_small_max_num_buckets(max_num_buckets):
    env = Env()
    tracker = env.tracker(100000, True, 5, 10, -1, max_num_buckets)
    count = (max_num_buckets + 1) * 5 + 1
    for i in range(1, count + 1):
        assert tracker.add_message(i, i, 20 if i % 5 == 0 else 10)
    assert 0 < tracker.bucket_count() <= max_num_buckets
    env.clock.now = 20
    assert sorted(drain_all(tracker, count)) == [(i, i) for i in range(1, count + 1)]
    assert tracker.number_of_delayed_messages() == 0


def _mergeable(start: int, end: int, first_schedule_timestamps: list[int]) -> ImmutableBucket:
    bucket = ImmutableBucket(start, end)
    bucket.current_segment_entry_id = 1
    bucket.last_segment_entry_id = len(first_schedule_timestamps)
    bucket.first_schedule_timestamps = first_schedule_timestamps
    bucket.number_bucket_delayed_messages = 1
    return bucket


def test_select_merged_buckets():
    a, b = _mergeable(1, 1, [10, 20]), _mergeable(2, 2, [10, 20])
    assert select_merged_buckets([a, b], 4) == [a, b]
    c = _mergeable(3, 3, [10, 20])
    assert select_merged_buckets([a, b, c], 2) == [a, b]
    x, y, z = _mergeable(1, 1, [10, 100, 10]), _mergeable(2, 2, [10, 100, 10]), _mergeable(3, 3, [10, 50, 1000])
    assert select_merged_buckets([x, y, z], 2) == [y, z]  # the next unloaded segment's timestamp decides
    loaded = _mergeable(4, 4, [10])  # its last segment is already loaded: never merged
    assert select_merged_buckets([loaded, a], 4) == []


# --- 4.0 rules, snapshots, cursor properties ------------------------------------------------------


def test_a_held_position_is_not_due_again_on_the_4_0_line():
    """4.0 checks "already held" before the cutoff (reference §10.2); later Pulsar returns False here."""
    env = Env()
    tracker = env.tracker(100000, True, 5, 10, -1, 50)
    for i in range(1, 7):
        tracker.add_message(i, i, i * 1000)
    tracker.close()
    tracker2 = env.tracker(100000, True, 5, 10, -1, 50)
    assert tracker2.contains_message(1, 1)
    env.clock.now = 10000
    assert tracker2.add_message(1, 1, 1000)  # held by the recovered bucket: not delivered a second time now
    assert not tracker2.add_message(9, 9, 1000)


def test_sealed_bucket_snapshot_layout_and_cursor_property():
    env = Env()
    tracker = env.tracker(100000, True, 4, 100, 2, -1)
    times = [500, 150, 120, 300]
    for entry, at in enumerate(times):
        tracker.add_message(7, entry, at)
    assert tracker.add_message(8, 0, 999)  # a new ledger seals [7, 7]
    ((key, value),) = env.props.items()
    assert key == f"{DELAYED_BUCKET_KEY_PREFIX}_7_7" == bucket_key(7, 7)
    (sealed,) = env.events.of_kind("bucket_sealed")
    assert (sealed.start, sealed.end, sealed.messages, sealed.segments, sealed.snapshot) == (7, 7, 4, 3, int(value))
    snapshot = env.storage.ledger(int(value))
    assert snapshot.properties["component"] == "delayed-index-bucket"
    assert snapshot.properties["bucketKey"] == key
    assert snapshot.properties["topicName"] == "persistent://public/default/testDelay"
    assert snapshot.properties["cursorName"] == "my_test_cursor"
    # segments: by time step 100 and at most 2 indexes: [120, 150], [300], [500]
    assert [s.indexes() for s in snapshot.segments] == [[(120, 7, 2), (150, 7, 1)], [(300, 7, 3)], [(500, 7, 0)]]
    metas = snapshot.metadata.metadata_list
    assert [(m.min_schedule_timestamp, m.max_schedule_timestamp) for m in metas] == [(120, 150), (300, 300), (500, 500)]
    assert [{k: v.tolist() for k, v in m.delayed_index_bit_map.items()} for m in metas] == [
        {7: [1, 2]},
        {7: [3]},
        {7: [0]},
    ]
    assert snapshot.length == env.storage.get_bucket_snapshot_length(int(value)) > 0
    # segment 1 is in the shared queue; the mutable bucket holds the new ledger
    assert tracker.shared_queue() == [(120, 7, 2), (150, 7, 1)]
    assert tracker.mutable_bucket.size() == 1
    (state,) = tracker.buckets()
    assert (state.current_segment_entry_id, state.last_segment_entry_id, state.messages) == (1, 3, 4)
    assert state.first_schedule_timestamps == (120, 300, 500)


def test_segments_load_on_demand_and_the_bucket_is_deleted_when_delivered():
    env = Env()
    tracker = env.tracker(1, True, 3, 10, -1, -1)
    for entry in range(6):
        tracker.add_message(1, entry, 100 + 20 * entry)  # six segments of one index each
    tracker.add_message(2, 0, 10_000)  # seals [1, 1]
    assert tracker.shared_queue_size() == 1
    env.clock.now = 100
    assert tracker.get_scheduled_messages(10) == [(1, 0)]
    assert tracker.shared_queue_size() == 1  # segment 2 was loaded when segment 1's last index was taken
    assert [e.segment for e in env.events.of_kind("segment_loaded")] == [2]
    env.clock.now = 1000
    assert tracker.get_scheduled_messages(10) == [(1, e) for e in range(1, 6)]
    assert env.props == {} and len(env.storage) == 0
    (deleted,) = env.events.of_kind("bucket_deleted")
    assert (deleted.start, deleted.end, deleted.reason) == (1, 1, "all indexes delivered")
    assert tracker.number_of_delayed_messages() == 1


def test_recovery_deletes_a_bucket_whose_snapshot_is_gone():
    env = Env()
    tracker = env.tracker(100000, True, 2, 10, -1, -1)
    for ledger in (1, 2, 3):
        tracker.add_message(ledger, 0, 100 * ledger)
        tracker.add_message(ledger, 1, 100 * ledger + 50)
    keys = dict(env.props)
    assert len(keys) == 2
    tracker.close()
    gone = int(keys[bucket_key(1, 1)])
    env.storage.delete_bucket_snapshot(gone)
    tracker2 = env.tracker(100000, True, 2, 10, -1, -1)
    assert list(env.props) == [bucket_key(2, 2)]
    assert tracker2.number_of_delayed_messages() == 2
    assert [(e.start, e.skipped, e.messages) for e in env.events.of_kind("bucket_recovered")] == [(2, 0, 2)]


def test_a_ledger_inside_the_mutable_range_goes_to_the_shared_queue():
    env = Env()
    tracker = env.tracker(1000, False, 100, 10, -1, -1)
    tracker.add_message(3, 0, 5000)
    tracker.add_message(5, 0, 5000)
    assert tracker.add_message(4, 0, 6000)  # 4.0 refuses it (checkArgument); later releases queue it
    assert tracker.add_message(2, 0, 5000)  # before the range: straight to the shared queue
    assert tracker.shared_queue() == [(5000, 2, 0), (6000, 4, 0)]
    assert tracker.mutable_bucket.size() == 2 and tracker.contains_message(4, 0)
    assert tracker.add_message(4, 0, 6000)  # held already
    assert tracker.number_of_delayed_messages() == 4
    bulk = env.tracker(1000, False, 100, 10, -1, -1)
    assert bulk.add_messages([3, 5, 4], [0, 0, 0], [5000, 5000, 6000]).all()
    assert bulk.shared_queue() == [(6000, 4, 0)] and bulk.mutable_bucket.size() == 2


def test_delays_that_are_not_delays():
    env = Env()
    tracker = env.tracker(1000, False, 5, 10, -1, -1)
    env.clock.now = 50
    assert not tracker.add_message(1, 0, -1)  # no deliverAt
    assert not tracker.add_message(1, 1, 1050)  # within the tick: deliver now
    assert tracker.add_message(1, 2, 1051)
    assert tracker.number_of_delayed_messages() == 1


# --- factory and config ----------------------------------------------------------------------------


def test_factory_follows_the_broker_config():
    env = Env()
    default = new_delayed_delivery_tracker(env.scheduler, env.read_more_entries)
    assert type(default) is not BucketDelayedDeliveryTracker
    assert get_profile("4.0").broker_config()["delayedDeliveryTrackerFactoryClassName"] == IN_MEMORY_TRACKER_FACTORY
    conf = get_profile("4.0").broker_config(
        {
            "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
            "delayedDeliveryMinIndexCountPerBucket": 2,
            "delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds": 7,
        }
    )
    tracker = new_delayed_delivery_tracker(
        env.scheduler, env.read_more_entries, config=conf, snapshot_storage=env.storage, cursor_properties=env.props
    )
    assert isinstance(tracker, BucketDelayedDeliveryTracker)
    assert tracker.min_index_count_per_bucket == 2
    assert tracker.time_step_per_bucket_snapshot_segment_millis == 7000
    assert tracker.max_indexes_per_bucket_snapshot_segment == 5000 and tracker.max_num_buckets == -1


def test_factory_falls_back_to_in_memory_when_recovery_fails():
    env = Env()
    tracker = env.tracker(1000, False, 1, 10, -1, -1)
    tracker.add_message(1, 0, 5000)
    tracker.add_message(2, 0, 6000)
    tracker.close()
    assert len(env.props) == 1
    for _ in range(4):
        env.storage.inject_get_metadata_exception()
    with pytest.raises(RecoverDelayedDeliveryTrackerException):
        env.tracker(1000, False, 1, 10, -1, -1)
    for _ in range(4):
        env.storage.inject_get_metadata_exception()
    conf = get_profile("4.0").broker_config({"delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY})
    fallback = new_delayed_delivery_tracker(
        env.scheduler,
        env.read_more_entries,
        config=conf,
        snapshot_storage=env.storage,
        cursor_properties=env.props,
        events=env.events,
    )
    assert isinstance(fallback, InMemoryDelayedDeliveryTracker)
    assert not isinstance(fallback, BucketDelayedDeliveryTracker)
    assert len(env.props) == 1  # nothing stored was lost
    assert "recover" in env.events.of_kind("snapshot_failed")[-1].op


BAD_SETTINGS = [
    (dict(min_index_count_per_bucket=-1), IllegalArgumentException, "delayedDeliveryMinIndexCountPerBucket"),
    (dict(min_index_count_per_bucket="5"), TypeError, "delayedDeliveryMinIndexCountPerBucket"),
    (dict(time_step_per_bucket_snapshot_segment_millis=-10), IllegalArgumentException, "timeStep"),
    (dict(max_indexes_per_bucket_snapshot_segment=0), IllegalArgumentException, "MaxIndexesPerBucket"),
    (dict(max_indexes_per_bucket_snapshot_segment=-2), IllegalArgumentException, "MaxIndexesPerBucket"),
    (dict(max_num_buckets=-5), IllegalArgumentException, "delayedDeliveryMaxNumBuckets"),
    (dict(max_num_buckets=True), TypeError, "delayedDeliveryMaxNumBuckets"),
    (dict(tick_time_millis=-1), ValueError, "tickTimeMillis"),
    (dict(name="no-subscription"), IllegalArgumentException, "<topic> / <subscription>"),
]


@pytest.mark.parametrize("settings_, error, text", BAD_SETTINGS)
def test_invalid_settings_fail_clearly(settings_, error, text):
    with pytest.raises(error, match=text):
        BucketDelayedDeliveryTracker(Scheduler(), lambda: None, **settings_)


@pytest.mark.parametrize(
    "overrides, text",
    [
        ({"delayedDeliveryTrackerFactoryClassName": "org.example.MyTrackerFactory"}, "MyTrackerFactory"),
        (
            {
                "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
                "delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds": -1,
            },
            "SegmentSeconds",
        ),
        (
            {
                "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
                "delayedDeliveryMaxIndexesPerBucketSnapshotSegment": 0,
            },
            "MaxIndexesPerBucket",
        ),
    ],
)
def test_invalid_broker_config_fails_clearly(overrides, text):
    conf = get_profile("4.0").broker_config(overrides)
    with pytest.raises(IllegalArgumentException, match=text):
        new_delayed_delivery_tracker(Scheduler(), lambda: None, config=conf)


def test_unknown_broker_setting_is_named():
    with pytest.raises(ValueError, match="delayedDeliveryMaxNumBucket"):
        get_profile("4.0").broker_config({"delayedDeliveryMaxNumBucket": 3})


def test_storage_injection_rejects_other_errors():
    with pytest.raises(TypeError):
        InMemoryBucketSnapshotStorage().inject_create_exception(RuntimeError("x"))  # type: ignore[arg-type]
    storage = InMemoryBucketSnapshotStorage()
    storage.available = False
    with pytest.raises(BucketSnapshotPersistenceException, match="Bookie handle is not available"):
        storage.get_bucket_snapshot_metadata(1)


def test_bulk_add_rejects_ragged_columns():
    with pytest.raises(IllegalArgumentException, match="as many"):
        Env().tracker(1, False, 5, 10, -1, -1).add_messages([1, 2], [1], [5, 6])


# --- memory estimates --------------------------------------------------------------------------------


def test_priority_queue_capacity_follows_segmented_long_array_growth():
    assert mem.bytes_capacity(0) == mem.bytes_capacity(16) == 16 * 3 * 8  # DEFAULT_INITIAL_CAPACITY tuples
    assert mem.bytes_capacity(17) == 2 * 16 * 3 * 8  # doubled while <= 256 longs
    assert mem.bytes_capacity(10**7) >= 24 * 10**7
    assert mem.bytes_capacity(10**7) % (2 * 1024 * 1024 * 8) == 0  # whole 16 MB segments past the first


def test_roaring_costs_by_container_kind():
    dense = np.arange(50_000)
    overhead = mem.ROARING_BITMAP_BYTES + mem.ROARING_CONTAINER_OVERHEAD
    assert mem.roaring_bytes(dense, run_optimized=True) == overhead + 4  # one run
    assert mem.roaring_bytes(dense) == overhead + mem.BITMAP_CONTAINER_BYTES
    sparse = np.arange(0, 20, 2)
    assert mem.roaring_bytes(sparse, run_optimized=True) == overhead + 2 * 10  # array beats ten runs
    two_containers = np.array([1, 70_000])
    assert mem.roaring_bytes(two_containers) == mem.ROARING_BITMAP_BYTES + 2 * (mem.ROARING_CONTAINER_OVERHEAD + 2)
    assert roaring_serialized_size(dense) < roaring_serialized_size(np.arange(0, 100_000, 2))


def test_memory_estimates_of_both_trackers():
    n = 20_000
    env = Env()
    bucket = env.tracker(1000, False, 2_000, 300_000, 5000, -1)
    in_memory = InMemoryDelayedDeliveryTracker(Scheduler(), lambda: None, profile="4.0", clock=env.clock)
    rng = np.random.default_rng(3)
    times = rng.integers(60_000, 86_400_000, n)
    for i in range(n):
        bucket.add_message(1 + i // 1000, i % 1000, int(times[i]))
        in_memory.add_message(1 + i // 1000, i % 1000, int(times[i]))
    assert in_memory.memory_bytes() == mem.bytes_capacity(n)
    breakdown = bucket.memory_breakdown()
    assert set(breakdown) == {
        "mutable_bucket_queue",
        "mutable_bucket_bitmap",
        "shared_queue",
        "bucket_bitmaps",
        "segment_last_index_table",
        "buckets",
    }
    assert bucket.memory_bytes() == sum(breakdown.values())
    assert breakdown["shared_queue"] == mem.bytes_capacity(bucket.shared_queue_size())
    assert bucket.buffer_memory_usage() == breakdown["mutable_bucket_queue"] + breakdown["shared_queue"]
    assert bucket.memory_bytes() < in_memory.memory_bytes() / 2
    assert 0 < env.storage.total_length()
    bitmap = InMemoryDelayedDeliveryTracker(Scheduler(), lambda: None, profile="4.1", clock=env.clock)
    for i in range(100):
        bitmap.add_message(1, i, 5000)
    assert bitmap.memory_bytes() > mem.roaring_bytes(np.arange(100))


# --- bulk add = scalar add ------------------------------------------------------------------------


def _state(env: Env, tracker: BucketDelayedDeliveryTracker):
    m = tracker.mutable_bucket
    stored = [(lid, [s.indexes() for s in env.storage.ledger(lid).segments]) for lid in env.storage.ledger_ids()]
    return (
        tracker.number_of_delayed_messages(),
        tracker.buckets(),
        tracker.shared_queue(),
        [c.tolist() for c in m.columns()],
        {k: sorted(v) for k, v in m.bitmap.items()},
        m.start_ledger_id,
        m.end_ledger_id,
        dict(env.props),
        stored,
        tracker.timer,
        env.events.to_records(),
    )


batches = st.lists(
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 6), st.integers(-5, 300)), max_size=12), max_size=8
)


@SLOW
@given(
    batches=batches,
    config=st.tuples(
        st.sampled_from([1, 20]),
        st.booleans(),
        st.integers(0, 4),
        st.sampled_from([0, 10, 50]),
        st.sampled_from([-1, 1, 2]),
        st.sampled_from([-1, 1, 2]),
    ),
    monotone=st.booleans(),
)
def test_bulk_add_matches_scalar_add(batches, config, monotone):
    scalar_env, bulk_env = Env(), Env()
    scalar, bulk = scalar_env.tracker(*config), bulk_env.tracker(*config)
    for step, batch in enumerate(batches):
        if monotone:
            batch = sorted(batch)
        scalar_env.clock.now = bulk_env.clock.now = 10 * step
        scalar_env.scheduler.run_until(10 * step)
        bulk_env.scheduler.run_until(10 * step)
        ledgers = [b[0] for b in batch]
        entries = [b[1] for b in batch]
        times = [b[2] + 10 * step for b in batch]
        expected, scalar_error = [], None
        try:
            for ledger, entry, at in zip(ledgers, entries, times):
                expected.append(scalar.add_message(ledger, entry, at))
        except IllegalArgumentException as err:
            scalar_error = str(err)
        try:
            got, bulk_error = bulk.add_messages(ledgers, entries, times).tolist(), None
        except IllegalArgumentException as err:
            got, bulk_error = None, str(err)
        assert bulk_error == scalar_error
        if scalar_error is None:
            assert got == expected
        assert _state(bulk_env, bulk) == _state(scalar_env, scalar)
        assert bulk.get_scheduled_messages(3) == scalar.get_scheduled_messages(3)
    for tracker_env, tracker in ((scalar_env, scalar), (bulk_env, bulk)):
        tracker_env.clock.now = 10_000
    assert drain_all(bulk, 7) == drain_all(scalar, 7)


# --- properties across restarts, and against the in-memory tracker --------------------------------


@dataclass(frozen=True)
class Config:
    tick: int
    strict: bool
    min_index: int
    step: int
    max_indexes: int
    max_buckets: int


class Broker:
    """A dispatcher and its cursor around one tracker, as the broker drives it.

    Messages are published in position order and offered to the tracker as the cursor reads them; what the
    tracker releases (or refuses as due) is delivered and acknowledged at once. A restart keeps the snapshot
    storage and the cursor properties, builds a new tracker (recovery), and re-reads every unacknowledged
    position from mark-delete, as the cursor does. Delivery skips positions already acknowledged, as the
    dispatcher's replay read does; a recovered segment may hold some (released before the restart).
    """

    def __init__(self, kind: str, config: Config) -> None:
        self.kind, self.config = kind, config
        self.scheduler = Scheduler()
        self.storage = InMemoryBucketSnapshotStorage()
        self.props: dict[str, str] = {}
        self.published: list[tuple[int, int, int]] = []
        self.acked: set[tuple[int, int]] = set()
        self.released: dict[tuple[int, int], int] = {}
        self.generation: set[tuple[int, int]] = set()
        self.ledger, self.entry = 1, 0
        self.tracker = self._new_tracker()

    def _new_tracker(self):
        c = self.config
        if self.kind == "bucket":
            return BucketDelayedDeliveryTracker(
                self.scheduler,
                self.drain,
                tick_time_millis=c.tick,
                is_delayed_delivery_deliver_at_time_strict=c.strict,
                snapshot_storage=self.storage,
                cursor_properties=self.props,
                min_index_count_per_bucket=c.min_index,
                time_step_per_bucket_snapshot_segment_millis=c.step,
                max_indexes_per_bucket_snapshot_segment=c.max_indexes,
                max_num_buckets=c.max_buckets,
            )
        return InMemoryDelayedDeliveryTracker(
            self.scheduler,
            self.drain,
            profile=self.kind,
            tick_time_millis=c.tick,
            is_delayed_delivery_deliver_at_time_strict=c.strict,
            fixed_delay_detection_lookahead=0,
        )

    def deliver(self, pos: tuple[int, int]) -> None:
        assert pos not in self.generation, f"{pos} released twice by one {self.kind} tracker"
        self.generation.add(pos)
        if pos not in self.acked:
            self.acked.add(pos)
            self.released[pos] = self.scheduler.now()

    def offer(self, ledger: int, entry: int, deliver_at: int) -> None:
        if not self.tracker.add_message(ledger, entry, deliver_at):
            self.deliver((ledger, entry))

    def drain(self) -> None:
        while self.tracker.has_message_available():
            batch = self.tracker.get_scheduled_messages(3)
            if not batch:
                break
            for pos in batch:
                self.deliver(pos)

    def publish(self, delays: list[int], roll: bool) -> None:
        if roll:
            self.ledger, self.entry = self.ledger + 1, 0
        for delay in delays:
            at = self.scheduler.now() + delay
            self.published.append((self.ledger, self.entry, at))
            self.offer(self.ledger, self.entry, at)
            self.entry += 1
        self.drain()

    def advance(self, ms: int) -> None:
        self.scheduler.advance(ms)

    def restart(self) -> None:
        self.tracker.close()
        self.generation = set()
        self.tracker = self._new_tracker()
        for ledger, entry, at in self.published:
            if (ledger, entry) not in self.acked:
                self.offer(ledger, entry, at)
        self.drain()

    def finish(self) -> None:
        last = max((at for _, _, at in self.published), default=0)
        self.scheduler.run_until(max(self.scheduler.now(), last) + self.config.tick + 1)
        self.drain()


def run(kind: str, config: Config, ops: list[tuple]) -> Broker:
    broker = Broker(kind, config)
    for op in ops:
        if op[0] == "publish":
            broker.publish(op[1], op[2])
        elif op[0] == "advance":
            broker.advance(op[1])
        else:
            broker.restart()
    broker.finish()
    return broker


configs = st.builds(
    Config,
    tick=st.sampled_from([1, 10, 50]),
    strict=st.booleans(),
    min_index=st.sampled_from([0, 1, 2, 5]),
    step=st.sampled_from([0, 1, 10, 100]),
    max_indexes=st.sampled_from([-1, 1, 3]),
    max_buckets=st.sampled_from([-1, 1, 2, 3]),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.lists(st.integers(-5, 1500), min_size=1, max_size=8), st.booleans()),
        st.tuples(st.just("publish"), st.lists(st.integers(-5, 1500), min_size=1, max_size=8), st.booleans()),
        st.tuples(st.just("advance"), st.integers(0, 200)),
        st.tuples(st.just("restart")),
    ),
    max_size=30,
)


def _check_released(broker: Broker, slack: int) -> None:
    """Every message released exactly once, none before deliverAt beyond ``slack`` ms."""
    assert set(broker.released) == {(ledger, entry) for ledger, entry, _ in broker.published}
    for ledger, entry, at in broker.published:
        assert broker.released[(ledger, entry)] >= at - slack, (ledger, entry, at)


@SLOW
@given(config=configs, ops=operations)
def test_bucket_tracker_releases_every_message_once_and_never_early_across_restarts(config, ops):
    broker = run("bucket", config, ops)
    _check_released(broker, 0 if config.strict else config.tick)  # the cutoff is now + tick unless strict
    assert broker.tracker.number_of_delayed_messages() == 0


@SLOW
@given(config=configs, ops=operations)
def test_bucket_and_in_memory_trackers_release_the_same_messages(config, ops):
    bucket = run("bucket", config, ops)
    in_memory = run("4.0", config, ops)
    assert set(bucket.released) == set(in_memory.released)
    if not any(op[0] == "restart" for op in ops):
        # same cutoff, same timer, same (deliverAt, ledger, entry) order: the same moment for each message
        assert bucket.released == in_memory.released
    bitmap = run("4.1", config, ops)  # 4.1 trims deliverAt down to 2^floor(log2 tick) ms
    assert set(bitmap.released) == set(bucket.released)
    slack = (0 if config.strict else config.tick) + (1 << timestamp_precision_bit_cnt(config.tick)) - 1
    _check_released(bitmap, slack)


def test_a_restart_loses_the_mutable_bucket_and_the_cursor_re_adds_it():
    config = Config(tick=1, strict=True, min_index=2, step=10, max_indexes=-1, max_buckets=-1)
    broker = Broker("bucket", config)
    broker.publish([100, 200], roll=False)
    broker.publish([300, 400], roll=True)  # seals ledger 1; ledger 2 stays in the mutable bucket
    broker.restart()
    assert broker.tracker.number_of_delayed_messages() == 4  # 2 recovered + 2 re-added by the cursor
    assert broker.tracker.mutable_bucket.size() == 2
    broker.finish()
    _check_released(broker, 0)


@pytest.mark.parametrize("factory", [BUCKET_TRACKER_FACTORY, None])
def test_clear_backlog_clears_the_delayed_tracker_and_deletes_bucket_snapshots(factory):
    """`PersistentSubscription.clearBacklog` (`topics clear-backlog` / `skipAllMessages`) calls the dispatcher's
    `clearDelayedMessages()`: nothing stays held, and a bucket tracker deletes each snapshot and cursor property."""
    from datetime import timedelta

    import pulsarlab as pl

    conf = {"managedLedgerMaxEntriesPerLedger": 4}
    if factory is not None:
        conf |= {"delayedDeliveryTrackerFactoryClassName": factory, "delayedDeliveryMinIndexCountPerBucket": 4}
    lab = pl.Lab(version="4.0", seed=1, broker_config=conf)
    client = lab.client()
    client.subscribe("reminders", "workers", consumer_type=pl.ConsumerType.Shared, consumer_name="w1")
    producer = client.create_producer("reminders")
    for i in range(10):
        producer.send(f"m{i}".encode(), deliver_after=timedelta(seconds=30 + i))
    cursor = lab.service.topics["persistent://public/default/reminders"].ledger.cursors["workers"]
    stored = lab.service.bucket_snapshot_storage.ledger_ids()
    assert lab.admin.topics.stats("reminders")["subscriptions"]["workers"]["msgDelayed"] == 10
    assert len(stored) == (2 if factory else 0) and len(cursor.cursor_properties) == len(stored)
    lab.admin.topics.skip_all_messages("reminders", "workers")
    stats = lab.admin.topics.stats("reminders")["subscriptions"]["workers"]
    assert (stats["msgDelayed"], stats["msgBacklog"]) == (0, 0)
    assert lab.service.bucket_snapshot_storage.ledger_ids() == [] and not cursor.cursor_properties
    deleted = [e for e in lab.events.of_kind("bucket_deleted")]
    assert len(deleted) == len(stored) and all("(cleared)" in e.explain() for e in deleted)
    lab.advance(60_000)  # nothing held comes out later either
    assert lab.admin.topics.stats("reminders")["subscriptions"]["workers"]["msgOutCounter"] == 0
