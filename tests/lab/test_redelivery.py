"""Redelivery end to end (reference §8): ack timeout, negative acks, the broker's redelivery count and the
redeliver command, dead-letter topics, retry topics, their stats and events, and Pulsar's texts for bad input."""

from __future__ import annotations

from datetime import timedelta

import pytest

import pulsarlab as pl
from pulsarlab.client.dead_letter import (
    MAX_RECONSUMETIMES,
    DeadLetterPolicy,
    default_dead_letter_topic,
    default_retry_letter_topic,
    legacy_letter_topics,
    letter_properties,
    origin_topic_name,
)
from pulsarlab.client.retry import delay_millis
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.managed_ledger.position import Position

SHARED = pl.ConsumerType.Shared
DLQ = "persistent://public/default/orders-sub-DLQ"
RETRY = "persistent://public/default/orders-sub-RETRY"


def setup(version="4.0", topic="orders", partitions=0, **subscribe):
    lab = pl.Lab(version=version, seed=1)
    if partitions:
        lab.admin.topics.create_partitioned_topic(topic, partitions)
    client = lab.client()
    subscribe.setdefault("consumer_type", SHARED)
    consumer = client.subscribe(topic, "sub", consumer_name="c1", **subscribe)
    producer = client.create_producer(topic)
    return lab, client, consumer, producer


def drain(consumer, timeout_ms=10_000):
    """Every message that arrives within ``timeout_ms`` of virtual time of the previous one."""
    return [msg for _t, msg in consume(consumer, None, timeout_ms)]


def consume(consumer, action, timeout_ms=10_000):
    """Receive until nothing arrives for ``timeout_ms``, calling ``action(msg)`` on each message as it arrives;
    returns ``[(virtual time of receipt, message), ...]``."""
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=timeout_ms)
        except pl.Timeout:
            return out
        out.append((consumer._lab.now(), msg))
        if action is not None:
            action(msg)


def read_all(client, topic, name="reader"):
    reader = client.subscribe(topic, name, initial_position=pl.InitialPosition.Earliest)
    return drain(reader, 0)


def dispatch_times(lab, ledger, entry):
    return [e.time for e in lab.events.of_kind("dispatched") if (e.ledger, e.entry) == (ledger, entry)]


# --- settings and their errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        ({"unacked_messages_timeout_ms": 999}, IllegalArgumentException, "Ack timeout should be greater than 1000 ms"),
        (
            {"unacked_messages_timeout_ms": 5000, "lab_tick_duration_ms": 99},
            IllegalArgumentException,
            "Ack timeout tick time should be greater than 100 ms",
        ),
        ({"negative_ack_redelivery_delay_ms": -1}, IllegalArgumentException, "redeliveryDelay needs to be >= 0"),
        ({"unacked_messages_timeout_ms": "5s"}, TypeError, "ackTimeoutMillis must be an int"),
        ({"negative_ack_redelivery_delay_ms": 1.5}, TypeError, "negative_ack_redelivery_delay_ms must be an int"),
        ({"lab_negative_ack_redelivery_backoff": 100}, TypeError, "MultiplierRedeliveryBackoff"),
        ({"dead_letter_policy": {"max_redeliver_count": 3}}, TypeError, "ConsumerDeadLetterPolicy"),
        ({"lab_retry_enable": "yes"}, TypeError, "lab_retry_enable must be a bool"),
        (
            {"lab_retry_enable": True, "receiver_queue_size": 0},
            IllegalArgumentException,
            "Receiver queue size needs to be greater than 0 for Topics Consumer",
        ),
    ],
)
def test_bad_settings_fail_with_pulsars_texts(kwargs, error, text):
    lab = pl.Lab(seed=1)
    with pytest.raises(error, match=text):
        lab.client().subscribe("orders", "sub", **kwargs)


