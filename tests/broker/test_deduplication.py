"""Message deduplication and namespaces in the model (`broker.deduplication`, `broker.namespaces`)."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.errors import ConflictException, NotFoundException


def _lab(**config):
    lab = pl.Lab(version="4.0", seed=1, broker_config=config or None)
    return lab, lab.client()


def test_duplicates_are_acked_with_minus_one_and_not_stored():
    lab, client = _lab()
    lab.admin.namespaces.set_deduplication_status("public/default", True)
    c = client.subscribe("t", "s", initial_position=pl.InitialPosition.Earliest)
    p = client.create_producer("t", producer_name="p")
    ids = [str(p.send(f"m{i}".encode(), sequence_id=i)) for i in range(3)]
    assert ids == ["3:0:-1", "3:1:-1", "3:2:-1"]
    assert [str(p.send(b"again", sequence_id=s)) for s in (1, 2)] == ["-1:-1:-1", "-1:-1:-1"]
    assert p.last_sequence_id() == 2
    assert lab.admin.topics.stats("t")["msgInCounter"] == 3
    assert lab.admin.topics.stats("t")["deduplicationStatus"] == "Enabled"
    got = [c.receive(1000).data() for _ in range(3)]
    assert got == [b"m0", b"m1", b"m2"]
    with pytest.raises(pl.Timeout):
        c.receive(100)


def test_a_producer_with_a_known_name_continues_the_sequence():
    lab, client = _lab(brokerDeduplicationEnabled=True)
    p = client.create_producer("t", producer_name="named")
    assert p.last_sequence_id() == -1
    for i in range(5):
        p.send(b"x")
    p.close()
    again = client.create_producer("t", producer_name="named")
    assert again.last_sequence_id() == 4
    assert str(again.send(b"y")) == "3:5:-1"
    assert again.last_sequence_id() == 5
    other = client.create_producer("t", producer_name="other")
    assert other.last_sequence_id() == -1


def test_without_deduplication_everything_is_stored_and_the_sequence_restarts():
    lab, client = _lab()
    p = client.create_producer("t", producer_name="p")
    p.send(b"a", sequence_id=7)
    assert str(p.send(b"b", sequence_id=7)) == "3:1:-1"
    p.close()
    assert client.create_producer("t", producer_name="p").last_sequence_id() == -1
    assert lab.admin.topics.stats("t")["deduplicationStatus"] == "Disabled"


def test_a_batch_counts_with_its_highest_sequence_id():
    lab, client = _lab(brokerDeduplicationEnabled=True)
    p = client.create_producer("t", producer_name="b", batching_enabled=True, batching_max_messages=3)
    for i in range(3):
        p.send_async(f"m{i}".encode(), None)
    p.flush()
    assert lab.service.topics["persistent://public/default/t"].last_published_sequence_id("b") == 2
    assert str(p.send(b"dup", sequence_id=1)) == "-1:-1:-1:0"  # a batch of one: batch index 0


def test_topics_only_in_existing_namespaces():
    lab, client = _lab()
    with pytest.raises(NotFoundException, match="Namespace does not exist"):
        client.create_producer("acme/orders/t")
    with pytest.raises(NotFoundException, match="Tenant does not exist"):
        lab.admin.namespaces.create_namespace("acme/orders")
    lab.admin.tenants.create_tenant("acme")
    lab.admin.namespaces.create_namespace("acme/orders")
    with pytest.raises(ConflictException, match="Namespace already exists"):
        lab.admin.namespaces.create_namespace("acme/orders")
    with pytest.raises(ConflictException, match="Tenant already exist"):
        lab.admin.tenants.create_tenant("acme")
    assert str(client.create_producer("acme/orders/t").send(b"x")) == "3:0:-1"
    assert lab.admin.tenants.list() == ["acme", "public"]
    assert lab.admin.namespaces.list("acme") == ["acme/orders"]
    with pytest.raises(NotFoundException):
        lab.admin.namespaces.set_deduplication_status("acme/nothing", True)


def test_names_of_producers_gone_longer_than_the_inactivity_timeout_are_purged():
    # MessageDeduplication.purgeInactiveProducers (brokerDeduplicationProducerInactivityTimeoutMinutes, 360, checked
    # every 120 min): an app making a producer per request, each with a new name, added a name to the map forever
    lab, client = _lab(brokerDeduplicationEnabled=True)
    for i in range(200):
        p = client.create_producer("t", producer_name=f"request-{i}")
        p.send(b"x")
        p.close()
        lab.advance(60_000)  # one a minute
    dedup = lab.service.topics["persistent://public/default/t"].deduplication
    # at 200 min the last check ran at 120 min: it purged the names gone before 120 - 360 min, none yet
    assert len(dedup.highest) == 200
    lab.advance(300 * 60_000)  # t = 500 min; the last check, at 480, purged the names gone before 120 min
    named = client.create_producer("t", producer_name="request-150")  # gone at 150 min: still known
    assert named.last_sequence_id() == 0
    assert len(dedup.highest) == 200 - 120
    named.close()  # gone at 500 min
    lab.advance(460 * 60_000)  # t = 960 min: the check then purges every name gone before 600 min
    again = client.create_producer("t", producer_name="request-150")
    assert again.last_sequence_id() == -1  # its name was forgotten: the sequence starts over
    assert set(dedup.highest) == set()
