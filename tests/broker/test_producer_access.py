"""Producer access modes and the topic epoch in the model (`broker.producer_access`), through lab.client()."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.client.producer import ProducerBusy, ProducerFenced
from pulsarlab.errors import IllegalStateException, ProducerFencedException

A = pl.ProducerAccessMode


def _lab():
    lab = pl.Lab(version="4.0", seed=1)
    return lab, lab.client()


def _publishers(lab, topic="t"):
    return [(p["producerName"], p["accessMode"]) for p in lab.admin.topics.stats(topic)["publishers"]]


def test_exclusive_refuses_a_second_exclusive_producer_and_shared_ones():
    lab, client = _lab()
    client.create_producer("t", producer_name="p1", access_mode=A.Exclusive)
    with pytest.raises(ProducerFenced, match="Topic has an existing exclusive producer: p1"):
        client.create_producer("t", producer_name="p2", access_mode=A.Exclusive)
    with pytest.raises(ProducerBusy, match="Topic has an existing exclusive producer: p1"):
        client.create_producer("t", producer_name="p3")
    assert _publishers(lab) == [("p1", "Exclusive")]


def test_exclusive_is_refused_while_shared_producers_are_connected():
    lab, client = _lab()
    shared = client.create_producer("t", producer_name="s")
    with pytest.raises(ProducerFenced, match="Topic has existing shared producers"):
        client.create_producer("t", producer_name="x", access_mode=A.Exclusive)
    shared.close()
    client.create_producer("t", producer_name="x", access_mode=A.Exclusive)
    assert _publishers(lab) == [("x", "Exclusive")]


def test_wait_for_exclusive_gets_the_topic_when_the_holder_leaves():
    lab, client = _lab()
    p1 = client.create_producer("t", producer_name="p1", access_mode=A.Exclusive)
    w = client.create_producer("t", producer_name="w", access_mode=A.WaitForExclusive)
    assert not w.is_connected()
    assert lab.admin.topics.stats("t")["waitingPublishers"] == 1
    with pytest.raises(IllegalStateException, match="WaitForExclusive"):
        w.send(b"early")
    p1.send(b"a")
    p1.close()
    assert w.is_connected()
    assert str(w.send(b"b")) == "3:1:-1"
    assert _publishers(lab) == [("w", "WaitForExclusive")]
    assert lab.admin.topics.stats("t")["waitingPublishers"] == 0


def test_exclusive_with_fencing_fences_the_holder_and_the_waiting():
    lab, client = _lab()
    p1 = client.create_producer("t", producer_name="p1", access_mode=A.Exclusive)
    w = client.create_producer("t", producer_name="w", access_mode=A.WaitForExclusive)
    f = client.create_producer("t", producer_name="f", access_mode=A.ExclusiveWithFencing)
    for fenced in (p1, w):
        assert not fenced.is_connected()
        with pytest.raises(ProducerFenced):
            fenced.send(b"late")
    assert str(f.send(b"c")) == "3:0:-1"
    assert _publishers(lab) == [("f", "ExclusiveWithFencing")]
    p1.close()  # closing a fenced producer does not release the fencer's hold
    with pytest.raises(ProducerBusy):
        client.create_producer("t", producer_name="s")


def test_topic_epoch_moves_up_with_each_exclusive_holder():
    lab, client = _lab()
    p = client.create_producer("t", producer_name="a", access_mode=A.Exclusive)
    topic = lab.service.topics["persistent://public/default/t"]
    assert topic.access.topic_epoch == 0
    p.close()
    client.create_producer("t", producer_name="b", access_mode=A.ExclusiveWithFencing).close()
    assert topic.access.topic_epoch == 1
    # a producer reconnecting with an epoch the topic has moved past is fenced (AbstractTopic's epoch check)
    with pytest.raises(
        ProducerFencedException, match="Topic epoch has already moved. Current epoch: 1, Producer epoch: 0"
    ):
        lab.service.register_producer(
            99, "old", "persistent://public/default/t", access_mode=A.Exclusive, topic_epoch=0
        )