def test_dead_letter_policy_checks_like_the_python_and_java_clients():
    with pytest.raises(ValueError, match="^max_redeliver_count must be greater than 0$"):
        pl.ConsumerDeadLetterPolicy(0)
    with pytest.raises(ValueError, match="greater than 0"):
        pl.ConsumerDeadLetterPolicy(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pl.ConsumerDeadLetterPolicy(2.5)  # type: ignore[arg-type]
    with pytest.raises(IllegalArgumentException, match=r"^MaxRedeliverCount must be > 0\.$"):
        DeadLetterPolicy(0)
    policy = pl.ConsumerDeadLetterPolicy(3)
    assert (policy.max_redeliver_count, policy.dead_letter_topic, policy.initial_subscription_name) == (3, "", "")


def test_default_names_and_properties_follow_retry_message_util():
    topic = "persistent://public/default/orders"
    assert default_dead_letter_topic(topic, "sub") == topic + "-sub-DLQ"
    assert default_retry_letter_topic(topic, "sub") == topic + "-sub-RETRY"
    assert legacy_letter_topics(topic, "sub") == (
        "persistent://public/default/sub-RETRY",
        "persistent://public/default/sub-DLQ",
    )
    assert origin_topic_name(topic + "-partition-3", multi_topics=True) == topic
    assert origin_topic_name(topic + "-partition-3", multi_topics=False) == topic + "-partition-3"
    props = letter_properties({"REAL_TOPIC": "first", "k": "v"}, "3:1:-1", topic, None)
    assert props == {
        "ORIGIN_MESSAGE_ID": "3:1:-1",
        "ORIGIN_MESSAGE_IDY_TIME": "3:1:-1",
        "REAL_TOPIC": "first",
        "k": "v",
    }
    assert list(props) == sorted(props)  # a TreeMap
    assert delay_millis(timedelta(milliseconds=1001)) == 1001 and delay_millis(-5) == 0
    with pytest.raises(TypeError):
        delay_millis(1.5)  # type: ignore[arg-type]


# --- ack timeout -----------------------------------------------------------------------------------


@pytest.mark.parametrize("ack_timeout, tick", [(1000, 1000), (3000, 2000), (10_000, 7000), (5000, 300)])
def test_ack_timeout_redelivers_between_ceil_timeout_and_one_tick_later(ack_timeout, tick):
    lab, _client, consumer, producer = setup(unacked_messages_timeout_ms=ack_timeout, lab_tick_duration_ms=tick)
    producer.send(b"m")
    lab.advance(137)  # the ring ticks from the consumer's creation, not from the receive
    msg = consumer.receive(0)
    received_at = lab.now()
    again = consumer.receive(timeout_millis=3 * ack_timeout)
    assert again.message_id() == msg.message_id() and again.redelivery_count() == 1
    waited = lab.now() - received_at
    effective = min(tick, ack_timeout)
    low = -(-ack_timeout // effective) * effective
    assert low < waited <= low + effective


def test_acked_and_nacked_messages_leave_the_ack_timeout_tracker():
    lab, _client, consumer, producer = setup(unacked_messages_timeout_ms=2000, negative_ack_redelivery_delay_ms=60_000)
    for i in range(3):
        producer.send(f"m{i}".encode())
    msgs = [consumer.receive(0) for _ in range(3)]
    tracker = consumer.unacked_message_tracker
    assert tracker.size() == 3
    consumer.acknowledge(msgs[0])
    consumer.negative_acknowledge(msgs[1])
    assert tracker.size() == 1 and msgs[2].message_id() in tracker
    again = consumer.receive(timeout_millis=5000)  # only the ignored one times out
    assert (again.data(), again.redelivery_count()) == (b"m2", 1)
    consumer.acknowledge(again)
    assert drain(consumer, 5000) == []


def test_batch_entry_stays_tracked_until_every_message_is_acked():
    lab = pl.Lab(seed=1)
    client = lab.client()
    consumer = client.subscribe("orders", "sub", consumer_type=SHARED, unacked_messages_timeout_ms=1000)
    producer = client.create_producer("orders", batching_enabled=True, batching_max_messages=3)
    for i in range(3):
        producer.send_async(f"m{i}".encode(), None)
    lab.run_until_idle()
    msgs = [consumer.receive(0) for _ in range(3)]
    assert consumer.unacked_message_tracker.size() == 1  # entry-level ids
    consumer.acknowledge(msgs[0])
    consumer.acknowledge(msgs[1])
    assert consumer.unacked_message_tracker.size() == 1
    consumer.acknowledge(msgs[2])
    assert consumer.unacked_message_tracker.size() == 0


def test_exclusive_ack_timeout_redelivers_everything_unacked_by_rewinding():
    lab, _client, consumer, producer = setup(
        consumer_type=pl.ConsumerType.Exclusive, unacked_messages_timeout_ms=1000, lab_ack_group_time_ms=0
    )
    for i in range(4):
        producer.send(f"m{i}".encode())
    first, second = consumer.receive(0), consumer.receive(0)
    consumer.acknowledge(first)
    lab.advance(2000)  # `second` times out; m2, m3 were never taken from the queue
    assert lab.events.of_kind("redeliver_requested") and not lab.events.of_kind("redeliver_ids")
    assert lab.events.of_kind("cursor_rewound")
    again = drain(consumer, 0)
    assert [m.data() for m in again] == [b"m1", b"m2", b"m3"]
    assert {m.redelivery_count() for m in again} == {0}  # RedeliveryTrackerDisabled
    assert second.message_id() == again[0].message_id()


def test_shared_ack_timeout_redelivers_only_the_timed_out_ids():
    lab, client, consumer, producer = setup(unacked_messages_timeout_ms=1000, receiver_queue_size=10)
    for i in range(4):
        producer.send(f"m{i}".encode())
    msgs = [consumer.receive(0) for _ in range(2)]  # m2, m3 stay in the receiver queue
    consumer.acknowledge(msgs[0])
    lab.advance(2000)
    (req,) = lab.events.of_kind("redeliver_ids")
    assert req.ids == [[msgs[1].message_id().ledger, msgs[1].message_id().entry]] and req.pending == 1
    assert [(m.data(), m.redelivery_count()) for m in drain(consumer, 0)] == [(b"m2", 0), (b"m3", 0), (b"m1", 1)]
    sub = lab.admin.topics.stats("orders")["subscriptions"]["sub"]
    assert sub["consumers"][0]["unackedMessages"] == 4 - 1


# --- the broker's redelivery count and the redeliver command ------------------------------------------


def test_redelivery_count_goes_up_only_on_client_requests_not_on_disconnect():
    lab, client, c1, producer = setup(negative_ack_redelivery_delay_ms=1000)
    producer.send(b"m")
    c1.negative_acknowledge(c1.receive(0))
    # c2 has no permits until it calls receive (receiver queue 0): the redelivery goes to c1
    c2 = client.subscribe("orders", "sub", consumer_type=SHARED, consumer_name="c2", receiver_queue_size=0)
    assert c1.receive(timeout_millis=5000).redelivery_count() == 1
    c1.close()  # no ack: the pending ack goes back to the replay set, uncounted
    assert c2.receive().redelivery_count() == 1
    assert [e.count for e in lab.events.of_kind("redelivery_counted")] == [1]
    c2.close()  # the last consumer left: the replay set and the counts are cleared (reference §5.2)
    c3 = client.subscribe("orders", "sub", consumer_type=SHARED, consumer_name="c3")
    assert c3.receive(0).redelivery_count() == 0


def test_key_shared_counts_redeliveries_too():
    lab, _client, consumer, producer = setup(
        consumer_type=pl.ConsumerType.KeyShared, negative_ack_redelivery_delay_ms=500
    )
    producer.send(b"m", partition_key="k")
    for expected in range(3):
        msg = consumer.receive(timeout_millis=5000)
        assert msg.redelivery_count() == expected
        consumer.negative_acknowledge(msg)


def test_broker_redeliver_contract_ids_among_pending_acks():
    lab, _client, consumer, producer = setup(receiver_queue_size=10)
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    got = [consumer.receive(0) for _ in range(3)]
    broker = consumer._impls[-1].broker_consumer
    svc = lab.service
    svc.redeliver_unacknowledged(broker, [(ids[1].ledger, ids[1].entry), (99, 99)])  # 99:99 is not pending
    (req,) = lab.events.of_kind("redeliver_ids")
    assert (req.requested, req.pending) == (2, 1)
    again = consumer.receive(0)
    assert again.message_id() == got[1].message_id() and again.redelivery_count() == 1
    svc.redeliver_unacknowledged(broker)  # no ids: everything pending
    assert sorted((m.data(), m.redelivery_count()) for m in drain(consumer, 0)) == [(b"m0", 1), (b"m1", 2), (b"m2", 1)]
    with pytest.raises(TypeError, match=r"\(ledger, entry\) pair"):
        svc.redeliver_unacknowledged(broker, [(1, "2")])


def test_broker_redeliver_contract_exclusive_rewinds_whatever_the_ids():
    lab, _client, consumer, producer = setup(consumer_type=pl.ConsumerType.Exclusive)
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    for _ in range(3):
        consumer.receive(0)
    consumer._queue.clear()  # what the client clears before it asks (ConsumerImpl.redeliverUnacknowledgedMessages)
    lab.service.redeliver_unacknowledged(consumer._impls[-1].broker_consumer, [(ids[2].ledger, ids[2].entry)])
    assert [m.data() for m in drain(consumer, 0)] == [b"m0", b"m1", b"m2"]


def test_client_redeliver_unacknowledged_messages_still_redelivers_all():
    lab, _client, consumer, producer = setup(receiver_queue_size=10)
    for i in range(3):
        producer.send(f"m{i}".encode())
    consumer.acknowledge(consumer.receive(0))
    consumer.receive(0)
    lab.advance(100)
    consumer.redeliver_unacknowledged_messages()
    assert sorted((m.data(), m.redelivery_count()) for m in drain(consumer, 0)) == [(b"m1", 1), (b"m2", 1)]


def test_remove_expired_messages_from_queue_drops_the_head_and_one_more():
    lab, _client, consumer, producer = setup(receiver_queue_size=10)
    for i in range(4):
        producer.send(f"m{i}".encode())
    queued = consumer.receiver_queue
    consumer._impls[-1].redeliver_ids([queued[0].message_id()])
    (req,) = lab.events.of_kind("redeliver_ids")
    # m0 was asked for; m1 followed it out of the queue and joined the request (removeExpiredMessagesFromQueue)
    assert req.ids == [[m.message_id().ledger, m.message_id().entry] for m in queued[:2]]
    assert [(m.data(), m.redelivery_count()) for m in drain(consumer, 0)] == [
        (b"m2", 0),
        (b"m3", 0),
        (b"m0", 1),
        (b"m1", 1),
    ]


def test_msg_rate_redeliver_is_the_last_stats_period_rate():
    lab, _client, consumer, producer = setup(receiver_queue_size=10)
    for i in range(6):
        producer.send(f"m{i}".encode())
    for _ in range(6):
        consumer.receive(0)
    consumer.redeliver_unacknowledged_messages()
    stats = lambda: lab.admin.topics.stats("orders")["subscriptions"]["sub"]  # noqa: E731
    assert stats()["msgRateRedeliver"] == 0.0  # the broker computes rates once a period (60 s)
    lab.advance(60_000)
    assert stats()["msgRateRedeliver"] == pytest.approx(6 / 60)
    assert stats()["consumers"][0]["msgRateRedeliver"] == pytest.approx(6 / 60)
    lab.advance(60_000)
    assert stats()["msgRateRedeliver"] == 0.0
    assert consumer._impls[-1].broker_consumer.msg_redeliver.total == 6


# --- negative acks -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version, early", [("3.0", 0), ("4.0", 255), ("4.1", 255)])
def test_negative_ack_is_never_late_by_the_bucket_nor_early_beyond_it(version, early):
    lab, _client, consumer, producer = setup(version, negative_ack_redelivery_delay_ms=1000)
    for i in range(6):
        producer.send(f"m{i}".encode())
    nacked_at = {}
    for i, msg in enumerate(consumer.receive(0) for _ in range(6)):
        lab.advance(97 * (i + 1))
        consumer.negative_acknowledge(msg)
        nacked_at[msg.message_id()] = lab.now()
    consume(consumer, None, 5000)
    waits = [dispatch_times(lab, m.ledger, m.entry)[1] - at for m, at in nacked_at.items()]
    assert min(waits) >= 1000 - early
    if version == "3.0":
        assert max(waits) <= 1000 + 1000 // 3  # the timer runs every delay/3; strictly after the deadline
    else:
        assert min(waits) < 1000  # later nacks land in buckets the running timer reaches early


def test_negative_ack_backoff_grows_with_the_redelivery_count():
    backoff = pl.MultiplierRedeliveryBackoff(min_delay_ms=1000, max_delay_ms=10_000, multiplier=3)
    lab, _client, consumer, producer = setup("3.0", lab_negative_ack_redelivery_backoff=backoff)
    producer.send(b"m")
    waits = []
    msg = consumer.receive(0)
    for _ in range(4):
        start = lab.now()
        consumer.negative_acknowledge(msg)
        msg = consumer.receive(timeout_millis=60_000)
        waits.append(lab.now() - start)
    for wait, count in zip(waits, range(4)):
        delay = backoff.next(count)
        assert delay < wait <= delay + max(backoff.next(0), 100) // 3 + 1


def test_negative_ack_on_exclusive_rewinds_the_cursor():
    lab, _client, consumer, producer = setup(
        consumer_type=pl.ConsumerType.Exclusive, negative_ack_redelivery_delay_ms=500
    )
    for i in range(2):
        producer.send(f"m{i}".encode())
    consumer.negative_acknowledge(consumer.receive(0))
    assert [m.data() for m in drain(consumer, 2000)] == [b"m1", b"m0", b"m1"]


def nack_with_ack_timeout(version, partitions, bug=None):
    """NegativeAcksTest.testNegativeAcks with ackTimeout 1000: nack 10 messages, count what comes back before
    the application acks (4.5 s later, after the negative-ack delay of 3 s)."""
    profile = pl.get_profile(version)
    if bug is not None:
        profile = profile.replace(negative_ack_double_redelivery=bug)
    lab = pl.Lab(version=profile, seed=1)
    if partitions:
        lab.admin.topics.create_partitioned_topic("orders", partitions)
    client = lab.client()
    consumer = client.subscribe(
        "orders", "sub", consumer_type=SHARED, unacked_messages_timeout_ms=1000, negative_ack_redelivery_delay_ms=3000
    )
    producer = client.create_producer("orders")
    for i in range(10):
        producer.send(f"m{i}".encode())
    for msg in [consumer.receive(0) for _ in range(10)]:
        consumer.negative_acknowledge(msg)
    tracked = consumer.unacked_message_tracker.size()
    counts: dict[bytes, int] = {}
    again = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=4500 - lab.now())
        except (pl.Timeout, ValueError):
            break
        counts[msg.data()] = counts.get(msg.data(), 0) + 1
        again.append(msg)
    for msg in again:
        consumer.acknowledge(msg)
    return tracked, counts


@pytest.mark.parametrize("version", ["4.0", "3.0"])
def test_negative_ack_leaves_the_parent_ack_timeout_tracker_since_20750(version):
    tracked, counts = nack_with_ack_timeout(version, partitions=3)
    assert tracked == 0
    assert sorted(counts.values()) == [1] * 10


@pytest.mark.parametrize("version, bug", [("4.0", True), ("3.0.3", None)])
def test_pre_20750_multi_topics_nack_redelivers_twice(version, bug):
    tracked, counts = nack_with_ack_timeout(version, partitions=3, bug=bug)
    assert tracked == 10  # the parent's tracker kept the ids
    assert len(counts) == 10 and all(n >= 2 for n in counts.values())  # ack timeout, then the nack


def test_pre_20750_batch_id_nack_stays_in_a_single_topic_tracker():
    profile = pl.get_profile("4.0").replace(negative_ack_double_redelivery=True)
    for prof, expected in ((profile, 1), (pl.get_profile("4.0"), 0)):
        lab = pl.Lab(version=prof, seed=1)
        client = lab.client()
        consumer = client.subscribe("orders", "sub", consumer_type=SHARED, unacked_messages_timeout_ms=1000)
        producer = client.create_producer("orders", batching_enabled=True, batching_max_messages=2)
        for i in range(2):
            producer.send_async(f"m{i}".encode(), None)
        lab.run_until_idle()
        consumer.acknowledge(consumer.receive(0))
        consumer.negative_acknowledge(consumer.receive(0))
        assert consumer.unacked_message_tracker.size() == expected


# --- dead-letter topics ----------------------------------------------------------------------------------


@pytest.mark.parametrize("max_redeliver", [1, 2, 4])
@pytest.mark.parametrize("how", ["nack", "ack_timeout"])
def test_dead_letter_after_max_redeliver_count_plus_one_deliveries(max_redeliver, how):
    kw = {"negative_ack_redelivery_delay_ms": 1000} if how == "nack" else {"unacked_messages_timeout_ms": 1000}
    lab, client, consumer, producer = setup(dead_letter_policy=pl.ConsumerDeadLetterPolicy(max_redeliver), **kw)
    sent = 5
    for i in range(sent):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}", properties={"n": str(i)}, event_timestamp=100 + i)
    received = len(consume(consumer, consumer.negative_acknowledge if how == "nack" else None, 10_000))
    assert received == sent * (max_redeliver + 1)  # DeadLetterTopicTest's loop condition
    assert DLQ in lab.admin.topics.list()
    dead = read_all(client, DLQ)
    assert sorted(m.data() for m in dead) == [f"m{i}".encode() for i in range(sent)]
    for m in dead:
        i = int(m.properties()["n"])
        assert m.partition_key() == f"k{i}" and m.event_timestamp() == 100 + i
        assert m.properties()["REAL_TOPIC"] == "persistent://public/default/orders"
        assert m.properties()["ORIGIN_MESSAGE_ID"] == m.properties()["ORIGIN_MESSAGE_IDY_TIME"]
        assert m.properties()["REAL_SUBSCRIPTION"] == "sub"  # 4.x
    assert lab.admin.topics.stats("orders")["subscriptions"]["sub"]["msgBacklog"] == 0


