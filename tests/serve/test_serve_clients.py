"""The real pulsar-client against ``pulsarlab serve``, each scenario cross-checked with the in-process API.

Each test drives the real Python client (C++ 4.2 inside) against a lab served on a free loopback port, then
runs the same scenario on a fresh lab through the in-process API and compares the cursor fields of
``stats-internal`` (and what each side received).
"""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pulsar
import pytest
from serve_support import (
    RECEIVE_MS,
    batch_acks,
    client_for,
    cursor_state,
    receive_all,
    served_lab,
    sticky_selection,
    wait_until,
)

import pulsarlab as pl
from pulsarlab.snapshot.lab import snapshot

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/orders"


def _inproc(version: str = "4.0", broker_config: dict | None = None) -> tuple[pl.Lab, object]:
    lab = pl.Lab(version=version, seed=1, broker_config=broker_config)
    return lab, lab.client()


def _wait_cursor(server, topic: str, sub: str, predicate, what: str) -> dict:
    wait_until(lambda: predicate(server.stats_internal(topic)["cursors"][sub]), what=what)
    return cursor_state(server.stats_internal(topic), sub)


# --- subscription types -----------------------------------------------------------------------------------
def test_exclusive_refuses_a_second_consumer_and_takes_cumulative_acks():
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "ex", consumer_name="a")
        with pytest.raises(pulsar.ConsumerBusy):
            client.subscribe(TOPIC, "ex", consumer_name="b")
        p = client.create_producer(TOPIC)
        for i in range(10):
            p.send(f"m{i}".encode())
        msgs = [c.receive(RECEIVE_MS) for _ in range(10)]
        assert [m.data() for m in msgs] == [f"m{i}".encode() for i in range(10)]
        c.acknowledge_cumulative(msgs[5])
        c.acknowledge(msgs[8])
        served = _wait_cursor(
            server, TOPIC, "ex", lambda cur: cur["individuallyDeletedMessages"] != "[]", "the acks to reach the cursor"
        )

    lab2, client2 = _inproc()
    c2 = client2.subscribe(TOPIC, "ex", consumer_name="a")
    with pytest.raises(pl.ConsumerBusyException, match="Exclusive consumer is already connected"):
        client2.subscribe(TOPIC, "ex", consumer_name="b")
    p2 = client2.create_producer(TOPIC)
    for i in range(10):
        p2.send(f"m{i}".encode())
    msgs2 = [c2.receive() for _ in range(10)]
    c2.acknowledge_cumulative(msgs2[5])
    c2.acknowledge(msgs2[8])
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "ex")
    assert served["markDeletePosition"] == "3:5" and served["individuallyDeletedMessages"] == "[(3:7..3:8]]"


def test_shared_round_robin_matches_the_model():
    names = ["c1", "c2"]
    with served_lab() as (lab, server), client_for(server) as client:
        consumers = {
            n: client.subscribe(TOPIC, "sh", consumer_type=pulsar.ConsumerType.Shared, consumer_name=n) for n in names
        }
        p = client.create_producer(TOPIC)
        for i in range(12):
            p.send(f"m{i}".encode())
        got = receive_all(consumers, 12)
        served_split = {n: sorted(m.data() for who, m in got if who == n) for n in names}
        for who, m in got:
            consumers[who].acknowledge(m)
        served = _wait_cursor(server, TOPIC, "sh", lambda cur: cur["markDeletePosition"] == "3:11", "all acks")

    lab2, client2 = _inproc()
    consumers2 = {
        n: client2.subscribe(TOPIC, "sh", consumer_type=pl.ConsumerType.Shared, consumer_name=n) for n in names
    }
    p2 = client2.create_producer(TOPIC)
    for i in range(12):
        p2.send(f"m{i}".encode())
    split2 = {n: [] for n in names}
    for n, c in consumers2.items():
        while c.receiver_queue:
            m = c.receive(0)
            split2[n].append(m.data())
            c.acknowledge(m)
    lab2.run_until_idle()
    assert served_split == {n: sorted(v) for n, v in split2.items()}
    assert all(served_split.values())
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "sh")


