"""The ``consumer_closed`` event says what happens to the leaving consumer's unacknowledged messages.

* Shared / Key_Shared: ``pending_acks`` is the number of its pending acks; they go to the replay set and the other
  consumers get them with their redelivery count unchanged, which the explanation says.
* Exclusive / Failover keep no pending acks per consumer (``pending_acks`` -1): the explanation says the cursor
  rewinds to the mark-delete position for the (next) active consumer, and that consumer does get every
  unacknowledged message again.
"""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.snapshot.recorder import Recorder


def _closed_events(lab: pl.Lab) -> list:
    return lab.events.of_kind("consumer_closed")


@pytest.mark.parametrize("ctype", [pl.ConsumerType.Shared, pl.ConsumerType.KeyShared])
def test_shared_close_returns_pending_acks_to_the_replay_set(ctype: pl.ConsumerType) -> None:
    lab = pl.Lab()
    client = lab.client()
    c1 = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c1")
    producer = client.create_producer("t")
    for i in range(3):
        producer.send(b"%d" % i, partition_key="k")
    held = len(c1.receiver_queue)
    c2 = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c2")
    c1.close()
    (closed,) = _closed_events(lab)
    assert closed.pending_acks == held > 0
    text = closed.explain()
    assert f"its {held} unacked message(s) go back to the replay set" in text
    assert "without counting a redelivery" in text
    got = [c2.receive(0) for _ in range(held)]
    assert all(m.redelivery_count() == 0 for m in got)


@pytest.mark.parametrize("ctype", [pl.ConsumerType.Failover, pl.ConsumerType.Exclusive])
def test_single_active_close_rewinds_to_the_mark_delete_position(ctype: pl.ConsumerType) -> None:
    lab = pl.Lab(broker_config={"activeConsumerFailoverDelayTimeMillis": 0})
    client = lab.client()
    c1 = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c1", lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(4):
        producer.send(b"%d" % i)
    first = c1.receive(0)
    c1.acknowledge(first)  # the mark-delete position moves past the first message only
    unacked = [c1.receive(0).data() for _ in range(3)]
    if ctype is pl.ConsumerType.Failover:
        c2 = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c2")
        c1.close()
    else:
        c1.close()
        c2 = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c2")
    (closed,) = _closed_events(lab)
    assert closed.pending_acks == -1
    text = closed.explain()
    assert "Exclusive / Failover keep no unacked messages per consumer" in text
    assert "rewinds to the mark-delete position" in text
    assert "replay set" not in text
    lab.run_until_idle()
    assert [m.data() for m in c2.receiver_queue] == unacked


def test_the_recorder_names_the_consumer_in_the_explanation() -> None:
    lab = pl.Lab()
    rec = Recorder(lab, every=["consumer_closed"], history=False)
    client = lab.client()
    client.subscribe("t", "s", consumer_type=pl.ConsumerType.Failover, consumer_name="alpha")
    beta = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Failover, consumer_name="beta")
    beta.close()
    rec.close()
    assert rec[-1].explanation.startswith("consumer beta left (closed); Exclusive / Failover")