def test_dead_letter_copy_on_3_0_has_no_real_subscription_and_the_producer_is_lazy():
    lab, client, consumer, producer = setup(
        "3.0", negative_ack_redelivery_delay_ms=100, dead_letter_policy=pl.ConsumerDeadLetterPolicy(1)
    )
    producer.send(b"m")
    consumer.negative_acknowledge(consumer.receive(0))
    msg = consumer.receive(timeout_millis=1000)
    assert msg.redelivery_count() == 1
    assert DLQ not in lab.admin.topics.list() and not lab.events.of_kind("letter_producer_created")
    consumer.negative_acknowledge(msg)
    lab.advance(1000)
    (created,) = lab.events.of_kind("letter_producer_created")
    assert created.topic == DLQ and created.letter == "dead letter"
    (copy,) = read_all(client, DLQ)
    assert "REAL_SUBSCRIPTION" not in copy.properties()
    assert copy.properties()["ORIGIN_MESSAGE_ID"] == str(msg.message_id())


def test_dead_letter_topic_name_initial_subscription_and_batches():
    policy = pl.ConsumerDeadLetterPolicy(1, dead_letter_topic="my-dlq", initial_subscription_name="init")
    lab = pl.Lab(seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "orders", "sub", consumer_type=SHARED, negative_ack_redelivery_delay_ms=100, dead_letter_policy=policy
    )
    producer = client.create_producer("orders", batching_enabled=True, batching_max_messages=3)
    for i in range(3):
        producer.send_async(f"m{i}".encode(), None)
    lab.run_until_idle()
    for _ in range(2):
        for msg in [consumer.receive(timeout_millis=1000) for _ in range(3)]:
            consumer.negative_acknowledge(msg)
    lab.advance(1000)
    stats = lab.admin.topics.stats("my-dlq")
    assert list(stats["subscriptions"]) == ["init"]  # made when the producer connected, before the first copy
    assert stats["subscriptions"]["init"]["msgBacklog"] == 3  # the batch went message by message
    assert lab.admin.topics.stats("orders")["subscriptions"]["sub"]["msgBacklog"] == 0


