"""The broker-model calls the front end adds: redelivery of given positions, and the cursor reset behind SEEK."""

from __future__ import annotations

import pulsarlab as pl
from pulsarlab.managed_ledger.position import EARLIEST, LATEST, Position

TOPIC = "persistent://public/default/hooks"


def _shared(n: int = 4):
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    c = client.subscribe(TOPIC, "s", consumer_type=pl.ConsumerType.Shared)
    p = client.create_producer(TOPIC)
    for i in range(n):
        p.send(f"m{i}".encode())
    return lab, c, [c.receive(0) for _ in range(n)]


def test_redelivering_given_positions_replays_only_those_and_counts_them():
    lab, c, msgs = _shared()
    broker_consumer = lab.service.topics[TOPIC].subscriptions["s"].consumers()[0]
    assert broker_consumer.unacked_messages == 4
    lab.service.redeliver_unacknowledged(broker_consumer, [(3, 1), (3, 3), (9, 9)])  # (9, 9) is not pending
    again = [c.receive(0) for _ in range(len(c.receiver_queue))]
    assert [(m.data(), m.redelivery_count()) for m in again] == [(b"m1", 1), (b"m3", 1)]
    assert broker_consumer.unacked_messages == 4  # two taken back, the same two delivered again
    asked = lab.events.of_kind("redeliver_ids")[-1].fields
    assert (asked["requested"], asked["pending"]) == (3, 2)


def test_exclusive_consumers_rewind_whatever_ids_are_given():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    c = client.subscribe(TOPIC, "x")
    p = client.create_producer(TOPIC)
    for i in range(3):
        p.send(f"m{i}".encode())
    [c.receive(0) for _ in range(3)]
    broker_consumer = lab.service.topics[TOPIC].subscriptions["x"].consumers()[0]
    lab.service.redeliver_unacknowledged(broker_consumer, [(3, 2)])
    assert [m.data() for m in c.receiver_queue] == [b"m0", b"m1", b"m2"]


def test_reset_cursor_moves_back_and_forgets_acks():
    lab, c, msgs = _shared(6)
    for m in (msgs[0], msgs[1], msgs[3], msgs[4]):
        c.acknowledge(m)
    lab.run_until_idle()
    cursor = lab.service.topics[TOPIC].subscriptions["s"].cursor
    assert (str(cursor.mark_delete_position), cursor.individually_deleted_messages_string()) == ("3:1", "[(3:2..3:4]]")
    consumed_before = cursor.messages_consumed_counter
    broker_consumer = lab.service.topics[TOPIC].subscriptions["s"].consumers()[0]
    read = lab.service.reset_cursor(broker_consumer, Position(3, 1))
    internal = lab.admin.topics.stats_internal(TOPIC)["cursors"]["s"]
    assert (str(read), internal["markDeletePosition"], internal["individuallyDeletedMessages"]) == ("3:1", "3:0", "[]")
    # Java's rule: the counter gives back the entries between the new and the old mark-delete position (3:0 here);
    # the individual acks it forgets stay counted
    assert internal["messagesConsumedCounter"] == consumed_before - 1
    assert lab.service.topics[TOPIC].subscriptions["s"].consumers() == []  # every consumer was disconnected
    event = lab.events.of_kind("cursor_reset")[-1]
    assert (event.fields["ledger"], event.fields["entry"], event.fields["read_ledger"], event.fields["read_entry"]) == (
        3,
        0,
        3,
        1,
    )
    again = lab.client().subscribe(TOPIC, "s", consumer_type=pl.ConsumerType.Shared)
    assert [m.data() for m in again.receiver_queue] == [b"m1", b"m2", b"m3", b"m4", b"m5"]


def test_reset_cursor_by_publish_time_earliest_and_latest():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    c = client.subscribe(TOPIC, "t")
    p = client.create_producer(TOPIC)
    for i in range(4):
        p.send(f"m{i}".encode())
        lab.advance(100)  # publish times 0, 100, 200, 300
    sub = lab.service.topics[TOPIC].subscriptions["t"]
    service = lab.service
    assert str(service.reset_cursor(c._impls[-1].broker_consumer, publish_time=150)) == "3:2"
    c = client.subscribe(TOPIC, "t")
    assert str(service.reset_cursor(sub.consumers()[0], publish_time=-1)) == "3:0"  # before every entry
    c = client.subscribe(TOPIC, "t")
    assert str(service.reset_cursor(sub.consumers()[0], publish_time=10_000)) == "3:4"  # after every entry
    assert str(sub.cursor.reset_cursor(EARLIEST)) == "3:0" and str(sub.cursor.mark_delete_position) == "3:-1"
    assert str(sub.cursor.reset_cursor(LATEST)) == "3:4" and str(sub.cursor.mark_delete_position) == "3:3"


def test_reset_cursor_by_publish_time_keeps_a_message_published_in_that_millisecond():
    """PersistentMessageFinder matches entries published strictly before t, so a seek to a message's own publish
    time reads that message again (a real client's ``seek(msg.publish_timestamp())`` gets ``msg`` first)."""
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    client.subscribe(TOPIC, "t")
    p = client.create_producer(TOPIC)
    for i in range(3):
        p.send(f"m{i}".encode())
        lab.advance(100)  # publish times 0, 100, 200
    sub = lab.service.topics[TOPIC].subscriptions["t"]
    at_m1 = str(lab.service.reset_cursor(sub.consumers()[0], publish_time=100))  # m1's own publish time
    client.subscribe(TOPIC, "t")  # the seek disconnected the consumer
    just_after_m1 = str(lab.service.reset_cursor(sub.consumers()[0], publish_time=101))
    assert (at_m1, just_after_m1) == ("3:1", "3:2")