def test_failover_switches_the_active_consumer_when_it_closes():
    with served_lab() as (lab, server), client_for(server) as client:
        consumers = {
            n: client.subscribe(TOPIC, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name=n)
            for n in ("c-a", "c-b")
        }
        p = client.create_producer(TOPIC)
        for i in range(10):
            p.send(f"m{i}".encode())
        first = receive_all(consumers, 10)
        active = {who for who, _ in first}
        assert len(active) == 1, f"one active consumer gets everything, got {active}"
        (active_name,) = active
        other = "c-b" if active_name == "c-a" else "c-a"
        for _, m in first[:4]:
            consumers[active_name].acknowledge(m)
        _wait_cursor(server, TOPIC, "fo", lambda cur: cur["markDeletePosition"] == "3:3", "the first acks")
        consumers.pop(active_name).close()
        rest = receive_all(consumers, 6)  # after activeConsumerFailoverDelayTimeMillis (1 s)
        assert [m.data() for _, m in rest] == [f"m{i}".encode() for i in range(4, 10)]
        for _, m in rest:
            consumers[other].acknowledge(m)
        served = _wait_cursor(server, TOPIC, "fo", lambda cur: cur["markDeletePosition"] == "3:9", "all acks")
        changes = server.call(lambda: [e.fields for e in lab.events.of_kind("active_consumer_change")])
        assert changes and changes[-1]["is_active"]

    lab2, client2 = _inproc()
    consumers2 = {
        n: client2.subscribe(TOPIC, "fo", consumer_type=pl.ConsumerType.Failover, consumer_name=n)
        for n in ("c-a", "c-b")
    }
    lab2.advance(1000)  # the second consumer may have changed the active one: activeConsumerFailoverDelayTimeMillis
    p2 = client2.create_producer(TOPIC)
    for i in range(10):
        p2.send(f"m{i}".encode())
    assert len(consumers2[active_name].receiver_queue) == 10 and not consumers2[other].receiver_queue
    msgs = [consumers2[active_name].receive(0) for _ in range(10)]
    for m in msgs[:4]:
        consumers2[active_name].acknowledge(m)
    lab2.run_until_idle()
    consumers2[active_name].close()
    lab2.advance(1000)
    rest2 = [consumers2[other].receive(0) for _ in range(6)]
    assert [m.data() for m in rest2] == [f"m{i}".encode() for i in range(4, 10)]
    for m in rest2:
        consumers2[other].acknowledge(m)
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "fo")


@pytest.mark.parametrize("version", ["3.0", "4.0"])
def test_key_shared_keys_land_where_the_selector_says(version):
    names = ["c0", "c1", "c2"]
    keys = [f"key-{i}" for i in range(30)]
    with served_lab(version) as (lab, server), client_for(server) as client:
        consumers = {
            n: client.subscribe(TOPIC, "ks", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=n)
            for n in names
        }
        p = client.create_producer(TOPIC)
        for i, k in enumerate(keys):
            p.send(f"m{i}".encode(), partition_key=k)
        got = receive_all(consumers, len(keys))
        served_map = {m.partition_key(): who for who, m in got}
        expected = server.call(lambda: {k: sticky_selection(lab, TOPIC, "ks", k) for k in keys})
        for who, m in got:
            consumers[who].acknowledge(m)
        served = _wait_cursor(server, TOPIC, "ks", lambda cur: cur["markDeletePosition"] == "3:29", "all acks")
    assert served_map == expected
    assert len(set(served_map.values())) == 3

    lab2, client2 = _inproc(version)
    consumers2 = {
        n: client2.subscribe(TOPIC, "ks", consumer_type=pl.ConsumerType.KeyShared, consumer_name=n) for n in names
    }
    p2 = client2.create_producer(TOPIC)
    for i, k in enumerate(keys):
        p2.send(f"m{i}".encode(), partition_key=k)
    map2 = {}
    for n, c in consumers2.items():
        while c.receiver_queue:
            m = c.receive(0)
            map2[m.partition_key()] = n
            c.acknowledge(m)
    lab2.run_until_idle()
    assert served_map == map2
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "ks")


