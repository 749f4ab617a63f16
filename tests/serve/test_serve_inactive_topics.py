"""Inactive topics deleted under real clients (`broker.inactive_topics`): an app that makes a temporary topic per
request leaves none behind once the broker's sweep has run. Loopback only; time moves by ``lab.advance``."""

from __future__ import annotations

import pytest
from serve_support import client_for, served_lab, wait_until
from test_serve_admin_http import NS, http

from pulsarlab.lab import SERVE_BROKER_CONFIG

pytestmark = pytest.mark.serve

TEMPORARY = 30


def test_temporary_topics_of_a_real_client_are_deleted_by_the_brokers_sweep() -> None:
    with served_lab(broker_config=SERVE_BROKER_CONFIG) as (lab, server):
        with client_for(server) as client:
            kept = client.subscribe("persistent://public/default/kept", "s")
            for i in range(TEMPORARY):
                producer = client.create_producer(f"persistent://public/default/reply-{i}")
                producer.send(b"answer")
                producer.close()
            kept.close()

            def settled() -> bool:  # every CLOSE_PRODUCER and CLOSE_CONSUMER reached the broker
                with server.lock:
                    topics = lab.service.topics.values()
                    return not any(t.producers or any(s.consumers() for s in t.subscriptions.values()) for t in topics)

            wait_until(settled, what="the closes to reach the broker")
        assert len(http(server, "GET", NS)[1]) == TEMPORARY + 1
        assert http(server, "GET", NS + "/reply-0/stats")[0] == 200
        # two sweeps (each minute from the broker's start): the second is a minute or more after every load
        server.call(lab.advance, 120_000)
        assert http(server, "GET", NS)[1] == ["persistent://public/default/kept"]  # its subscription keeps it
        status, body = http(server, "GET", NS + "/reply-0/stats")
        assert (status, body) == (404, {"reason": "Topic not found"})
        with server.lock:
            deleted = [e.fields["name"] for e in lab.events if e.kind == "topic_deleted_inactive"]
            assert len(deleted) == TEMPORARY and lab.service.entry_cache.size == 0
