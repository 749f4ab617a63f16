"""Delayed delivery wired into the broker (reference §10): which subscriptions hold messages back, the cutoff and
timer rules seen end to end, the tracker the broker config picks, due messages in the replay set without a sticky
hash, the fixed-delay pause, the 4.0 maximum delay, stats, bad settings, and the bucket tracker's snapshots in
the cursor properties."""

from __future__ import annotations

from datetime import timedelta

import pytest

import pulsarlab as pl
from pulsarlab.broker.delayed import jvm_memory as mem
from pulsarlab.broker.delayed.bucket.snapshot import InMemoryBucketSnapshotStorage
from pulsarlab.broker.delayed.bucket.tracker import (
    BUCKET_TRACKER_FACTORY,
    IN_MEMORY_TRACKER_FACTORY,
    BucketDelayedDeliveryTracker,
    bucket_key,
)
from pulsarlab.broker.delayed.dispatch import BUCKET_TOTAL, INDEX_LOADED, SNAPSHOT_SIZE_BYTES
from pulsarlab.broker.delayed.factory import DelayedDeliveryTrackerLoadException
from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker
from pulsarlab.client.producer import NotAllowedException
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.snapshot.recorder import Recorder

TOPIC = "persistent://public/default/t"
TYPES = {
    "Exclusive": pl.ConsumerType.Exclusive,
    "Failover": pl.ConsumerType.Failover,
    "Shared": pl.ConsumerType.Shared,
    "Key_Shared": pl.ConsumerType.KeyShared,
}


def make(version: str = "4.0", ctype: pl.ConsumerType = pl.ConsumerType.Shared, **conf):
    lab = pl.Lab(version=version, seed=1, broker_config=conf)
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c1", lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    return lab, consumer, producer


def received(lab: pl.Lab, consumer, end: int) -> list[tuple[int, str]]:
    """(virtual time, payload) of every message received until ``end``, each acknowledged at once."""
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=max(end - lab.now(), 0))
        except pl.Timeout:
            return out
        out.append((lab.now(), msg.data().decode()))
        consumer.acknowledge(msg)


def dispatcher(lab: pl.Lab, sub: str = "s", topic: str = TOPIC):
    return lab.service.topics[topic].subscriptions[sub].dispatcher


def sub_stats(lab: pl.Lab, sub: str = "s") -> dict:
    return lab.admin.topics.stats("t")["subscriptions"][sub]


# --- who holds messages back ------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", list(TYPES))
def test_only_shared_and_key_shared_hold_delayed_messages_back(type_name):
    lab, consumer, producer = make(ctype=TYPES[type_name], activeConsumerFailoverDelayTimeMillis=0)
    producer.send(b"later", deliver_after=timedelta(seconds=30))
    producer.send(b"now")
    got = received(lab, consumer, 60_000)
    if type_name in ("Exclusive", "Failover"):  # only PersistentDispatcherMultipleConsumers tracks delays
        assert got == [(0, "later"), (0, "now")]
        assert sub_stats(lab)["msgDelayed"] == 0
    else:
        assert got == [(0, "now"), (30_000, "later")]


def test_deliver_at_and_deliver_after_set_the_same_time():
    lab, consumer, producer = make()
    lab.advance(1000)
    producer.send(b"at", deliver_at=6000)
    producer.send(b"after", deliver_after=timedelta(seconds=5))
    stored = lab.service.topics[TOPIC].ledger.entries_of(3)
    assert [e.metadata.deliver_at_time for e in stored] == [6000, 6000]
    assert received(lab, consumer, 10_000) == [(6000, "at"), (6000, "after")]


def test_delayed_delivery_disabled_sends_at_once():
    lab, consumer, producer = make(delayedDeliveryEnabled=False)
    producer.send(b"later", deliver_after=timedelta(hours=1))
    assert received(lab, consumer, 10) == [(0, "later")]
    assert dispatcher(lab).delayed.tracker is None


# --- cutoff and timer, end to end (reference §10, §10.1; golden README §7) ------------------------------


DELAYS = (500, 1500, 2200, 3000, 5000)


@pytest.mark.parametrize("version", ["3.0", "4.0"])
def test_cutoff_and_timer_rules_end_to_end(version):
    lab, consumer, producer = make(version)
    for d in DELAYS:
        producer.send(str(d).encode(), deliver_after=timedelta(milliseconds=d))
    # Not strict: cutoff = now + tick (1000): 500 is due at once. The timer fires at the next deliverAt (1500) and
    # that read takes everything up to 2500; then at max(3000 - 1500, 1500 + tick - 1500) = +1500, then at 5000.
    assert received(lab, consumer, 10_000) == [
        (0, "500"),
        (1500, "1500"),
        (1500, "2200"),
        (3000, "3000"),
        (5000, "5000"),
    ]