def test_key_shared_sticky_ranges():
    ranges = {"low": [(0, 32767)], "high": [(32768, 65535)]}
    keys = [f"k{i}" for i in range(20)]
    with served_lab() as (lab, server), client_for(server) as client:
        consumers = {
            n: client.subscribe(
                TOPIC,
                "st",
                consumer_type=pulsar.ConsumerType.KeyShared,
                consumer_name=n,
                key_shared_policy=pulsar.ConsumerKeySharedPolicy(pulsar.KeySharedMode.Sticky, sticky_ranges=r),
            )
            for n, r in ranges.items()
        }
        p = client.create_producer(TOPIC)
        for k in keys:
            p.send(k.encode(), partition_key=k)
        got = receive_all(consumers, len(keys))
        expected = server.call(lambda: {k: sticky_selection(lab, TOPIC, "st", k) for k in keys})
        assert {m.partition_key(): who for who, m in got} == expected
        hashes = {k: pl.murmur3_32(k) % 65536 for k in keys}
        assert all((hashes[k] <= 32767) == (who == "low") for k, who in expected.items())


# --- batches and acks -------------------------------------------------------------------------------------
def test_batch_index_acks_move_the_cursor_as_in_process_acks_do():
    conf = {"acknowledgmentAtBatchIndexLevelEnabled": True}
    with served_lab(broker_config=conf) as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "bi", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True)
        p = client.create_producer(
            TOPIC, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=60_000
        )
        for i in range(10):
            p.send_async(f"m{i}".encode(), None)
        p.flush()
        msgs = [c.receive(RECEIVE_MS) for _ in range(10)]
        assert [m.message_id().batch_index() for m in msgs] == list(range(10))
        for m in msgs[::2]:
            c.acknowledge(m)
        wait_until(lambda: batch_acks(server.snapshot(), TOPIC, "bi"), what="the batch-index acks")
        served_partial = batch_acks(server.snapshot(), TOPIC, "bi")
        served_partial_cursor = cursor_state(server.stats_internal(TOPIC), "bi")
        for m in msgs[1::2]:
            c.acknowledge(m)
        served = _wait_cursor(server, TOPIC, "bi", lambda cur: cur["markDeletePosition"] == "3:0", "the whole batch")
        assert (
            server.call(lambda: lab.service.topics[TOPIC].ledger.entries_of(3)[0].metadata.num_messages_in_batch) == 10
        )

    lab2, client2 = _inproc(broker_config=conf)
    c2 = client2.subscribe(TOPIC, "bi", consumer_type=pl.ConsumerType.Shared, batch_index_ack_enabled=True)
    p2 = client2.create_producer(TOPIC, batching_enabled=True, batching_max_messages=10)
    for i in range(10):
        p2.send_async(f"m{i}".encode(), None)
    p2.flush()
    msgs2 = [c2.receive(0) for _ in range(10)]
    for m in msgs2[::2]:
        c2.acknowledge(m)
    lab2.run_until_idle()
    assert served_partial == batch_acks(snapshot(lab2), TOPIC, "bi") == [(3, 0, (0, 2, 4, 6, 8))]
    assert served_partial_cursor == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "bi")
    for m in msgs2[1::2]:
        c2.acknowledge(m)
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "bi")


def test_batched_entries_are_acked_whole_without_batch_index_acks():
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "b", consumer_type=pulsar.ConsumerType.Shared)
        p = client.create_producer(
            TOPIC, batching_enabled=True, batching_max_messages=5, batching_max_publish_delay_ms=60_000
        )
        for i in range(15):
            p.send_async(f"m{i}".encode(), None)
        p.flush()
        msgs = [c.receive(RECEIVE_MS) for _ in range(15)]
        for m in msgs[:5] + msgs[10:12]:  # the first batch whole, part of the third
            c.acknowledge(m)
        _wait_cursor(server, TOPIC, "b", lambda cur: cur["markDeletePosition"] == "3:0", "the first batch")
        # closing flushes the client's grouped acks before its CloseConsumer on the same connection: once it is
        # answered, the server has seen every ack the client sent, a wrongly sent one of the partial batch too
        c.close()
        served = cursor_state(server.stats_internal(TOPIC), "b")

    lab2, client2 = _inproc()
    c2 = client2.subscribe(TOPIC, "b", consumer_type=pl.ConsumerType.Shared)
    p2 = client2.create_producer(TOPIC, batching_enabled=True, batching_max_messages=5)
    for i in range(15):
        p2.send_async(f"m{i}".encode(), None)
    p2.flush()
    msgs2 = [c2.receive(0) for _ in range(15)]
    for m in msgs2[:5] + msgs2[10:12]:
        c2.acknowledge(m)
    c2.close()
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "b")
    assert served["markDeletePosition"] == "3:0" and served["individuallyDeletedMessages"] == "[]"


