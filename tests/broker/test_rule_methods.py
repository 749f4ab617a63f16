"""One source of truth for dispatcher rules: the snapshot asks the dispatcher's read-only rule methods, which the
dispatcher's own reads use too, so the picture and the ``hash_blocked`` events agree."""

from __future__ import annotations

import pulsarlab as pl
from pulsarlab.managed_ledger.position import Position
from pulsarlab.snapshot.lab import snapshot

KS = pl.ConsumerType.KeyShared


def _dispatcher(lab: pl.Lab, topic: str = "t", sub: str = "s"):
    return lab.service.topics[lab.service.normalize(topic)].subscriptions[sub].dispatcher


def _last_reasons(lab: pl.Lab) -> dict[tuple[int, int], str]:
    """(ledger, entry) -> the reason of the last hash_blocked event that held it back."""
    return {(e.ledger, e.entry): e.reason for e in lab.events.of_kind("hash_blocked")}


def _draining_lab() -> tuple[pl.Lab, object]:
    lab = pl.Lab(version="4.0")
    client = lab.client()
    c1 = client.subscribe("t", "s", consumer_type=KS, consumer_name="c1")
    p = client.create_producer("t")
    for i in range(20):
        p.send(b"%d" % i, partition_key=str(i % 10))
    client.subscribe("t", "s", consumer_type=KS, consumer_name="c2")
    for i in range(20, 30):
        p.send(b"%d" % i, partition_key=str(i % 10))
    return lab, c1


def test_4x_draining_reason_is_the_dispatchers_and_asking_changes_nothing():
    lab, _c1 = _draining_lab()
    d = _dispatcher(lab)
    before = {h: (e.consumer.id, e.ref_count, e.blocked_count) for h, e in d.draining.draining_hashes.items()}
    blocked = snapshot(lab).subscription().dispatcher.blocked_hashes
    assert blocked and {b.reason for b in blocked} == {"hash_draining"}
    assert {h: (e.consumer.id, e.ref_count, e.blocked_count) for h, e in d.draining.draining_hashes.items()} == before
    last = _last_reasons(lab)
    for b in blocked:
        assert last[b.positions[0]] == b.reason
        block = d.blocked_hash_reason(b.hash, Position(*b.positions[0]))
        assert block.draining_from.id == b.draining_from == before[b.hash][0]
        assert d.draining.blocking_entry(block.consumer, b.hash).consumer is block.draining_from
        # the consumer draining the hash is never blocked by it
        assert d.draining.blocking_entry(block.draining_from, b.hash) is None


def test_classic_recently_joined_reason_is_the_dispatchers():
    lab = pl.Lab(version="3.0")
    client = lab.client()
    client.subscribe("t", "s", consumer_type=KS, consumer_name="c1", lab_ack_group_time_ms=0)
    p = client.create_producer("t")
    for i in range(4):
        p.send(b"%d" % i, partition_key=str(i))
    client.subscribe("t", "s", consumer_type=KS, consumer_name="c2", lab_ack_group_time_ms=0)
    for i in range(4, 40):
        p.send(b"%d" % i, partition_key=str(i))
    sub = snapshot(lab).subscription()
    blocked = sub.dispatcher.blocked_hashes
    assert blocked and {b.reason for b in blocked} == {"recently_joined"}
    last = _last_reasons(lab)
    c2 = sub.consumer("c2")
    for b in blocked:
        assert last[b.positions[0]] == b.reason
        assert b.consumer == c2.id and b.joined_at == dict(sub.dispatcher.recently_joined)[c2.id]
        assert b.positions[0] >= b.joined_at


def test_no_permits_reason_is_the_dispatchers():
    lab = pl.Lab(version="4.0")
    client = lab.client()
    client.subscribe("t", "s", consumer_type=KS, consumer_name="c1", receiver_queue_size=2)
    client.subscribe("t", "s", consumer_type=KS, consumer_name="c2", receiver_queue_size=1000)
    p = client.create_producer("t")
    for i in range(60):
        p.send(b"%d" % i, partition_key=str(i % 12))
    d = _dispatcher(lab)
    blocked = snapshot(lab).subscription().dispatcher.blocked_hashes
    assert blocked and {b.reason for b in blocked} == {"no_permits"}
    last = _last_reasons(lab)
    for b in blocked:
        owner = next(c for c in d.consumer_list.consumers if c.id == b.consumer)
        assert owner.name == "c1" and d.entry_permits(owner) == 0
        assert last[b.positions[0]] == "no_permits"


def test_failover_rule_is_the_consumer_lists_own_choice():
    lab = pl.Lab(version="4.0")
    lab.admin.topics.create_partitioned_topic("pt", 3)
    client = lab.client()
    names = ["b", "a", "c"]
    for n in names:
        client.subscribe("pt", "s", consumer_type=pl.ConsumerType.Failover, consumer_name=n)
    lab.advance(2000)
    snap = snapshot(lab)
    for i, t in enumerate(snap.partitions("pt")):
        sub = t.subscription("s")
        lst = _dispatcher(lab, f"pt-partition-{i}").list
        active = lst.active
        assert sub.dispatcher.failover_rule == lst.active_rule()
        assert sub.dispatcher.failover_rule.endswith(f"partition {i} % 3 = {lst.selected_index()} -> {active.name}")
        assert lst.consumers[lst.selection().index] is active
    # a non-partitioned topic: the ring
    client.subscribe("np", "s", consumer_type=pl.ConsumerType.Failover, consumer_name="x")
    client.subscribe("np", "s", consumer_type=pl.ConsumerType.Failover, consumer_name="y")
    lst = _dispatcher(lab, "np").list
    assert "non-partitioned topic" in lst.active_rule() and lst.active_rule().endswith(
        f"lands on a ring point of {lst.active.name} (100 points per consumer)"
    )