@pytest.mark.parametrize("version", ["3.0", "4.0"])
def test_strict_mode_never_delivers_early_and_the_timer_waits_a_tick(version):
    lab, consumer, producer = make(version, isDelayedDeliveryDeliverAtTimeStrict=True)
    for d in DELAYS:
        producer.send(str(d).encode(), deliver_after=timedelta(milliseconds=d))
    got = received(lab, consumer, 10_000)
    assert all(t >= d for t, d in ((t, int(v)) for t, v in got))
    # a timer fires no sooner than lastTickRun + tick: 500 -> 1000, 1500 -> 2000
    assert got[:2] == [(1000, "500"), (2000, "1500")]


@pytest.mark.parametrize("strict", [False, True])
def test_4_1_time_buckets_round_down_but_replays_check_the_exact_time(strict):
    lab, consumer, producer = make("4.1", isDelayedDeliveryDeliverAtTimeStrict=strict)
    for d in DELAYS:
        producer.send(str(d).encode(), deliver_after=timedelta(milliseconds=d))
    got = received(lab, consumer, 10_000)
    assert sorted(v for _, v in got) == sorted(str(d) for d in DELAYS)
    precision = 1 << 9  # 2^floor(log2 1000)
    slack = 0 if strict else 1000
    assert all(t >= int(v) - slack for t, v in got)
    assert got[1] == ((1500 & -precision) if not strict else 1500, "1500")
    if strict:  # released from bucket 0 at t = 0, held again on replay until its own 500 ms
        assert [e.fields["until"] for e in lab.events.of_kind("delayed_requeued")][:1] == [500]


# --- the tracker the broker config picks -------------------------------------------------------------


@pytest.mark.parametrize(
    "version, form", [("3.0", "priority queue"), ("4.0", "priority queue"), ("4.1", "time bitmap")]
)
def test_the_default_factory_builds_the_profiles_in_memory_tracker(version, form):
    lab, consumer, producer = make(version)
    assert dispatcher(lab).delayed.tracker is None  # built on the first delayed message
    producer.send(b"x", deliver_after=timedelta(seconds=10))
    tracker = dispatcher(lab).delayed.tracker
    assert type(tracker).__mro__[1] is InMemoryDelayedDeliveryTracker
    created = lab.events.of_kind("delayed_tracker_created")
    assert [e.fields["tracker"] for e in created] == [f"InMemoryDelayedDeliveryTracker ({form})"]
    assert created[0].fields["factory"] == "InMemoryDelayedDeliveryTrackerFactory"


def test_the_bucket_factory_builds_bucket_trackers_with_broker_conf_settings():
    lab, consumer, producer = make(
        delayedDeliveryTrackerFactoryClassName=BUCKET_TRACKER_FACTORY,
        delayedDeliveryMinIndexCountPerBucket=3,
        delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds=7,
        delayedDeliveryMaxIndexesPerBucketSnapshotSegment=2,
        delayedDeliveryMaxNumBuckets=4,
    )
    producer.send(b"x", deliver_after=timedelta(seconds=10))
    tracker = dispatcher(lab).delayed.tracker
    assert isinstance(tracker, BucketDelayedDeliveryTracker)
    assert (
        tracker.min_index_count_per_bucket,
        tracker.time_step_per_bucket_snapshot_segment_millis,
        tracker.max_indexes_per_bucket_snapshot_segment,
        tracker.max_num_buckets,
    ) == (3, 7000, 2, 4)
    assert tracker.name == f"{TOPIC} / s"
    assert tracker.snapshot_storage is lab.service.bucket_snapshot_storage