# --- redelivery ----------------------------------------------------------------------------------------------
def _inprocess_redelivered_three_times() -> dict:
    """Shared: receive 3, ask the broker to redeliver them twice (counts 1 and 2), then ack - the cursor state
    the client's nack / ack timeout + dead-letter run ends in (it acks the originals after dead-lettering)."""
    lab, client = _inproc()
    client.subscribe(f"{TOPIC}-s-DLQ", "dlq-reader")  # topics created in the served run's order (ledger ids)
    c = client.subscribe(TOPIC, "s", consumer_type=pl.ConsumerType.Shared)
    p = client.create_producer(TOPIC)
    for i in range(3):
        p.send(f"n{i}".encode())
    counts = []
    for _ in range(3):
        msgs = [c.receive(0) for _ in range(3)]
        counts.extend(m.redelivery_count() for m in msgs)
        if len(counts) < 9:
            c.redeliver_unacknowledged_messages()
    for m in msgs:
        c.acknowledge(m)
    lab.run_until_idle()
    assert sorted(counts) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    return cursor_state(lab.admin.topics.stats_internal(TOPIC), "s")


def test_negative_acks_redeliver_with_rising_counts_then_dead_letter():
    with served_lab() as (lab, server), client_for(server) as client:
        dlq = client.subscribe(f"{TOPIC}-s-DLQ", "dlq-reader")
        c = client.subscribe(
            TOPIC,
            "s",
            consumer_type=pulsar.ConsumerType.Shared,
            negative_ack_redelivery_delay_ms=100,
            dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2),
        )
        p = client.create_producer(TOPIC)
        for i in range(3):
            p.send(f"n{i}".encode())
        seen: dict[bytes, list[int]] = {}
        while sum(len(v) for v in seen.values()) < 9:
            m = c.receive(RECEIVE_MS)
            seen.setdefault(m.data(), []).append(m.redelivery_count())
            c.negative_acknowledge(m)
        dead = [dlq.receive(RECEIVE_MS) for _ in range(3)]
        served = _wait_cursor(
            server,
            TOPIC,
            "s",
            lambda cur: cur["markDeletePosition"] == "4:2",
            "the client to ack what it dead-lettered",
        )
    assert seen == {f"n{i}".encode(): [0, 1, 2] for i in range(3)}
    assert sorted(m.data() for m in dead) == [b"n0", b"n1", b"n2"]
    assert all(m.properties()["REAL_TOPIC"] == TOPIC and "ORIGIN_MESSAGE_ID" in m.properties() for m in dead)
    assert served == _inprocess_redelivered_three_times()


def test_ack_timeout_redelivers_then_dead_letters():
    with served_lab() as (lab, server), client_for(server) as client:
        dlq = client.subscribe(f"{TOPIC}-s-DLQ", "dlq-reader")
        c = client.subscribe(
            TOPIC,
            "s",
            consumer_type=pulsar.ConsumerType.Shared,
            unacked_messages_timeout_ms=10_000,
            dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=1),
        )
        p = client.create_producer(TOPIC)
        p.send(b"late")
        first = c.receive(RECEIVE_MS)
        again = c.receive(15_000)  # the ack timeout (10-11 s) redelivers it
        dead = dlq.receive(15_000)  # ... and the next one dead-letters it
        served = _wait_cursor(
            server,
            TOPIC,
            "s",
            lambda cur: cur["markDeletePosition"] == "4:0",
            "the client to ack what it dead-lettered",
        )
        redeliveries = server.call(lambda: [e.fields["requested"] for e in lab.events.of_kind("redeliver_ids")])
    assert (first.redelivery_count(), again.redelivery_count()) == (0, 1)
    # one REDELIVER(ids) from the ack timeout; at the second timeout the client dead-letters instead
    assert dead.data() == b"late" and redeliveries == [1]
    lab2, client2 = _inproc()
    client2.subscribe(f"{TOPIC}-s-DLQ", "dlq-reader")
    c2 = client2.subscribe(TOPIC, "s", consumer_type=pl.ConsumerType.Shared)
    client2.create_producer(TOPIC).send(b"late")
    c2.receive(0)
    c2.redeliver_unacknowledged_messages()
    c2.acknowledge(c2.receive(0))
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "s")