def test_no_default_ack_timeout_with_a_dead_letter_policy_since_3_0():
    for version, expected in (("4.0", None), ("3.0", None), ("3.0.0", None), ("2.10", 30_000)):
        lab = pl.Lab(version=version, seed=1)
        consumer = lab.client().subscribe(
            "orders", "sub", consumer_type=SHARED, dead_letter_policy=pl.ConsumerDeadLetterPolicy(3)
        )
        tracker = consumer.unacked_message_tracker
        assert (tracker.ack_timeout_millis if tracker is not None else None) == expected, version


def test_exclusive_never_dead_letters_by_count():
    lab, client, consumer, producer = setup(
        consumer_type=pl.ConsumerType.Exclusive,
        negative_ack_redelivery_delay_ms=100,
        dead_letter_policy=pl.ConsumerDeadLetterPolicy(1),
    )
    producer.send(b"m")
    for _ in range(5):
        msg = consumer.receive(timeout_millis=1000)
        assert msg.redelivery_count() == 0
        consumer.negative_acknowledge(msg)
    assert DLQ not in lab.admin.topics.list()


def test_a_message_over_the_limit_on_arrival_goes_straight_to_the_dlq():
    lab, client, c1, producer = setup(negative_ack_redelivery_delay_ms=100)
    producer.send(b"m")
    # c2 gets nothing until it calls receive (receiver queue 0), and it stays connected: the counts are kept
    c2 = client.subscribe(
        "orders",
        "sub",
        consumer_type=SHARED,
        consumer_name="c2",
        receiver_queue_size=0,
        dead_letter_policy=pl.ConsumerDeadLetterPolicy(1),
    )
    for _ in range(3):
        c1.negative_acknowledge(c1.receive(timeout_millis=1000))
    lab.advance(1000)  # redelivered a third time; c1 keeps it in its queue
    c1.close()
    with pytest.raises(pl.Timeout):
        c2.receive()  # count 3 > 1: not shown, redelivered at once, straight to the DLQ
    (candidate,) = lab.events.of_kind("dead_letter_candidate")
    assert candidate.skipped and candidate.redelivery_count == 3
    assert [m.data() for m in read_all(client, DLQ)] == [b"m"]


