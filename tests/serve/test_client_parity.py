"""One pulsar-client program, run unchanged against ``lab.client()`` and against the real ``pulsar.Client``
talking to ``pulsarlab serve``: the same observable results (message ids, readers, seeks, partitions)."""

from __future__ import annotations

from typing import Any

import pulsar
import pytest
from serve_support import client_for, served_lab

import pulsarlab as pl
from pulsarlab.errors import IllegalArgumentException

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/parity"
PARTITIONED = "persistent://public/default/parity-p"
WAIT_MS = 5000


def read_available(reader: Any) -> list[bytes]:
    """Everything a reader has now, by ``has_message_available`` / ``read_next``."""
    out = []
    while reader.has_message_available():
        out.append(reader.read_next(WAIT_MS).data())
    return out


def pulsar_app(client: Any) -> dict[str, Any]:
    """A pulsar-client application: produce, inspect message ids, read with readers, seek a consumer and a
    reader, use a partitioned topic. Returns what it observed."""
    seen: dict[str, Any] = {}
    producer = client.create_producer(TOPIC, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode(), partition_key=f"k{i % 2}") for i in range(6)]
    first_ledger = ids[0].ledger_id()
    seen["ids"] = [(m.ledger_id() - first_ledger, m.entry_id(), m.partition(), m.batch_index()) for m in ids]
    seen["serialize_round_trip"] = [type(m).deserialize(m.serialize()) == m for m in ids]
    seen["serialized"] = [m.serialize().hex() for m in ids]
    seen["earliest"] = pulsar.MessageId.earliest.serialize().hex()

    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    seen["reader_earliest"] = read_available(reader)
    reader.seek(ids[3])
    seen["reader_after_seek"] = reader.read_next(WAIT_MS).data()
    reader.close()
    after = client.create_reader(TOPIC, ids[2])
    seen["reader_after_id"] = read_available(after)
    after.close()
    inclusive = client.create_reader(TOPIC, ids[2], start_message_id_inclusive=True)
    seen["reader_from_id"] = read_available(inclusive)
    inclusive.close()
    tail = client.create_reader(TOPIC, pulsar.MessageId.latest, reader_name="tail")
    seen["latest_before"] = tail.has_message_available()
    ids.append(producer.send(b"m6"))
    seen["latest_read"] = tail.read_next(WAIT_MS).data()
    seen["latest_after"] = tail.has_message_available()
    seen["reader_topic"] = tail.topic()
    tail.close()

    consumer = client.subscribe(
        TOPIC,
        "parity-sub",
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    got = [consumer.receive(WAIT_MS) for _ in range(7)]
    for m in got:
        consumer.acknowledge(m)
    seen["consumed"] = [m.data() for m in got]
    seen["consumed_ids_equal_sent"] = [m.message_id() == i for m, i in zip(got, ids)]
    seen["consumed_id_parts"] = [(m.message_id().partition(), m.message_id().batch_index()) for m in got]
    seen["topic_name"] = got[0].topic_name()
    consumer.seek(ids[4])
    seen["consumer_after_seek"] = consumer.receive(WAIT_MS).data()
    at = got[5].publish_timestamp()
    first = next(i for i, m in enumerate(got) if m.publish_timestamp() >= at)
    consumer.seek(at)
    seen["time_seek_lands_on_first_at_or_after"] = consumer.receive(WAIT_MS).data() == got[first].data()
    consumer.close()

    seen["partitions"] = client.get_topic_partitions(PARTITIONED)
    seen["plain_partitions"] = client.get_topic_partitions(TOPIC)
    pproducer = client.create_producer(PARTITIONED, batching_enabled=False)
    pids = [pproducer.send(f"p{i}".encode(), partition_key=f"key-{i}") for i in range(8)]
    pconsumer = client.subscribe(PARTITIONED, "parity-psub", initial_position=pulsar.InitialPosition.Earliest)
    received = [pconsumer.receive(WAIT_MS) for _ in range(8)]
    seen["partition_of_sent"] = sorted((m.partition(), m.entry_id()) for m in pids)
    seen["partition_of_received"] = sorted(
        (m.message_id().partition(), m.message_id().entry_id(), m.data()) for m in received
    )
    for m in received:
        pconsumer.acknowledge(m)
    pconsumer.close()
    producer.close()
    pproducer.close()
    return seen


def test_the_same_program_sees_the_same_with_the_lab_client_and_the_real_client() -> None:
    lab = pl.Lab()
    lab.admin.topics.create_partitioned_topic(PARTITIONED, 3)
    client = lab.client()
    in_process = pulsar_app(client)
    client.close()
    with served_lab() as (served, server):
        with server.lock:
            served.admin.topics.create_partitioned_topic(PARTITIONED, 3)
        with client_for(server) as real:
            over_the_wire = pulsar_app(real)
    assert in_process == over_the_wire
    # what they agree on is what Pulsar does
    assert over_the_wire["reader_earliest"] == [f"m{i}".encode() for i in range(6)]
    assert over_the_wire["reader_after_seek"] == b"m4"
    assert over_the_wire["reader_after_id"] == [b"m3", b"m4", b"m5"]
    assert over_the_wire["reader_from_id"] == [b"m2", b"m3", b"m4", b"m5"]
    assert over_the_wire["latest_before"] is False and over_the_wire["latest_read"] == b"m6"
    assert over_the_wire["consumer_after_seek"] == b"m5"
    assert all(over_the_wire["serialize_round_trip"]) and all(over_the_wire["consumed_ids_equal_sent"])
    assert over_the_wire["time_seek_lands_on_first_at_or_after"] is True
    assert len(over_the_wire["partitions"]) == 3 and over_the_wire["plain_partitions"] == [TOPIC]


def test_lab_message_ids_accept_the_real_clients_and_refuse_garbage() -> None:
    real = pulsar.MessageId(2, 7, 3, 4)  # (partition, ledger, entry, batch index)
    mid = pl.MessageId.of(real)
    assert (mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()) == (7, 3, 2, 4)
    assert mid.serialize() == real.serialize()
    assert pl.MessageId.deserialize(real.serialize()) == mid
    assert pl.MessageId.earliest.serialize() == pulsar.MessageId.earliest.serialize()
    assert pl.MessageId.latest.serialize() == pulsar.MessageId.latest.serialize()
    assert mid.partition == 2 and mid.batch_index + 1 == 5  # still ints for the model
    with pytest.raises(ValueError):
        pl.MessageId.deserialize(b"\x08")
    with pytest.raises(ValueError):
        pl.MessageId.deserialize(b"\x10\x01")  # no ledger id
    with pytest.raises(TypeError):
        pl.MessageId.deserialize("0801")  # type: ignore[arg-type]


def test_reader_rules_in_process() -> None:
    lab = pl.Lab()
    lab.admin.topics.create_partitioned_topic("p", 2)
    client = lab.client()
    with pytest.raises(IllegalArgumentException):
        client.create_reader("p", pl.MessageId(1, 0, 0))
    reader = client.create_reader("p", pl.MessageId.earliest)
    assert reader.has_message_available() is False
    with pytest.raises(TypeError):
        client.create_reader("t", pl.MessageId.earliest, no_such_option=1)
    names = [s for s in lab.admin.topics.subscriptions("p")]
    assert len(names) == 1 and names[0].startswith("reader-")
    reader.close()
    assert lab.admin.topics.subscriptions("p") == []
    consumer = client.subscribe("p", "s")
    with pytest.raises(IllegalArgumentException):
        consumer.seek(pl.MessageId(1, 0, 0))


def test_seek_by_id_is_after_the_id_for_the_cpp_client_and_at_it_for_java() -> None:
    for library, expected in ((pl.ClientLibrary.CPP, [b"m3", b"m4"]), (pl.ClientLibrary.JAVA, [b"m2", b"m3", b"m4"])):
        lab = pl.Lab()
        client = lab.client(client_library=library)
        consumer = client.subscribe("t", "s", initial_position=pl.InitialPosition.Earliest)
        producer = client.create_producer("t")
        ids = [producer.send(f"m{i}".encode()) for i in range(5)]
        for _ in range(5):
            consumer.acknowledge(consumer.receive(timeout_millis=0))
        consumer.seek(ids[2])
        assert [m.data() for m in consumer.receiver_queue] == expected, library
        consumer.seek(pl.MessageId.earliest)
        assert len(consumer.receiver_queue) == 5


def test_a_reader_inside_a_batch_starts_after_the_batch_index() -> None:
    lab = pl.Lab()
    client = lab.client()
    producer = client.create_producer("b", batching_enabled=True, batching_max_messages=4)
    for i in range(4):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    first = client.create_reader("b", pl.MessageId.earliest).read_next(0).message_id()
    assert first.batch_index() == 0
    inside = pl.MessageId(first.ledger_id(), first.entry_id(), first.partition(), 1)
    reader = client.create_reader("b", inside)
    assert reader.has_message_available()
    assert [reader.read_next(0).data() for _ in range(2)] == [b"m2", b"m3"]
    assert reader.has_message_available() is False
    inclusive = client.create_reader("b", inside, start_message_id_inclusive=True)
    assert inclusive.read_next(0).data() == b"m1"