# --- delivery time -------------------------------------------------------------------------------------------
def test_delayed_messages_arrive_at_once_on_exclusive():
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "ex")
        p = client.create_producer(TOPIC)
        p.send(b"later", deliver_after=timedelta(seconds=60))
        m = c.receive(RECEIVE_MS)  # before its delivery time: the lab's clock below says so
        assert m.data() == b"later"
        c.acknowledge(m)
        served = _wait_cursor(server, TOPIC, "ex", lambda cur: cur["markDeletePosition"] == "3:0", "the ack")
        deliver_at = server.call(lambda: lab.service.topics[TOPIC].ledger.entries_of(3)[0].metadata.deliver_at_time)
        now = server.call(lab.now)
        assert now < deliver_at <= now + 60_000  # on the lab's clock

    lab2, client2 = _inproc()
    c2 = client2.subscribe(TOPIC, "ex")
    client2.create_producer(TOPIC).send(b"later", deliver_after=timedelta(seconds=60))
    c2.acknowledge(c2.receive(0))
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "ex")


# --- connections ------------------------------------------------------------------------------------------
def test_a_reconnect_after_the_server_drops_the_socket_loses_nothing():
    n = 200
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "rc", consumer_type=pulsar.ConsumerType.Shared)
        p = client.create_producer(TOPIC)
        results: list[str] = []
        for i in range(n):
            p.send_async(f"m{i}".encode(), lambda res, mid: results.append(res))
            if i == n // 2:
                assert server.drop_connections() >= 1
        p.flush()
        wait_until(lambda: len(results) == n, what="every send to complete")
        assert set(results) == {pulsar.Result.Ok}
        seen: set[bytes] = set()
        deadline = time.monotonic() + 30
        while len(seen) < n and time.monotonic() < deadline:
            try:
                m = c.receive(500)
            except pulsar.Timeout:
                continue
            seen.add(m.data())
            c.acknowledge(m)
        assert seen == {f"m{i}".encode() for i in range(n)}
        lce = server.call(lambda: str(lab.service.topics[TOPIC].ledger.last_confirmed_entry))
        served = _wait_cursor(server, TOPIC, "rc", lambda cur: cur["markDeletePosition"] == lce, "every ack")
        assert any("drop_connections" in cc.reason for cc in server.closed_connections)
    # in process: a consumer that loses its connection with acks in flight, then subscribes again
    lab2, client2 = _inproc()
    c2 = client2.subscribe(TOPIC, "rc", consumer_type=pl.ConsumerType.Shared)
    p2 = client2.create_producer(TOPIC)
    for i in range(n):
        p2.send(f"m{i}".encode())
    for _ in range(n // 2):
        c2.acknowledge(c2.receive(0))
    c2.crash()
    c2 = client2.subscribe(TOPIC, "rc", consumer_type=pl.ConsumerType.Shared)
    while c2.receiver_queue:
        c2.acknowledge(c2.receive(0))
    lab2.run_until_idle()
    inproc = cursor_state(lab2.admin.topics.stats_internal(TOPIC), "rc")
    # the served run may hold duplicates of sends whose receipts the drop lost: compare the shape
    assert served["individuallyDeletedMessages"] == inproc["individuallyDeletedMessages"] == "[]"
    assert served["numberOfEntriesSinceFirstNotAckedMessage"] == inproc["numberOfEntriesSinceFirstNotAckedMessage"]
    assert served["totalNonContiguousDeletedMessagesRange"] == inproc["totalNonContiguousDeletedMessagesRange"] == 0


def test_a_re_subscribed_exclusive_consumer_gets_again_only_what_the_broker_had_not_seen_acked():
    """At-least-once, as the soak harness counts it (`DuplicateCause.REDELIVERED`): after its connection closes, the
    consumer gets again, under the same ids, the messages it had received but not acknowledged, and never one whose
    ack the broker had applied (`PersistentDispatcherSingleActiveConsumer` rewinds to the mark-delete position)."""
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "again", consumer_type=pulsar.ConsumerType.Exclusive)
        p = client.create_producer(TOPIC)
        for i in range(20):
            p.send(f"m{i}".encode())
        first = [c.receive(RECEIVE_MS) for _ in range(20)]
        for m in first[:10]:
            c.acknowledge(m)
        tenth = first[9].message_id()
        _wait_cursor(
            server,
            TOPIC,
            "again",
            lambda cur: cur["markDeletePosition"] == f"{tenth.ledger_id()}:{tenth.entry_id()}",
            "the first ten acks",
        )
        assert server.drop_connections() >= 1
        again = [c.receive(RECEIVE_MS) for _ in range(10)]

        def ids(msgs: list) -> list[tuple[int, int]]:
            return [(m.message_id().ledger_id(), m.message_id().entry_id()) for m in msgs]

        assert [m.data() for m in again] == [f"m{i}".encode() for i in range(10, 20)]
        assert ids(again) == ids(first[10:])
        for m in again:
            c.acknowledge(m)
        last = first[-1].message_id()
        _wait_cursor(
            server,
            TOPIC,
            "again",
            lambda cur: cur["markDeletePosition"] == f"{last.ledger_id()}:{last.entry_id()}",
            "every ack",
        )
        p.send(b"after")
        assert c.receive(RECEIVE_MS).data() == b"after"  # nothing else was waiting before it


