"""Non-persistent topics with the real pulsar-client against ``pulsarlab serve``, alone and in regex
subscriptions by ``regex_subscription_mode``."""

from __future__ import annotations

import re

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab

pytestmark = pytest.mark.serve

NP = "non-persistent://public/default/rx-np"
P = "persistent://public/default/rx-p"


def _drain(consumer) -> list[bytes]:
    out = []
    while True:
        try:
            m = consumer.receive(300)
        except pulsar.Timeout:
            return sorted(out)
        out.append(m.data())
        consumer.acknowledge(m)


def test_regex_subscription_modes_pick_the_domains():
    with served_lab() as (lab, server), client_for(server) as client:
        p, np_ = client.create_producer(P), client.create_producer(NP)
        pattern = re.compile("public/default/rx-.*")
        mode = pulsar.RegexSubscriptionMode
        consumers = {
            m: client.subscribe(
                pattern, f"sub-{m.name}", consumer_type=pulsar.ConsumerType.Shared, regex_subscription_mode=m
            )
            for m in (mode.AllTopics, mode.PersistentOnly, mode.NonPersistentOnly)
        }
        for i in range(3):
            p.send(b"p%d" % i)
            np_.send(b"n%d" % i)
        assert _drain(consumers[mode.AllTopics]) == [b"n0", b"n1", b"n2", b"p0", b"p1", b"p2"]
        assert _drain(consumers[mode.PersistentOnly]) == [b"p0", b"p1", b"p2"]
        assert _drain(consumers[mode.NonPersistentOnly]) == [b"n0", b"n1", b"n2"]


def test_a_non_persistent_message_is_lost_without_a_consumer():
    with served_lab() as (lab, server), client_for(server) as client:
        producer = client.create_producer(NP)
        first = producer.send(b"into the void")
        assert (first.ledger_id(), first.entry_id()) == (0, 0)
        consumer = client.subscribe(NP, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer.send(b"heard")
        assert consumer.receive(RECEIVE_MS).data() == b"heard"
        assert _drain(consumer) == []
        with server.lock:
            assert lab.admin.topics.stats(NP)["msgInCounter"] == 2
