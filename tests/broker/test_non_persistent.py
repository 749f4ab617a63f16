"""Non-persistent topics in the model (`broker.non_persistent`) through lab.client() and the broker's commands."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.errors import NotAllowedException

NP = "non-persistent://public/default/live"


def _drain(consumer, ack: bool = False) -> list[bytes]:
    out = []
    while True:
        try:
            m = consumer.receive(50)
        except pl.Timeout:
            return out
        out.append(m.data())


def test_messages_reach_only_the_consumers_connected_now():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    p = client.create_producer(NP)
    assert str(p.send(b"nobody listens")) == "0:0:-1"  # acknowledged 0:0, nothing stored
    c = client.subscribe(NP, "s")
    p.send(b"heard")
    assert _drain(c) == [b"heard"]
    stats = lab.admin.topics.stats(NP)
    assert stats["msgInCounter"] == 2 and stats["storageSize"] == 0
    assert stats["subscriptions"]["s"]["msgOutCounter"] == 1
    c.close()
    assert "s" not in lab.admin.topics.stats(NP)["subscriptions"]  # a subscription goes with its last consumer
    late = client.subscribe(NP, "s", initial_position=pl.InitialPosition.Earliest)
    assert _drain(late) == []  # nothing to read back


def test_a_consumer_without_permits_makes_the_broker_drop():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    c = client.subscribe(NP, "s", receiver_queue_size=2)
    p = client.create_producer(NP)
    for i in range(5):
        p.send(f"m{i}".encode())
    got = _drain(c)
    stats = lab.admin.topics.stats(NP)["subscriptions"]["s"]
    assert len(got) + stats["msgDropCounter"] == 5 and stats["msgDropCounter"] > 0


def test_shared_takes_turns_and_exclusive_is_exclusive():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    a = client.subscribe(NP, "sh", consumer_type=pl.ConsumerType.Shared, consumer_name="a")
    b = client.subscribe(NP, "sh", consumer_type=pl.ConsumerType.Shared, consumer_name="b")
    client.subscribe(NP, "ex")
    with pytest.raises(pl.ConsumerBusyException):
        client.subscribe(NP, "ex")
    p = client.create_producer(NP)
    for i in range(4):
        p.send(f"m{i}".encode())
    assert (_drain(a), _drain(b)) == ([b"m0", b"m2"], [b"m1", b"m3"])


def test_namespace_listing_modes_and_what_is_refused():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    client.create_producer(NP)
    client.create_producer("persistent://public/default/kept")
    svc = lab.service
    assert svc.topics_of_namespace("public/default") == ["persistent://public/default/kept"]
    assert svc.topics_of_namespace("public/default", "NON_PERSISTENT") == [NP]
    assert svc.topics_of_namespace("public/default", "ALL") == [NP, "persistent://public/default/kept"]
    c = client.subscribe(NP, "s")
    consumer = svc.non_persistent_topics[NP].subscriptions["s"].consumers()[0]
    with pytest.raises(NotAllowedException, match="not supported for non-persistent"):
        svc.reset_cursor(consumer, (0, 0))
    with pytest.raises(NotAllowedException):
        svc.get_last_message_id(consumer)
    c.close()
    assert NP not in svc.topics  # kept apart from the persistent topics views and restarts walk