# --- the rest of the command set --------------------------------------------------------------------------
def test_seek_by_message_id_and_by_time():
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "sk", initial_position=pulsar.InitialPosition.Earliest)
        p = client.create_producer(TOPIC)
        ids = [p.send(f"m{i}".encode()) for i in range(5)]
        for _ in range(5):
            c.acknowledge(c.receive(RECEIVE_MS))
        _wait_cursor(server, TOPIC, "sk", lambda cur: cur["markDeletePosition"] == "3:4", "the acks")
        c.seek(ids[2])
        after_id = c.receive(RECEIVE_MS).data()
        cur = server.stats_internal(TOPIC)["cursors"]["sk"]
        assert cur["markDeletePosition"] == "3:1"  # resetCursor: the entry before the seek position
        c.seek(0)  # a publish time before every message: back to the first one
        assert c.receive(RECEIVE_MS).data() == b"m0"
        resets = server.call(
            lambda: [(e.fields["ledger"], e.fields["entry"]) for e in lab.events.of_kind("cursor_reset")]
        )
    assert after_id in (b"m2", b"m3")  # the client may drop the seek id itself when not inclusive
    assert resets == [(3, 1), (3, -1)]


def test_seek_to_a_messages_own_publish_time_reads_that_message_first():
    """``seek(msg.publish_timestamp())`` starts at ``msg``, whatever else shares its millisecond: Pulsar resets to
    the first entry published at or after t. The sends are spaced so each message has its own millisecond and
    a tie with the neighbour cannot hide the rule."""
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "st", initial_position=pulsar.InitialPosition.Earliest)
        p = client.create_producer(TOPIC)
        for i in range(5):
            p.send(f"m{i}".encode())
            time.sleep(0.005)
        stamps = []
        for _ in range(5):
            m = c.receive(RECEIVE_MS)
            stamps.append(m.publish_timestamp())
            c.acknowledge(m)
        assert len(set(stamps)) == 5
        got = []
        for k in (3, 1):
            c.seek(stamps[k])
            got.append(c.receive(RECEIVE_MS).data())
        c.seek(stamps[4] + 1)  # after every message: nothing to read
        with pytest.raises(pulsar.Timeout):
            c.receive(200)
    assert got == [b"m3", b"m1"]