def test_partitioned_topic_dead_letters_per_partition_name():
    lab, client, consumer, producer = setup(
        partitions=2, negative_ack_redelivery_delay_ms=100, dead_letter_policy=pl.ConsumerDeadLetterPolicy(1)
    )
    base = "persistent://public/default/orders"
    assert consumer.dead_letter_topics() == {f"{base}-partition-{i}": f"{base}-partition-{i}-sub-DLQ" for i in range(2)}
    for i in range(4):
        producer.send(f"m{i}".encode())
    consume(consumer, consumer.negative_acknowledge, 2000)
    copies = [m for i in range(2) for m in read_all(client, f"{base}-partition-{i}-sub-DLQ", f"r{i}")]
    assert len(copies) == 4
    assert {m.properties()["REAL_TOPIC"] for m in copies} == {base}  # the multi-topic owner, suffix removed


# --- retry topics ------------------------------------------------------------------------------------


def test_reconsume_later_writes_a_delayed_copy_and_acks_the_original():
    lab, client, consumer, producer = setup(lab_retry_enable=True)
    assert consumer.topics() == ["persistent://public/default/orders", RETRY]
    assert lab.admin.topics.stats(RETRY)["subscriptions"]["sub"]["type"] == "Shared"
    original = producer.send(b"m", properties={"user": "x", "REAL_TOPIC": "kept"}, partition_key="k", ordering_key="o")
    msg = consumer.receive(0)
    lab.advance(50)
    consumer.reconsume_later(msg, timedelta(seconds=3), properties={"why": "busy"})
    (event,) = lab.events.of_kind("reconsumed_later")
    copy_ledger, copy_entry = event.copy["ids"][0]
    stored = lab.service.topics[RETRY].ledger.read_entry(Position(copy_ledger, copy_entry))
    assert stored.metadata.deliver_at_time == 50 + 3000
    assert stored.metadata.partition_key == "k" and stored.metadata.ordering_key == b"o"
    assert stored.metadata.properties == {
        "DELAY_TIME": "3000",
        "ORIGIN_MESSAGE_ID": str(original),
        "ORIGIN_MESSAGE_IDY_TIME": str(original),
        "REAL_SUBSCRIPTION": "sub",
        "REAL_TOPIC": "kept",
        "RECONSUMETIMES": "1",
        "user": "x",
        "why": "busy",
    }
    lab.advance(100)
    assert lab.admin.topics.stats("orders")["subscriptions"]["sub"]["msgBacklog"] == 0


