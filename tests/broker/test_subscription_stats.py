"""Subscription stats: ``lastMarkDeleteAdvancedTimestamp`` is the virtual time the mark-delete position last moved.

* 0 until it moves; an ack that leaves a hole does not move it; individual and cumulative acks that move it stamp
  the time of that ack;
* on random workloads it always equals the time of the subscription's last ``mark_delete_moved`` event, with the
  event log on, and the log-off run of the same workload reports the same value.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsarlab as pl


def _sub_stats(lab: pl.Lab, topic: str = "t", sub: str = "s") -> dict:
    return lab.admin.topics.stats(topic)["subscriptions"][sub]


def _last_move_time(lab: pl.Lab) -> int:
    moves = [e.time for e in lab.events.of_kind("mark_delete_moved") if e.cursor.endswith("/t/s")]
    return moves[-1] if moves else 0


def test_individual_acks_stamp_the_time_the_mark_delete_position_moved() -> None:
    lab = pl.Lab()
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(3):
        producer.send(b"%d" % i)
    msgs = [consumer.receive(0) for _ in range(3)]
    assert _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"] == 0

    lab.advance(40)
    consumer.acknowledge(msgs[1])  # a hole before it: the mark-delete position stays
    assert _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"] == 0

    lab.advance(30)
    moved_at = lab.now()
    consumer.acknowledge(msgs[0])  # closes the hole: moves over both
    assert _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"] == moved_at

    lab.advance(50)
    consumer.acknowledge(msgs[0])  # a duplicate ack: nothing moves
    assert _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"] == moved_at
    consumer.acknowledge(msgs[2])
    assert _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"] == lab.now() != moved_at
    assert _last_move_time(lab) == lab.now()


def test_cumulative_ack_stamps_the_time_too() -> None:
    lab = pl.Lab()
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Exclusive, lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(4):
        producer.send(b"%d" % i)
    msgs = [consumer.receive(0) for _ in range(4)]
    lab.advance(25)
    consumer.acknowledge_cumulative(msgs[2])
    assert _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"] == lab.now() == _last_move_time(lab)


op = st.one_of(
    st.tuples(st.just("send"), st.integers(1, 4)),
    st.tuples(st.just("recv"), st.integers(1, 6)),
    st.tuples(st.just("advance"), st.integers(1, 120)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(op, max_size=30),
    ctype=st.sampled_from(list(pl.ConsumerType)),
    group_ms=st.sampled_from([0, 100]),
    seed=st.integers(0, 3),
)
def test_the_stamp_is_the_time_of_the_last_mark_delete_move(ops, ctype, group_ms, seed) -> None:
    def play(record_events: bool) -> list[int]:
        lab = pl.Lab(seed=seed, record_events=record_events)
        client = lab.client()
        consumer = client.subscribe("t", "s", consumer_type=ctype, lab_ack_group_time_ms=group_ms)
        producer = client.create_producer("t")
        stamps = []
        for i, (kind, n) in enumerate(ops):
            if kind == "send":
                for _ in range(n):
                    producer.send(b"m")
            elif kind == "advance":
                lab.advance(n)
            else:
                for j in range(n):
                    try:
                        msg = consumer.receive(0)
                    except pl.Timeout:
                        break
                    if (i + j) % 3 != 1:  # leave some unacked: holes in the acknowledged range
                        if ctype in (pl.ConsumerType.Exclusive, pl.ConsumerType.Failover) and j % 2:
                            consumer.acknowledge_cumulative(msg)
                        else:
                            consumer.acknowledge(msg)
            stamp = _sub_stats(lab)["lastMarkDeleteAdvancedTimestamp"]
            if record_events:
                assert stamp == _last_move_time(lab)
            stamps.append(stamp)
        return stamps

    assert play(True) == play(False)