def test_reader_partitions_regex_last_message_id_and_unsubscribe():
    with served_lab() as (lab, server), client_for(server) as client:
        server.call(lab.admin.topics.create_partitioned_topic, "parted", 3)
        p = client.create_producer("parted")
        for i in range(9):
            p.send(f"p{i}".encode(), partition_key=f"k{i}")
        c = client.subscribe("parted", "all", initial_position=pulsar.InitialPosition.Earliest)
        assert sorted(c.receive(RECEIVE_MS).data() for _ in range(9)) == [f"p{i}".encode() for i in range(9)]

        q = client.create_producer(TOPIC)
        for i in range(3):
            q.send(f"o{i}".encode())
        reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
        read = []
        while reader.has_message_available():
            read.append(reader.read_next(RECEIVE_MS).data())
        assert read == [b"o0", b"o1", b"o2"]
        subs_while_reading = server.call(lab.admin.topics.subscriptions, TOPIC)
        reader.close()
        wait_until(lambda: server.call(lab.admin.topics.subscriptions, TOPIC) == [], what="the reader's cursor to go")
        assert len(subs_while_reading) == 1 and subs_while_reading[0].startswith("reader-")

        rx = client.subscribe(
            re.compile("persistent://public/default/ord.*"), "rx", initial_position=pulsar.InitialPosition.Earliest
        )
        assert sorted(rx.receive(RECEIVE_MS).data() for _ in range(3)) == [b"o0", b"o1", b"o2"]

        u = client.subscribe(TOPIC, "gone", initial_position=pulsar.InitialPosition.Earliest)
        last = u.get_last_message_id()
        assert (last.ledger_id(), last.entry_id()) == (
            server.call(
                lambda: (
                    lab.service.topics[TOPIC].ledger.last_confirmed_entry.ledger_id,
                    lab.service.topics[TOPIC].ledger.last_confirmed_entry.entry_id,
                )
            )
        )
        u.unsubscribe()
        assert "gone" not in server.call(lab.admin.topics.subscriptions, TOPIC)


# --- chunking (max_message_size is process-wide in the client: its own process) ----------------------
CHUNK_CLIENT = r"""
import hashlib, os, sys, time
import pulsar
url, topic, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = pulsar.Client(url, operation_timeout_seconds=5, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull))
consumer = client.subscribe(topic, "ch")
producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
payload = bytes(i % 251 for i in range(size))
sent = producer.send(payload)
msg = consumer.receive(5000)
consumer.acknowledge(msg)
consumer.close()  # sends the grouped ack before its CloseConsumer, and returns once the server answered that
print(hashlib.sha256(msg.data()).hexdigest() == hashlib.sha256(payload).hexdigest(), str(sent))
client.close()
"""


def test_chunked_payloads_round_trip_under_a_small_max_message_size():
    from serve_support import run_client_script

    with served_lab(broker_config={"maxMessageSize": 1024}) as (lab, server):
        out = run_client_script(CHUNK_CLIENT, server.url, TOPIC, "5120")
        equal, sent_id = out.split()
        assert equal == "True"

        def stored():
            entries = lab.service.topics[TOPIC].ledger.entries_of(3)
            return [(e.metadata, e.payloads) for e in entries]

        chunks = server.call(stored)
        served = cursor_state(server.stats_internal(TOPIC), "ch")
    n = len(chunks)
    assert n > 5 and sent_id.startswith("(3,0,") and f"(3,{n - 1}," in sent_id  # first;last chunk ids
    assert [m.chunk_id for m, _ in chunks] == list(range(n))
    assert {(m.uuid, m.num_chunks_from_msg, m.total_chunk_msg_size) for m, _ in chunks} == {
        (chunks[0][0].uuid, n, 5120)
    }
    assert b"".join(p[0] for _, p in chunks) == bytes(i % 251 for i in range(5120))
    assert served["markDeletePosition"] == f"3:{n - 1}" and served["individuallyDeletedMessages"] == "[]"

    # in process: the same chunk entries, published through the broker's SEND surface; the in-process consumer
    # reassembles them into one message whose ack expands to every chunk
    lab2 = pl.Lab(version="4.0", seed=1, broker_config={"maxMessageSize": 1024})
    c2 = lab2.client().subscribe(TOPIC, "ch")
    handle = lab2.service.register_producer(lab2.service.new_producer_id(), chunks[0][0].producer_name, TOPIC)
    for meta, payloads in chunks:
        lab2.service.publish(handle, pl.messages.EntryData(meta, [(None, payloads[0])]))
    whole = c2.receive(0)
    assert whole.data() == bytes(i % 251 for i in range(5120)) and str(whole.message_id()) == f"3:0:-1;3:{n - 1}:-1"
    c2.acknowledge(whole)
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "ch")


