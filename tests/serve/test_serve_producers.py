"""The real pulsar-client's producer features against ``pulsarlab serve``: access modes, deduplication, namespaces.

Each test drives the real Python client (C++ 4.2 inside) against a lab served on a free loopback port and checks
what the client sees (its exceptions, ids, ``last_sequence_id``) and what the broker model holds.
"""

from __future__ import annotations

import threading

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab, wait_until

pytestmark = pytest.mark.serve

A = pulsar.ProducerAccessMode
TOPIC = "persistent://public/default/acc"


def _publishers(server, topic=TOPIC):
    with server.lock:
        return [(p["producerName"], p["accessMode"]) for p in server.lab.admin.topics.stats(topic)["publishers"]]


def test_exclusive_producer_refuses_others_with_pulsars_errors():
    with served_lab() as (lab, server), client_for(server) as client:
        client.create_producer(TOPIC, producer_name="p1", access_mode=A.Exclusive)
        with pytest.raises(pulsar.ProducerFenced):
            client.create_producer(TOPIC, producer_name="p2", access_mode=A.Exclusive)
        with pytest.raises(pulsar.ProducerBusy):
            client.create_producer(TOPIC, producer_name="p3")
        assert _publishers(server) == [("p1", "Exclusive")]


def test_wait_for_exclusive_blocks_until_the_holder_closes():
    with served_lab() as (lab, server), client_for(server) as client:
        p1 = client.create_producer(TOPIC, producer_name="p1", access_mode=A.Exclusive)
        made = []
        t = threading.Thread(
            target=lambda: made.append(client.create_producer(TOPIC, producer_name="w", access_mode=A.WaitForExclusive))
        )
        t.start()
        try:
            wait_until(lambda: server.stats(TOPIC)["waitingPublishers"] == 1, what="the second producer to be queued")
            assert made == []
            p1.send(b"a")
            p1.close()
            t.join(10)
        finally:
            t.join(10)
        assert len(made) == 1 and made[0].producer_name() == "w"
        made[0].send(b"b")
        assert _publishers(server) == [("w", "WaitForExclusive")]
        c = client.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        assert [c.receive(RECEIVE_MS).data() for _ in range(2)] == [b"a", b"b"]


def test_exclusive_with_fencing_fences_the_old_producer():
    with served_lab() as (lab, server), client_for(server) as client:
        p1 = client.create_producer(TOPIC, producer_name="p1", access_mode=A.Exclusive)
        p2 = client.create_producer(TOPIC, producer_name="p2", access_mode=A.ExclusiveWithFencing)
        with pytest.raises((pulsar.ProducerFenced, pulsar.AlreadyClosed)):
            p1.send(b"from the fenced producer")
        p2.send(b"from the fencer")
        assert _publishers(server) == [("p2", "ExclusiveWithFencing")]
        with server.lock:
            assert lab.admin.topics.stats(TOPIC)["msgInCounter"] == 1


def test_deduplication_drops_repeated_sequence_ids_and_reports_the_last_one():
    with served_lab() as (lab, server), client_for(server) as client:
        with server.lock:
            lab.admin.namespaces.set_deduplication_status("public/default", True)
        topic = "persistent://public/default/dedup"
        p = client.create_producer(topic, producer_name="named")
        assert p.last_sequence_id() == -1
        c = client.subscribe(topic, "s")
        for i in range(3):
            p.send(f"hello-{i}".encode(), sequence_id=i)
        assert p.last_sequence_id() == 2
        dup = p.send(b"hello-1", sequence_id=1)
        assert (dup.ledger_id(), dup.entry_id()) == (-1, -1)  # MessageDeduplication's Dup receipt
        p.send(b"hello-2", sequence_id=2)
        got = [c.receive(RECEIVE_MS).data() for _ in range(3)]
        assert got == [b"hello-0", b"hello-1", b"hello-2"]
        with pytest.raises(pulsar.Timeout):
            c.receive(200)
        p.close()
        again = client.create_producer(topic, producer_name="named")
        assert again.last_sequence_id() == 2
        again.send(b"hello-3")
        assert again.last_sequence_id() == 3
        assert c.receive(RECEIVE_MS).data() == b"hello-3"
        with server.lock:
            assert lab.admin.topics.stats(topic)["msgInCounter"] == 4


def test_sequence_continues_after_reconnection_only_with_deduplication():
    with served_lab() as (lab, server), client_for(server) as client:
        topic = "persistent://public/default/seq"
        p = client.create_producer(topic, producer_name="n")
        p.send(b"a")
        p.close()
        assert client.create_producer(topic, producer_name="n").last_sequence_id() == -1
        with server.lock:
            lab.admin.namespaces.set_deduplication_status("public/default", True)
        p = client.create_producer(topic, producer_name="m")
        for _ in range(4):
            p.send(b"x")
        p.close()
        assert client.create_producer(topic, producer_name="m").last_sequence_id() == 3


def test_a_missing_tenant_or_namespace_is_topic_not_found():
    with served_lab() as (lab, server), client_for(server) as client:
        with pytest.raises(pulsar.TopicNotFound):
            client.create_producer("persistent://acme/orders/t")
        with pytest.raises(pulsar.TopicNotFound):
            client.subscribe("persistent://acme/orders/t", "s")
        with server.lock:
            lab.admin.tenants.create_tenant("acme")
            lab.admin.namespaces.create_namespace("acme/orders")
        client.create_producer("persistent://acme/orders/t").send(b"now it exists")
        with server.lock:
            assert lab.admin.topics.list("acme/orders") == ["persistent://acme/orders/t"]


def test_a_custom_router_and_the_partition_in_received_message_ids():
    topic = "persistent://public/default/routed"
    with served_lab() as (lab, server), client_for(server) as client:
        with server.lock:
            lab.admin.topics.create_partitioned_topic(topic, 5)

        def router(msg, partitions):
            return 3 if msg.value().startswith(b"a") else 1

        p = client.create_producer(topic, message_router=router)
        sent = [p.send(v) for v in (b"a0", b"b0", b"a1")]
        assert [m.partition() for m in sent] == [3, 1, 3]
        c = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        got = {}
        for _ in range(3):
            m = c.receive(RECEIVE_MS)
            got.setdefault(m.message_id().partition(), []).append(m.data())
            assert m.topic_name() == f"{topic}-partition-{m.message_id().partition()}"
        assert got == {3: [b"a0", b"a1"], 1: [b"b0"]}