def test_sealed_buckets_are_snapshot_ledgers_named_by_cursor_properties():
    lab, consumer, producer = make(
        delayedDeliveryTrackerFactoryClassName=BUCKET_TRACKER_FACTORY,
        delayedDeliveryMinIndexCountPerBucket=2,
        managedLedgerMaxEntriesPerLedger=2,
    )
    for i in range(5):
        producer.send(f"m{i}".encode(), deliver_after=timedelta(seconds=100 + i))
    cursor = lab.service.topics[TOPIC].ledger.cursors["s"]
    storage = lab.service.bucket_snapshot_storage
    keys = {k: v for k, v in cursor.cursor_properties.items() if k.startswith("#pulsar.internal.delayed.bucket")}
    sealed = lab.events.of_kind("bucket_sealed")
    assert [(e.fields["start"], e.fields["end"]) for e in sealed] == [(3, 3), (4, 4)]
    assert keys == {
        bucket_key(3, 3): str(sealed[0].fields["snapshot"]),
        bucket_key(4, 4): str(sealed[1].fields["snapshot"]),
    }
    ledger = storage.ledger(int(keys[bucket_key(3, 3)]))
    assert dict(ledger.properties)["cursorName"] == "s" and dict(ledger.properties)["topicName"] == TOPIC
    # the snapshot ledgers share BookKeeper's id space with the topic's ledgers
    topic_ledgers = [info.ledger_id for info in lab.service.topics[TOPIC].ledger.ledgers]
    assert not set(topic_ledgers) & set(storage.ledger_ids())
    assert "#pulsar.internal" not in str(lab.admin.topics.stats_internal("t")["cursors"]["s"]["properties"])
    assert [v for _, v in received(lab, consumer, 200_000)] == [f"m{i}" for i in range(5)]
    assert not any(k.startswith("#pulsar.internal.delayed") for k in cursor.cursor_properties)
    assert len(storage) == 0  # every bucket delivered and deleted


def test_user_cursor_properties_leave_the_bucket_keys_alone():
    lab, consumer, producer = make(
        delayedDeliveryTrackerFactoryClassName=BUCKET_TRACKER_FACTORY,
        delayedDeliveryMinIndexCountPerBucket=1,
        managedLedgerMaxEntriesPerLedger=1,
    )
    producer.send(b"a", deliver_after=timedelta(seconds=100))
    producer.send(b"b", deliver_after=timedelta(seconds=101))
    cursor = lab.service.topics[TOPIC].ledger.cursors["s"]
    cursor.set_cursor_properties({"owner": "me"})
    assert set(cursor.cursor_properties) == {"owner", bucket_key(3, 3)}
    assert dispatcher(lab).delayed.tracker.cursor_properties is cursor.cursor_properties


# --- the replay set, Key_Shared ------------------------------------------------------------------------


def test_due_messages_join_the_key_shared_replay_set_without_a_sticky_hash():
    lab = pl.Lab(version="4.0", seed=1)
    rec = Recorder(lab, every={"delayed_released"})
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c1")
    producer = client.create_producer("t")
    producer.send(b"k-later", partition_key="k", deliver_after=timedelta(seconds=5))
    producer.send(b"k-now", partition_key="k")
    lab.advance(5000)
    frame = rec[-1]
    assert frame.kind == "delayed_released"
    replay = frame.snapshot.subscription().dispatcher.replay
    assert [(r.ledger, r.entry, r.hash) for r in replay] == [(3, 0, None)]
    # the earlier message of key k was overtaken by a later one: delayed messages do not keep key order
    assert [consumer.receive(0).data() for _ in range(2)] == [b"k-now", b"k-later"]


@pytest.mark.parametrize("version", ["3.0", "4.0"])
def test_key_shared_delivers_every_delayed_message_to_the_owner_of_its_key(version):
    lab = pl.Lab(version=version, seed=2)
    client = lab.client()
    consumers = [
        client.subscribe(
            "t", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name=f"c{i}", receiver_queue_size=3
        )
        for i in range(3)
    ]
    producer = client.create_producer("t")
    for i in range(30):
        producer.send(f"{i}".encode(), partition_key=f"k{i % 6}", deliver_after=timedelta(milliseconds=100 * (i % 4)))
    owner: dict[str, str] = {}
    seen = []
    lab.advance(2000)
    for _ in range(20):
        for c in consumers:
            while c.receiver_queue:
                m = c.receive(0)
                key = m.partition_key()
                assert owner.setdefault(key, c.consumer_name()) == c.consumer_name()
                seen.append(m.data())
                c.acknowledge(m)
        lab.advance(100)
    assert sorted(seen) == sorted(f"{i}".encode() for i in range(30))


# --- fixed-delay look-ahead (reference §10.1) ------------------------------------------------------------


def test_fixed_delays_pause_every_read_until_one_is_due():
    lab, consumer, producer = make(delayedDeliveryFixedDelayDetectionLookahead=3)
    for i in range(3):
        producer.send(f"d{i}".encode(), deliver_after=timedelta(seconds=10))
        lab.advance(10)
    producer.send(b"plain")  # stored, but reads are paused: 3 fixed-delay messages wait and none is due
    paused = lab.events.of_kind("delayed_paused")
    assert [e.fields["paused"] for e in paused] == [True]
    got = received(lab, consumer, 20_000)
    # the timer fires at the first deliverAt; its read takes d0..d2 (due by now + tick), then the read goes on
    assert got == [(10_000, "d0"), (10_000, "d1"), (10_000, "d2"), (10_000, "plain")]
    assert [e.fields["paused"] for e in lab.events.of_kind("delayed_paused")] == [True, False]