def test_reconsume_later_counts_up_then_dead_letters():
    lab, client, consumer, producer = setup(lab_retry_enable=True, dead_letter_policy=pl.ConsumerDeadLetterPolicy(2))
    first = producer.send(b"m")
    seen = []
    for _ in range(5):
        try:
            msg = consumer.receive(0)  # the broker of this branch does not hold delayed messages back
        except pl.Timeout:
            break
        seen.append((msg.topic_name(), msg.properties().get("RECONSUMETIMES")))
        consumer.reconsume_later(msg, 1000)
    assert seen == [("persistent://public/default/orders", None), (RETRY, "1"), (RETRY, "2")]
    (dead,) = read_all(client, DLQ)
    assert dead.properties()["RECONSUMETIMES"] == "3"
    assert dead.properties()["ORIGIN_MESSAGE_ID"] == str(first)  # putIfAbsent keeps the first original
    assert dead.properties()["REAL_TOPIC"] == "persistent://public/default/orders"
    (event,) = lab.events.of_kind("dead_lettered")
    assert event.reason == "RECONSUMETIMES" and event.count == 3


def test_retry_defaults_and_legacy_names():
    lab = pl.Lab(seed=1)
    consumer = lab.client().subscribe("orders", "sub", consumer_type=SHARED, lab_retry_enable=True)
    assert consumer.dead_letter_policy.max_redeliver_count == MAX_RECONSUMETIMES == 16
    policy = consumer.dead_letter_policy
    assert (policy.retry_letter_topic, policy.dead_letter_topic) == (RETRY, DLQ)
    lab = pl.Lab(seed=1)
    lab.admin.topics.create_non_partitioned_topic("sub-RETRY")  # the pre-2.8 name exists: it is used
    consumer = lab.client().subscribe("orders", "sub", consumer_type=SHARED, lab_retry_enable=True)
    assert consumer.retry_letter_topic == "persistent://public/default/sub-RETRY"
    assert consumer.dead_letter_policy.dead_letter_topic == DLQ


