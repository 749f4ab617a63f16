"""Topic compaction with the real pulsar-client against ``pulsarlab serve``: ``is_read_compacted`` consumers and
readers see the latest value per key up to the horizon (null values delete), then the topic's tail."""

from __future__ import annotations

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab

pytestmark = pytest.mark.serve


def _drain(consumer, wait_ms: int = 300) -> list[tuple[str, bytes]]:
    out = []
    while True:
        try:
            m = consumer.receive(wait_ms)
        except pulsar.Timeout:
            return out
        out.append((m.partition_key(), m.data()))
        consumer.acknowledge(m)


def _compact(server, topic: str) -> dict:
    with server.lock:
        server.lab.admin.topics.trigger_compaction(topic)
        return server.lab.admin.topics.compaction_status(topic)


def test_read_compacted_consumer_sees_latest_per_key_then_the_tail():
    topic = "persistent://public/default/compacted"
    with served_lab() as (lab, server), client_for(server) as client:
        client.subscribe(topic, "view", is_read_compacted=True).close()
        p = client.create_producer(topic, batching_enabled=False)
        for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k3", b"x")]:
            p.send(value, partition_key=key)
        p.send(None, partition_key="k3")  # a null value: deletes k3
        p.send(b"no key")
        with server.lock:
            assert lab.admin.topics.compaction_status(topic) == {"status": "NOT_RUN", "lastError": ""}
        assert _compact(server, topic) == {"status": "SUCCESS", "lastError": ""}
        p.send(b"tail", partition_key="k1")
        view = client.subscribe(topic, "view", is_read_compacted=True)
        assert _drain(view) == [("k2", b"b"), ("k1", b"c"), ("k1", b"tail")]
        full = client.subscribe(topic, "full", initial_position=pulsar.InitialPosition.Earliest)
        assert len(_drain(full)) == 7
        reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        got = []
        while reader.has_message_available():
            m = reader.read_next(RECEIVE_MS)
            got.append((m.partition_key(), m.data()))
        assert got == [("k2", b"b"), ("k1", b"c"), ("k1", b"tail")]
        with server.lock:
            assert lab.admin.topics.stats(topic)["compaction"]["lastCompactionRemovedEventCount"] == 4


def test_compaction_keeps_the_latest_messages_of_a_batch():
    topic = "persistent://public/default/compacted-batch"
    with served_lab() as (lab, server), client_for(server) as client:
        client.subscribe(topic, "view", is_read_compacted=True).close()
        p = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=1000)
        for key, value in [("a", b"1"), ("b", b"2"), ("a", b"3"), ("c", b"4")]:
            p.send_async(value, None, partition_key=key)
        p.flush()
        _compact(server, topic)
        view = client.subscribe(topic, "view", is_read_compacted=True)
        assert _drain(view) == [("b", b"2"), ("a", b"3"), ("c", b"4")]


def test_read_compacted_is_refused_on_a_shared_subscription():
    with served_lab() as (lab, server), client_for(server) as client:
        with pytest.raises(pulsar.PulsarException):
            client.subscribe(
                "persistent://public/default/x", "sh", consumer_type=pulsar.ConsumerType.Shared, is_read_compacted=True
            )