def test_mixed_delays_do_not_pause():
    lab, consumer, producer = make(delayedDeliveryFixedDelayDetectionLookahead=3)
    for d in (10, 20, 5):  # 5 s is more than a tick earlier than the highest deliverAt seen
        producer.send(str(d).encode(), deliver_after=timedelta(seconds=d))
    producer.send(b"plain")
    assert received(lab, consumer, 1) == [(0, "plain")]
    assert not lab.events.of_kind("delayed_paused")


# --- limits and bad settings ------------------------------------------------------------------------------


def test_max_delay_refuses_a_longer_delay_with_pulsars_text():
    lab, consumer, producer = make("4.0", delayedDeliveryMaxDelayInMillis=10_000)
    producer.send(b"ok", deliver_after=timedelta(seconds=10))  # exactly the limit is allowed
    with pytest.raises(NotAllowedException, match=r"^Exceeds max allowed delivery delay of 10000 milliseconds$") as err:
        producer.send(b"too far", deliver_after=timedelta(seconds=10, milliseconds=1))
    assert err.value.java_class.endswith("PulsarClientException$NotAllowedException")
    results = []
    producer.send_async(b"too far", lambda res, mid: results.append((res, mid)), deliver_at=20_001)
    assert results == [("NotAllowedError", None)]
    assert lab.service.topics[TOPIC].ledger.number_of_entries() == 1
    refused = lab.events.of_kind("delivery_delay_refused")
    assert [e.fields["deliver_at"] for e in refused] == [10_001, 20_001]
    assert received(lab, consumer, 20_000) == [(10_000, "ok")]


def test_max_delay_is_a_4_0_setting():
    with pytest.raises(IllegalArgumentException, match="4.0"):
        pl.Lab(version="3.0", broker_config={"delayedDeliveryMaxDelayInMillis": 1000})
    pl.Lab(version="3.0", broker_config={"delayedDeliveryMaxDelayInMillis": 0})


def test_an_unknown_factory_class_stops_the_broker():
    with pytest.raises(DelayedDeliveryTrackerLoadException) as err:
        pl.Lab(broker_config={"delayedDeliveryTrackerFactoryClassName": "org.example.MyFactory"})
    assert str(err.value) == "java.lang.ClassNotFoundException: org.example.MyFactory"
    assert err.value.java_class == "java.io.IOException"


@pytest.mark.parametrize(
    "setting, value, error, text",
    [
        ("delayedDeliveryTickTimeMillis", -1, IllegalArgumentException, "delayedDeliveryTickTimeMillis must be >= 0"),
        ("delayedDeliveryTickTimeMillis", 1.5, TypeError, "delayedDeliveryTickTimeMillis must be an integer"),
        ("delayedDeliveryEnabled", "yes", TypeError, "delayedDeliveryEnabled must be true or false"),
        ("isDelayedDeliveryDeliverAtTimeStrict", 1, TypeError, "isDelayedDeliveryDeliverAtTimeStrict"),
        ("delayedDeliveryMaxDelayInMillis", -5, IllegalArgumentException, "delayedDeliveryMaxDelayInMillis"),
        ("delayedDeliveryFixedDelayDetectionLookahead", None, TypeError, "delayedDeliveryFixedDelayDetectionLookahead"),
        ("delayedDeliveryTrackerFactoryClassName", 3, TypeError, "class name"),
    ],
)
def test_bad_delayed_settings_fail_when_the_lab_starts(setting, value, error, text):
    with pytest.raises(error, match=text):
        pl.Lab(broker_config={setting: value})


