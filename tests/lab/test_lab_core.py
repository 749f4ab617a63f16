"""The broker model end to end: the learner's API, reference facts reproduced through real dispatch."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.errors import InvalidMessageException, Timeout
from pulsarlab.event_catalogue import broker as ev


def dispatched(lab: pl.Lab) -> list[tuple[int, int, int]]:
    """(consumer id, ledger, entry) of every DISPATCHED event, in order."""
    return [(e.consumer, e.ledger, e.entry) for e in lab.events.of_kind("dispatched")]


def test_learner_api_from_the_issue() -> None:
    lab = pl.Lab(version="4.0", seed=1, broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    client = lab.client()
    producer = client.create_producer("orders", batching_enabled=True, batching_type=pl.BatchingType.KeyBased)
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=pl.ConsumerType.KeyShared,
        consumer_name="c1",
        receiver_queue_size=1000,
        lab_priority_level=0,
        key_shared_policy=pl.ConsumerKeySharedPolicy(),
    )
    msg_id = producer.send(b"hello", partition_key="k1", properties={"a": "b"}, event_timestamp=7)
    assert lab.now() == 10  # a blocking send waits for the batch timer (batching_max_publish_delay_ms=10)
    msg = consumer.receive(timeout_millis=0)
    assert msg.data() == b"hello" and msg.partition_key() == "k1" and msg.properties() == {"a": "b"}
    assert msg.message_id() == msg_id and msg.event_timestamp() == 7 and msg.redelivery_count() == 0
    assert msg.topic_name() == "persistent://public/default/orders"
    with pytest.raises(Timeout):
        consumer.receive(timeout_millis=0)
    consumer.acknowledge(msg)
    lab.advance(100)
    stats = lab.admin.topics.stats("orders")
    sub = stats["subscriptions"]["sub"]
    assert sub["type"] == "Key_Shared" and sub["msgBacklog"] == 0 and sub["keySharedMode"] == "AUTO_SPLIT"
    assert sub["consumers"][0]["consumerName"] == "c1"
    assert sub["consumers"][0]["keyHashRangeArrays"]  # 4.x shape
    internal = lab.admin.topics.stats_internal("orders")
    assert internal["cursors"]["sub"]["markDeletePosition"] == "3:0"
    assert lab.admin.topics.list() == ["persistent://public/default/orders"]
    consumer.close()
    lab.run_until_idle()
    df = lab.events.to_pandas()
    assert "dispatched" in set(df["kind"])


def test_single_delete_through_acks_and_stats_internal_strings() -> None:
    """ManagedCursorTest.testSingleDelete (reference §7.2) driven by real consumer acks."""
    lab = pl.Lab(version="4.0", broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    client = lab.client()
    consumer = client.subscribe("t", "s", lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    ids = [producer.send(f"m{i}".encode()) for i in range(6)]
    assert [str(i) for i in ids] == ["3:0:-1", "3:1:-1", "3:2:-1", "4:0:-1", "4:1:-1", "4:2:-1"]
    msgs = [consumer.receive(0) for _ in range(6)]

    def md() -> str:
        return lab.admin.topics.stats_internal("t")["cursors"]["s"]["markDeletePosition"]

    def idm() -> str:
        return lab.admin.topics.stats_internal("t")["cursors"]["s"]["individuallyDeletedMessages"]

    assert md() == "3:-1"
    consumer.acknowledge(msgs[3])
    assert md() == "3:-1" and idm() == "[(4:-1..4:0]]"
    consumer.acknowledge(msgs[0])
    assert md() == "3:0"
    consumer.acknowledge(msgs[2])
    consumer.acknowledge(msgs[2])
    assert md() == "3:0" and idm() == "[(3:1..3:2],(4:-1..4:0]]"
    consumer.acknowledge(msgs[1])
    assert md() == "4:0" and idm() == "[]"  # jumps the ledger boundary
    consumer.acknowledge(msgs[4])
    assert md() == "4:1"


def test_exclusive_second_consumer_is_busy() -> None:
    lab = pl.Lab()
    client = lab.client()
    client.subscribe("t", "s", consumer_type=pl.ConsumerType.Exclusive)
    with pytest.raises(pl.ConsumerBusyException, match="^Exclusive consumer is already connected$"):
        client.subscribe("t", "s", consumer_type=pl.ConsumerType.Exclusive)


@pytest.mark.parametrize(
    "version, text",
    [
        ("3.0", "Subscription is of different type"),
        (
            "4.0",
            "Subscription is of different type. Active subscription type of 'Exclusive' is different than the "
            "connecting consumer's type 'Shared'.",
        ),
    ],
)
def test_subscription_type_mismatch(version: str, text: str) -> None:
    client = pl.Lab(version=version).client()
    client.subscribe("t", "s", consumer_type=pl.ConsumerType.Exclusive)
    with pytest.raises(pl.SubscriptionBusyException) as info:
        client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared)
    assert str(info.value) == text


def test_key_shared_policy_mismatch_texts_4x_and_accepted_on_3_0() -> None:
    ks = pl.ConsumerType.KeyShared
    client = pl.Lab(version="4.0").client()
    client.subscribe("t", "s", consumer_type=ks)
    with pytest.raises(pl.SubscriptionBusyException) as info:
        client.subscribe(
            "t",
            "s",
            consumer_type=ks,
            key_shared_policy=pl.ConsumerKeySharedPolicy(pl.KeySharedMode.Sticky, sticky_ranges=[(0, 100)]),
        )
    assert str(info.value) == (
        "Subscription is of different type. Active subscription key_shared mode of "
        "'AUTO_SPLIT' is different than the connecting consumer's key_shared mode 'STICKY'."
    )
    with pytest.raises(pl.SubscriptionBusyException) as info:
        client.subscribe(
            "t", "s", consumer_type=ks, key_shared_policy=pl.ConsumerKeySharedPolicy(allow_out_of_order_delivery=True)
        )
    assert str(info.value) == (
        "Subscription is of different type. Active subscription does not allow out of order "
        "delivery while the connecting consumer allows it."
    )
    client3 = pl.Lab(version="3.0").client()
    client3.subscribe("t", "s", consumer_type=ks)
    client3.subscribe(
        "t", "s", consumer_type=ks, key_shared_policy=pl.ConsumerKeySharedPolicy(allow_out_of_order_delivery=True)
    )


def test_cumulative_ack_refused_on_shared() -> None:
    lab = pl.Lab()
    client = lab.client()
    c = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared)
    client.create_producer("t").send(b"x")
    with pytest.raises(
        pl.InvalidConfigurationException,
        match="^Cannot use cumulative acks on a non-exclusive/non-failover subscription$",
    ):
        c.acknowledge_cumulative(c.receive(0))


def test_flow_permits_initial_and_refill_at_half_the_queue() -> None:
    lab = pl.Lab()
    client = lab.client()
    c = client.subscribe("t", "s", receiver_queue_size=10)
    p = client.create_producer("t")
    for i in range(25):
        p.send(b"%d" % i)
    flows = lambda: [e.permits for e in lab.events.of_kind("flow")]  # noqa: E731
    assert flows() == [10]
    assert len(c.receiver_queue) == 10
    for _ in range(4):
        c.receive(0)
    assert flows() == [10] and c.available_permits == 4
    c.receive(0)  # the fifth message hands back half the queue: FLOW(5)
    assert flows() == [10, 5] and c.available_permits == 0
    assert len(c.receiver_queue) == 10


def test_zero_queue_consumer() -> None:
    lab = pl.Lab()
    client = lab.client()
    c = client.subscribe("t", "s", receiver_queue_size=0)
    p = client.create_producer("t")
    p.send(b"a")
    p.send(b"b")
    assert [e.permits for e in lab.events.of_kind("flow")] == []
    assert c.receive().data() == b"a"
    assert c.receive().data() == b"b"
    assert [e.permits for e in lab.events.of_kind("flow")] == [1, 1]
    with pytest.raises(pl.InvalidConfigurationException, match="queue size is 0"):
        c.receive(timeout_millis=10)
    batching = client.create_producer("t", batching_enabled=True)
    batching.send(b"c")
    with pytest.raises(
        InvalidMessageException,
        match=r"^Unsupported Batch message with 0 size receiver queue for \[s\]-\[consumer-0\] $",
    ):
        c.receive()


def test_shared_round_robin_javadoc_example_through_dispatch() -> None:
    """C1 p0 2 permits, C2 p0 1, C3 p0 1, C4 p1 2, C5 p1 1 -> C1, C2, C3, C1, C4, C5, C4 (reference §5.1)."""
    for version in ("3.0", "4.0"):
        lab = pl.Lab(version=version)
        client = lab.client()
        spec = [("C1", 0, 2), ("C2", 0, 1), ("C3", 0, 1), ("C4", 1, 2), ("C5", 1, 1)]
        consumers = {
            client.subscribe(
                "t",
                "s",
                consumer_type=pl.ConsumerType.Shared,
                consumer_name=n,
                lab_priority_level=pri,
                receiver_queue_size=q,
            )._id: n
            for n, pri, q in spec
        }
        p = client.create_producer("t")
        for i in range(8):
            p.send(b"%d" % i)
        assert [consumers[c] for c, _, _ in dispatched(lab)] == ["C1", "C2", "C3", "C1", "C4", "C5", "C4"]
        assert lab.admin.topics.stats("t")["subscriptions"]["s"]["msgInReplay"] == 0


def test_shared_disconnect_returns_pending_messages_without_redelivery_count() -> None:
    lab = pl.Lab()
    client = lab.client()
    c1 = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="c1")
    p = client.create_producer("t")
    for i in range(3):
        p.send(b"%d" % i)
    assert len(c1.receiver_queue) == 3
    c2 = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="c2")
    c1.close()
    got = [c2.receive(0) for _ in range(3)]
    assert sorted(m.data() for m in got) == [b"0", b"1", b"2"]
    assert all(m.redelivery_count() == 0 for m in got)
    assert [e.pending_acks for e in lab.events.of_kind("consumer_closed")] == [3]


def test_shared_unacked_limit_blocks_consumer() -> None:
    lab = pl.Lab(broker_config={"maxUnackedMessagesPerConsumer": 4})
    client = lab.client()
    c = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, lab_ack_group_time_ms=0)
    p = client.create_producer("t")
    for i in range(10):
        p.send(b"%d" % i)
    assert len(c.receiver_queue) == 4
    stats = lab.admin.topics.stats("t")["subscriptions"]["s"]
    assert stats["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
    assert stats["unackedMessages"] == 4
    for _ in range(2):
        c.acknowledge(c.receive(0))
    # unblocked only when unacked <= max/2 at an ack (checked before the count drops, as Pulsar does)
    assert len(c.receiver_queue) == 2
    c.acknowledge(c.receive(0))
    # unblocked with 1 unacked: the parked permits flow, dispatch fills up to the limit and blocks again
    assert len(c.receiver_queue) == 4
    assert [e.blocked for e in lab.events.of_kind("consumer_blocked")] == [True, False, True]


def test_failover_reference_ring_and_partition_picks_with_delay() -> None:
    lab = pl.Lab()
    client = lab.client()
    fo = pl.ConsumerType.Failover
    c1 = client.subscribe("my-topic", "s", consumer_type=fo, consumer_name="c1")
    c2 = client.subscribe("my-topic", "s", consumer_type=fo, consumer_name="c2")
    assert lab.admin.topics.stats("my-topic")["subscriptions"]["s"]["activeConsumerName"] == "c1"
    c3 = client.subscribe("my-topic", "s", consumer_type=fo, consumer_name="c3")
    assert lab.admin.topics.stats("my-topic")["subscriptions"]["s"]["activeConsumerName"] == "c3"
    # the notifications for the change come after activeConsumerFailoverDelayTimeMillis (1000 ms)
    assert c3.is_active is None
    lab.advance(999)
    assert c3.is_active is None
    lab.advance(1)
    assert (c1.is_active, c2.is_active, c3.is_active) == (False, False, True)
    rewinds = lab.events.of_kind("cursor_rewound")
    assert rewinds[-1].time == 1000

    lab.admin.topics.create_partitioned_topic("pt", 4)
    names = [("a", 1), ("b", 0), ("c", 0)]
    for n, pri in names:
        client.subscribe("pt-partition-3", "s", consumer_type=fo, consumer_name=n, lab_priority_level=pri)
    assert lab.admin.topics.stats("pt-partition-3")["subscriptions"]["s"]["activeConsumerName"] == "c"


def test_failover_without_delay_notifies_at_once_and_delivers_in_order() -> None:
    lab = pl.Lab(broker_config={"activeConsumerFailoverDelayTimeMillis": 0})
    client = lab.client()
    fo = pl.ConsumerType.Failover
    a = client.subscribe("t", "s", consumer_type=fo, consumer_name="a")
    p = client.create_producer("t")
    for i in range(3):
        p.send(b"%d" % i)
    assert [a.receive(0).data() for _ in range(3)] == [b"0", b"1", b"2"]
    assert a.is_active is True


def test_partitioned_topic_routing_and_consumer() -> None:
    lab = pl.Lab(seed=3)
    lab.admin.topics.create_partitioned_topic("t", 4)
    assert lab.admin.topics.list() == [f"persistent://public/default/t-partition-{i}" for i in range(4)]
    client = lab.client()
    c = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared)
    p = client.create_producer("t")
    ids = [p.send(b"%d" % i) for i in range(8)]
    assert sorted({i.partition for i in ids}) == [0, 1, 2, 3]  # round robin without batching
    keyed = {p.send(b"k", partition_key="same").partition for _ in range(5)}
    assert len(keyed) == 1
    got = [c.receive(0) for _ in range(13)]
    assert {m.message_id() for m in got} >= set(ids)
    assert [e.permits for e in lab.events.of_kind("flow")] == [1000] * 4


def test_key_shared_4_0_draining_hashes_stats() -> None:
    """ConsumerStatsTest.testKeySharedDrainingHashesConsumerStats (reference §3.2)."""
    lab = pl.Lab(version="4.0")
    client = lab.client()
    ks = pl.ConsumerType.KeyShared
    c1 = client.subscribe("t", "s", consumer_type=ks, consumer_name="c1")
    p = client.create_producer("t", batching_enabled=False)
    for i in range(20):
        p.send(b"%d" % i, partition_key=str(i % 10))
    assert len(c1.receiver_queue) == 20
    client.subscribe("t", "s", consumer_type=ks, consumer_name="c2")
    sub = lab.admin.topics.stats("t")["subscriptions"]["s"]
    st1 = next(c for c in sub["consumers"] if c["consumerName"] == "c1")
    st2 = next(c for c in sub["consumers"] if c["consumerName"] == "c2")
    d = lab.service.topics["persistent://public/default/t"].subscriptions["s"].dispatcher
    hashes_c2 = {
        d.selector.make_sticky_key_hash(str(i).encode())
        for i in range(10)
        if d.selector.select(d.selector.make_sticky_key_hash(str(i).encode())).name == "c2"
    }
    assert hashes_c2, "c2 should take over some keys"
    assert {h["hash"] for h in st1["drainingHashes"]} == hashes_c2
    assert all(h["unackMsgs"] == 2 for h in st1["drainingHashes"])
    assert st1["drainingHashesClearedTotal"] == 0
    assert st2["drainingHashesCount"] == 0


def test_key_shared_3_0_recently_joined_consumer_waits_for_mark_delete() -> None:
    lab = pl.Lab(version="3.0")
    client = lab.client()
    ks = pl.ConsumerType.KeyShared
    c1 = client.subscribe("t", "s", consumer_type=ks, consumer_name="c1", lab_ack_group_time_ms=0)
    p = client.create_producer("t")
    for i in range(4):
        p.send(b"%d" % i, partition_key=str(i))
    c2 = client.subscribe("t", "s", consumer_type=ks, consumer_name="c2", lab_ack_group_time_ms=0)
    sub = lab.admin.topics.stats("t")["subscriptions"]["s"]
    assert sub["consumersAfterMarkDeletePosition"] == {"c2": "3:4"}
    assert next(c for c in sub["consumers"] if c["consumerName"] == "c2")["readPositionWhenJoining"] == "3:4"
    for i in range(4, 40):
        p.send(b"%d" % i, partition_key=str(i))
    assert len(c2.receiver_queue) == 0  # nothing at or after its join position yet
    while c1.receiver_queue:
        c1.acknowledge(c1.receive(0))
    assert lab.admin.topics.stats("t")["subscriptions"]["s"]["consumersAfterMarkDeletePosition"] == {}
    assert len(c2.receiver_queue) > 0


def test_same_seed_same_event_log() -> None:
    def scenario(seed: int) -> str:
        lab = pl.Lab(version="4.0", seed=seed)
        lab.admin.topics.create_partitioned_topic("t", 3)
        client = lab.client()
        cs = [client.subscribe("t", "s", consumer_type=pl.ConsumerType.KeyShared) for _ in range(2)]
        p = client.create_producer("t", batching_enabled=True, batching_type=pl.BatchingType.KeyBased)
        for i in range(50):
            p.send_async(b"%d" % i, None)
        lab.advance(20)
        for c in cs:
            while c.receiver_queue:
                c.acknowledge(c.receive(0))
        lab.run_until_idle()
        return lab.events.digest()

    assert scenario(5) == scenario(5)
    assert scenario(5) != scenario(6)


def test_record_events_false_keeps_the_log_empty() -> None:
    lab = pl.Lab(record_events=False)
    client = lab.client()
    c = client.subscribe("t", "s")
    client.create_producer("t").send(b"x")
    c.acknowledge(c.receive(0))
    lab.run_until_idle()
    assert len(lab.events) == 0
    assert lab.admin.topics.stats_internal("t")["cursors"]["s"]["markDeletePosition"] == "3:0"


def test_event_types_are_declared() -> None:
    assert ev.DISPATCHED.name == "dispatched"


def test_stats_timestamps_use_pulsars_date_formatter():
    # Pulsar stamps connectedSince and the ledger/cursor timestamps with one DateFormatter (ISO_OFFSET_DATE_TIME:
    # the fraction without trailing zeros), so all of them print alike.
    from pulsarlab.date_format import format_timestamp

    lab = pl.Lab(version="4.0", seed=3, start_ms=1_080)
    consumer = lab.client().subscribe("ts", "sub", consumer_name="c1")
    stats = lab.admin.topics.stats("ts")
    (entry,) = stats["subscriptions"]["sub"]["consumers"]
    assert entry["connectedSince"] == format_timestamp(1_080) == "1970-01-01T00:00:01.08Z"
    consumer.close()