@pytest.mark.parametrize("version, retry_type", [("4.0", "Shared"), ("3.0", "Shared"), ("3.0.3", "Failover")])
def test_retry_topic_is_subscribed_as_shared_since_3_0_10(version, retry_type):
    lab = pl.Lab(version=version, seed=1)
    lab.client().subscribe("orders", "sub", consumer_type=pl.ConsumerType.Failover, lab_retry_enable=True)
    assert lab.admin.topics.stats(RETRY)["subscriptions"]["sub"]["type"] == retry_type
    assert lab.admin.topics.stats("orders")["subscriptions"]["sub"]["type"] == "Failover"


def test_reconsume_later_errors():
    lab, _client, consumer, producer = setup()
    producer.send(b"m")
    msg = consumer.receive(0)
    with pytest.raises(pl.PulsarClientException, match=r"^reconsumeLater method not support!$"):
        consumer.reconsume_later(msg, 1000)
    lab, _client, consumer, producer = setup(lab_retry_enable=True)
    producer.send(b"m")
    msg = consumer.receive(0)
    with pytest.raises(
        pl.InvalidConfigurationException, match=r"^Cannot use cumulative acks on a non-exclusive subscription$"
    ):
        consumer.reconsume_later_cumulative(msg, 1000)
    with pytest.raises(TypeError, match="timedelta or an int"):
        consumer.reconsume_later(msg, "soon")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a Message"):
        consumer.reconsume_later(msg.message_id(), 1000)  # type: ignore[arg-type]


