"""The broker logs a producer's creation and close once, whichever way the producer came: the in-process client or
a real pulsar-client through ``pulsarlab serve`` (`pulsarlab.broker.producers`)."""

from __future__ import annotations

import pulsar
import pytest
from serve_support import client_for, served_lab

import pulsarlab as pl
from pulsarlab.client.producer import ProducerBusy

TOPIC = "persistent://public/default/life"


def _lifecycle(lab: pl.Lab) -> list[tuple[str, dict]]:
    return [(e.kind, dict(e.fields)) for e in lab.events.of_kind("producer_created", "producer_closed")]


def test_an_in_process_producer_is_logged_created_and_closed_once():
    lab = pl.Lab(version="4.0", seed=1)
    producer = lab.client().create_producer("life", producer_name="p", batching_enabled=True)
    producer.send(b"x")
    producer.close()
    producer.close()  # closing again logs nothing
    pid = producer._id
    assert _lifecycle(lab) == [
        ("producer_created", {"producer": pid, "name": "p", "topic": TOPIC, "batching": True}),
        ("producer_closed", {"producer": pid}),
    ]


def test_a_partitioned_in_process_producer_is_one_producer_even_across_a_restart():
    lab = pl.Lab(version="4.0", seed=1)
    lab.admin.topics.create_partitioned_topic("life", 3)
    producer = lab.client().create_producer("life", producer_name="p")
    lab.restart_broker()  # every partition registers again: the same producer
    producer.send(b"x")
    producer.close()
    kinds = [(kind, fields.get("topic")) for kind, fields in _lifecycle(lab)]
    assert kinds == [("producer_created", TOPIC), ("producer_closed", None)]


def test_a_fenced_producer_is_logged_closed_when_fenced_not_again_when_closed():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    first = client.create_producer("life", producer_name="first", access_mode=pl.ProducerAccessMode.Exclusive)
    second = client.create_producer(
        "life", producer_name="second", access_mode=pl.ProducerAccessMode.ExclusiveWithFencing
    )
    # the broker fences the holder out while it admits the fencer
    assert _lifecycle(lab)[:2] == [
        ("producer_created", {"producer": first._id, "name": "first", "topic": TOPIC, "batching": False}),
        ("producer_closed", {"producer": first._id}),
    ]
    assert [k for k, _ in _lifecycle(lab)] == ["producer_created", "producer_closed", "producer_created"]
    first.close()
    second.close()
    assert _lifecycle(lab)[3:] == [("producer_closed", {"producer": second._id})]


def test_a_refused_producer_is_not_logged():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    client.create_producer("life", producer_name="holder", access_mode=pl.ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerBusy):
        client.create_producer("life", producer_name="refused")
    assert [f["name"] for k, f in _lifecycle(lab) if k == "producer_created"] == ["holder"]


@pytest.mark.serve
def test_a_producer_through_serve_is_logged_created_and_closed_once():
    with served_lab() as (lab, server), client_for(server) as client:
        producer = client.create_producer(TOPIC, producer_name="remote")
        producer.send(b"x")
        producer.close()  # returns once the broker answered CLOSE_PRODUCER
        with server.lock:
            events = _lifecycle(lab)
    assert [k for k, _ in events] == ["producer_created", "producer_closed"]
    created, closed = events[0][1], events[1][1]
    assert created["name"] == "remote" and created["topic"] == TOPIC and created["batching"] is None
    assert closed == {"producer": created["producer"]}


@pytest.mark.serve
def test_a_producer_fenced_through_serve_is_logged_closed_once():
    with served_lab() as (lab, server), client_for(server) as client:
        client.create_producer(TOPIC, producer_name="p1", access_mode=pulsar.ProducerAccessMode.Exclusive)
        p2 = client.create_producer(
            TOPIC, producer_name="p2", access_mode=pulsar.ProducerAccessMode.ExclusiveWithFencing
        )
        p2.close()
        with server.lock:
            events = _lifecycle(lab)
    created = {f["name"]: f["producer"] for k, f in events if k == "producer_created"}
    closed = [f["producer"] for k, f in events if k == "producer_closed"]
    assert sorted(created) == ["p1", "p2"]
    assert closed == [created["p1"], created["p2"]]