def test_a_partly_acked_batch_goes_to_the_next_consumer_with_its_ack_set():
    conf = {"acknowledgmentAtBatchIndexLevelEnabled": True}
    with served_lab(broker_config=conf) as (lab, server), client_for(server) as client:
        a = client.subscribe(
            TOPIC, "bi", consumer_type=pulsar.ConsumerType.Shared, consumer_name="a", batch_index_ack_enabled=True
        )
        p = client.create_producer(
            TOPIC, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=60_000
        )
        for i in range(10):
            p.send_async(f"m{i}".encode(), None)
        p.flush()
        msgs = [a.receive(RECEIVE_MS) for _ in range(10)]
        for m in msgs[:5]:
            a.acknowledge(m)
        wait_until(
            lambda: batch_acks(server.snapshot(), TOPIC, "bi") == [(3, 0, (0, 1, 2, 3, 4))], what="the batch-index acks"
        )
        a.close()
        b = client.subscribe(
            TOPIC, "bi", consumer_type=pulsar.ConsumerType.Shared, consumer_name="b", batch_index_ack_enabled=True
        )
        rest = [b.receive(RECEIVE_MS) for _ in range(5)]
        with pytest.raises(pulsar.Timeout):
            b.receive(300)  # the acknowledged indexes do not come back
        for m in rest:
            b.acknowledge(m)
        served = _wait_cursor(server, TOPIC, "bi", lambda cur: cur["markDeletePosition"] == "3:0", "the batch")
        dispatches = server.call(lambda: len(lab.events.of_kind("dispatched")))
    assert [m.data() for m in rest] == [f"m{i}".encode() for i in range(5, 10)]
    assert [m.message_id().batch_index() for m in rest] == [5, 6, 7, 8, 9]
    assert dispatches == 2  # the batch to a, then its unacknowledged part to b

    lab2, client2 = _inproc(broker_config=conf)
    a2 = client2.subscribe(
        TOPIC, "bi", consumer_type=pl.ConsumerType.Shared, consumer_name="a", batch_index_ack_enabled=True
    )
    p2 = client2.create_producer(TOPIC, batching_enabled=True, batching_max_messages=10)
    for i in range(10):
        p2.send_async(f"m{i}".encode(), None)
    p2.flush()
    for m in [a2.receive(0) for _ in range(10)][:5]:
        a2.acknowledge(m)
    lab2.run_until_idle()
    a2.close()
    b2 = client2.subscribe(
        TOPIC, "bi", consumer_type=pl.ConsumerType.Shared, consumer_name="b", batch_index_ack_enabled=True
    )
    rest2 = [b2.receive(0) for _ in range(len(b2.receiver_queue))]
    assert [m.data() for m in rest2] == [m.data() for m in rest]
    for m in rest2:
        b2.acknowledge(m)
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "bi")


def test_a_negative_ack_on_exclusive_redelivers_everything_unacked():
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "ex", negative_ack_redelivery_delay_ms=100)
        p = client.create_producer(TOPIC)
        for i in range(3):
            p.send(f"m{i}".encode())
        first = [c.receive(RECEIVE_MS) for _ in range(3)]
        c.negative_acknowledge(first[1])
        again = [c.receive(RECEIVE_MS) for _ in range(3)]
        c.acknowledge_cumulative(again[-1])
        served = _wait_cursor(server, TOPIC, "ex", lambda cur: cur["markDeletePosition"] == "3:2", "the ack")
        requests = server.call(lambda: [e.fields["messages"] for e in lab.events.of_kind("redeliver_requested")])
        rewinds = server.call(lambda: len(lab.events.of_kind("cursor_rewound")))
    assert [m.data() for m in again] == [b"m0", b"m1", b"m2"]  # REDELIVER without ids: the cursor rewinds
    assert [m.redelivery_count() for m in again] == [0, 0, 0]  # Exclusive keeps no redelivery counts
    assert requests == [-1] and rewinds >= 2

    lab2, client2 = _inproc()
    c2 = client2.subscribe(TOPIC, "ex")
    p2 = client2.create_producer(TOPIC)
    for i in range(3):
        p2.send(f"m{i}".encode())
    [c2.receive(0) for _ in range(3)]
    c2.redeliver_unacknowledged_messages()
    again2 = [c2.receive(0) for _ in range(3)]
    assert [(m.data(), m.redelivery_count()) for m in again2] == [(m.data(), m.redelivery_count()) for m in again]
    c2.acknowledge_cumulative(again2[-1])
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "ex")