def test_reconsume_later_cumulative_on_exclusive():
    lab, client, consumer, producer = setup(consumer_type=pl.ConsumerType.Exclusive, lab_retry_enable=True)
    for i in range(3):
        producer.send(f"m{i}".encode())
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.reconsume_later_cumulative(msgs[1], 0)
    lab.advance(100)
    internal = lab.admin.topics.stats_internal("orders")["cursors"]["sub"]
    assert internal["markDeletePosition"] == f"{msgs[1].message_id().ledger}:{msgs[1].message_id().entry}"
    retried = [m for m in drain(consumer, 0) if m.topic_name() == RETRY]
    assert [m.data() for m in retried] == [b"m1"]
    assert "DELAY_TIME" in retried[0].properties() and retried[0].properties()["DELAY_TIME"] == "0"


def test_partitioned_retry_uses_the_topic_name_without_partition():
    lab, client, consumer, producer = setup(partitions=2, lab_retry_enable=True)
    assert consumer.retry_letter_topic == RETRY
    producer.send(b"m")
    consumer.reconsume_later(consumer.receive(0), 0)
    retried = consumer.receive(0)
    assert retried.topic_name() == RETRY
    assert retried.properties()["REAL_TOPIC"] == "persistent://public/default/orders"
    consumer.acknowledge(retried.message_id())  # a bare MessageId finds its topic
    lab.advance(100)
    assert lab.admin.topics.stats(RETRY)["subscriptions"]["sub"]["msgBacklog"] == 0


# --- events, determinism, cost when off -----------------------------------------------------------


def scenario(seed):
    lab = pl.Lab(version="4.0", seed=seed)
    client = lab.client()
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=SHARED,
        lab_retry_enable=True,
        unacked_messages_timeout_ms=2000,
        negative_ack_redelivery_delay_ms=500,
        dead_letter_policy=pl.ConsumerDeadLetterPolicy(2),
    )
    producer = client.create_producer("orders")
    for i in range(6):
        producer.send(f"m{i}".encode())
    actions = [consumer.negative_acknowledge, lambda m: consumer.reconsume_later(m, 200), lambda m: None]
    seen = []
    consume(consumer, lambda m: (seen.append(m), actions[len(seen) % 3](m)), 5000)
    return lab


def test_every_redelivery_step_is_an_explained_event_and_runs_are_deterministic():
    lab = scenario(7)
    kinds = {e.kind for e in lab.events}
    for kind in (
        "negative_acked",
        "nack_timer_fired",
        "ack_timeout_tick",
        "redeliver_ids",
        "redelivery_counted",
        "dead_letter_candidate",
        "dead_lettered",
        "reconsumed_later",
        "letter_producer_created",
    ):
        assert kind in kinds, kind
        for e in lab.events.of_kind(kind):
            text = e.explain()
            assert not text.startswith(f"{kind} {{") and text.endswith(")"), text  # the template filled, rule cited
    assert scenario(7).events.digest() == lab.events.digest()


def test_nothing_redelivery_related_is_built_when_it_is_off():
    lab, _client, consumer, producer = setup()
    producer.send(b"m")
    consumer.acknowledge(consumer.receive(0))
    lab.advance(1000)
    assert consumer.unacked_message_tracker is None
    assert consumer.negative_acks_tracker() is None and consumer.dead_letter_policy is None
    assert lab.scheduler.next_deadline() is None  # no timer left running


def test_idle_ack_timeout_ring_lets_the_lab_run_until_idle():
    lab, _client, consumer, producer = setup(unacked_messages_timeout_ms=1000)
    producer.send(b"m")
    consumer.acknowledge(consumer.receive(0))
    lab.run_until_idle()
    assert consumer.unacked_message_tracker.next_tick_ms is None
    producer.send(b"n")
    lab.advance(1234)
    consumer.receive(0)
    assert consumer.unacked_message_tracker.next_tick_ms == (lab.now() // 1000 + 1) * 1000  # the creation's phase
    consumer.close()
    assert lab.scheduler.next_deadline() is None


def test_message_id_of_a_dead_lettered_entry_is_acked_at_entry_level():
    lab, _client, consumer, producer = setup(
        negative_ack_redelivery_delay_ms=100, dead_letter_policy=pl.ConsumerDeadLetterPolicy(1)
    )
    mid = producer.send(b"m")
    consumer.negative_acknowledge(consumer.receive(0))
    consumer.negative_acknowledge(consumer.receive(timeout_millis=1000))
    lab.advance(1000)
    acks = [e for e in lab.events.of_kind("acknowledged")]
    assert [(a.ledger, a.entry, a.batch_index) for a in acks] == [(mid.ledger, mid.entry, -1)]