@pytest.mark.parametrize(
    "setting, value, text",
    [
        ("delayedDeliveryMinIndexCountPerBucket", -1, "delayedDeliveryMinIndexCountPerBucket must be >= 0"),
        ("delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds", -1, "SegmentSeconds must be >= 0"),
        ("delayedDeliveryMaxIndexesPerBucketSnapshotSegment", 0, "-1 \\(no limit\\) or at least 1"),
        ("delayedDeliveryMaxNumBuckets", -2, "delayedDeliveryMaxNumBuckets must be >= -1"),
    ],
)
def test_bad_bucket_settings_fail_when_the_lab_starts(setting, value, text):
    with pytest.raises(IllegalArgumentException, match=text):
        pl.Lab(broker_config={"delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY, setting: value})


def test_bad_delays_fail_on_the_client():
    lab, consumer, producer = make()
    with pytest.raises(TypeError, match="deliver_after must be a datetime.timedelta"):
        producer.send(b"x", deliver_after=5)
    with pytest.raises(TypeError, match="deliver_at must be an int"):
        producer.send(b"x", deliver_at=1.5)


# --- stats (reference §11) ---------------------------------------------------------------------------------


def test_in_memory_stats_count_the_delayed_messages():
    lab, consumer, producer = make(managedLedgerMaxEntriesPerLedger=100)
    for i in range(20):
        producer.send(f"d{i}".encode(), deliver_after=timedelta(seconds=60))
    producer.send(b"now")
    s = sub_stats(lab)
    assert s["msgDelayed"] == 20
    assert s["msgBacklog"] == 21 and s["msgBacklogNoDelayed"] == 1
    assert s["delayedMessageIndexSizeInBytes"] == mem.bytes_capacity(20)  # TripleLongPriorityQueue.bytesCapacity
    assert s["bucketDelayedIndexStats"] == {}
    topic = lab.admin.topics.stats("t")
    assert topic["delayedMessageIndexSizeInBytes"] == s["delayedMessageIndexSizeInBytes"]
    received(lab, consumer, 120_000)
    after = sub_stats(lab)
    assert (after["msgDelayed"], after["msgBacklog"], after["msgBacklogNoDelayed"]) == (0, 0, 0)


def test_bucket_stats_show_the_gauges_of_genTopicMetricMap():
    lab, consumer, producer = make(
        delayedDeliveryTrackerFactoryClassName=BUCKET_TRACKER_FACTORY,
        delayedDeliveryMinIndexCountPerBucket=3,
        managedLedgerMaxEntriesPerLedger=3,
    )
    for i in range(7):
        producer.send(f"d{i}".encode(), deliver_after=timedelta(seconds=60 + i))
    s = sub_stats(lab)
    tracker = dispatcher(lab).delayed.tracker
    stored = lab.service.bucket_snapshot_storage.total_length()
    assert s["msgDelayed"] == 7
    assert s["delayedMessageIndexSizeInBytes"] == tracker.buffer_memory_usage()
    gauges = {k: v["value"] for k, v in s["bucketDelayedIndexStats"].items()}
    assert gauges == {
        BUCKET_TOTAL: 3.0,
        INDEX_LOADED: float(tracker.shared_queue_size() + 1),
        SNAPSHOT_SIZE_BYTES: float(stored),
    }
    assert all(v["name"] == k and v["labelsAndValues"] is None for k, v in s["bucketDelayedIndexStats"].items())
    assert lab.admin.topics.stats("t")["bucketDelayedIndexStats"] == s["bucketDelayedIndexStats"]


def test_unsubscribing_deletes_the_stored_buckets():
    lab, consumer, producer = make(
        delayedDeliveryTrackerFactoryClassName=BUCKET_TRACKER_FACTORY,
        delayedDeliveryMinIndexCountPerBucket=1,
        managedLedgerMaxEntriesPerLedger=1,
    )
    for i in range(3):
        producer.send(f"d{i}".encode(), deliver_after=timedelta(seconds=60))
    assert len(lab.service.bucket_snapshot_storage) == 2
    consumer.unsubscribe()
    assert len(lab.service.bucket_snapshot_storage) == 0


def test_the_storage_is_the_lab_wide_bookkeeper_stand_in():
    lab = pl.Lab(broker_config={"delayedDeliveryTrackerFactoryClassName": IN_MEMORY_TRACKER_FACTORY})
    assert isinstance(lab.service.bucket_snapshot_storage, InMemoryBucketSnapshotStorage)


def test_a_delayed_chunked_message_is_held_on_shared_until_due():
    """The chunk path filters each consumer's entries for delayed delivery as the normal path does."""
    lab = pl.Lab(version="4.0", seed=1, broker_config={"maxMessageSize": 1024})
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared)
    producer = client.create_producer("t", chunking_enabled=True)
    payload = bytes(i % 251 for i in range(3000))
    producer.send(payload, deliver_after=timedelta(seconds=5))
    with pytest.raises(pl.Timeout):
        consumer.receive(0)
    msg = consumer.receive(10_000)
    assert lab.now() >= 5000 and msg.data() == payload
