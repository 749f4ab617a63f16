"""Serve tests whose broker side lives on other branches; not collected by pytest (the file name says so).

* delayed delivery on Shared / Key_Shared: the broker holds back entries with ``deliver_at_time`` (branch
  ``delayed``);
* chunked messages on Shared: every chunk of one uuid goes to one consumer (`SharedConsumerAssignor` wired into
  the Shared dispatcher, branch ``chunk``).

After those branches are merged, enable them by renaming this file to ``test_serve_pending.py`` (or moving the
tests into ``test_serve_clients.py``); they are written to pass then, and fail now for exactly that reason.
Run them by hand: ``python -m pytest tests/pending_serve_features.py``.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, cursor_state, run_client_script, served_lab, wait_until

import pulsarlab as pl

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/orders"


def test_delayed_messages_arrive_no_earlier_than_due_on_shared():
    delay_ms = 2000
    with served_lab() as (lab, server), client_for(server) as client:
        c = client.subscribe(TOPIC, "sh", consumer_type=pulsar.ConsumerType.Shared)
        p = client.create_producer(TOPIC)
        sent_at_ms = time.time() * 1000
        p.send(b"later", deliver_after=timedelta(milliseconds=delay_ms))
        p.send(b"now")
        first = c.receive(RECEIVE_MS)
        second = c.receive(delay_ms + 5000)
        second_at_ms = time.time() * 1000
        assert (first.data(), second.data()) == (b"now", b"later")
        assert second_at_ms >= sent_at_ms + delay_ms  # never before it is due
        c.acknowledge(first)
        c.acknowledge(second)
        wait_until(
            lambda: server.stats_internal(TOPIC)["cursors"]["sh"]["markDeletePosition"] == "3:1", what="both acks"
        )
        served = cursor_state(server.stats_internal(TOPIC), "sh")

    lab2 = pl.Lab(version="4.0", seed=1)
    client2 = lab2.client()
    c2 = client2.subscribe(TOPIC, "sh", consumer_type=pl.ConsumerType.Shared)
    p2 = client2.create_producer(TOPIC)
    p2.send(b"later", deliver_after=timedelta(milliseconds=delay_ms))
    p2.send(b"now")
    assert [m.data() for m in c2.receiver_queue] == [b"now"]
    m_now = c2.receive(0)
    m_later = c2.receive(delay_ms + 2000)  # virtual time runs to the delayed-delivery tick after the due time
    assert m_later.data() == b"later" and lab2.now() >= delay_ms
    c2.acknowledge(m_now)
    c2.acknowledge(m_later)
    lab2.run_until_idle()
    assert served == cursor_state(lab2.admin.topics.stats_internal(TOPIC), "sh")


SHARED_CHUNKS = r"""
import hashlib, os, sys, time
import pulsar
url, topic = sys.argv[1], sys.argv[2]
client = pulsar.Client(url, operation_timeout_seconds=5, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull))
consumers = [client.subscribe(topic, "sh", consumer_type=pulsar.ConsumerType.Shared, consumer_name=f"c{i}")
             for i in range(2)]
producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
payloads = [bytes((i * 7 + j) % 251 for j in range(3000)) for i in range(4)]
for p in payloads:
    producer.send(p)
got = []
deadline = time.time() + 15
while len(got) < len(payloads) and time.time() < deadline:
    for c in consumers:
        try:
            m = c.receive(100)
        except pulsar.Timeout:
            continue
        got.append(m.data())
        c.acknowledge(m)
for c in consumers:
    c.close()  # sends the grouped acks before its CloseConsumer, and returns once the server answered that
print(sorted(hashlib.sha256(g).hexdigest() for g in got) == sorted(hashlib.sha256(p).hexdigest() for p in payloads))
client.close()
"""


def test_chunks_of_one_message_stay_on_one_shared_consumer():
    with served_lab(broker_config={"maxMessageSize": 1024}) as (lab, server):
        out = run_client_script(SHARED_CHUNKS, server.url, TOPIC)
        assert out.split() == ["True"]

        def dispatched_by_uuid():
            entries = lab.service.topics[TOPIC].ledger.entries_of(3)
            owners: dict[str, set[int]] = {}
            for e in lab.events.of_kind("dispatched"):
                uuid = entries[e.fields["entry"]].metadata.uuid
                owners.setdefault(uuid, set()).add(e.fields["consumer"])
            return owners

        owners = server.call(dispatched_by_uuid)
        served = cursor_state(server.stats_internal(TOPIC), "sh")
    assert len(owners) == 4 and all(len(c) == 1 for c in owners.values())
    assert served["individuallyDeletedMessages"] == "[]"
