"""Property-based tests of redelivery on random workloads: random acks, negative acks, ignored messages (ack
timeout), retries and consumer crashes under a dead-letter policy; redelivery never before its delay; runs
are deterministic (reference §8)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import pulsarlab as pl

SETTINGS = settings(max_examples=60, deadline=None)
TOPIC = "orders"
DLQ = "persistent://public/default/orders-sub-DLQ"
RETRY = "persistent://public/default/orders-sub-RETRY"
ACTIONS = ("ack", "nack", "ignore", "retry", "crash")


@dataclass
class Workload:
    version: str
    key_shared: bool
    consumers: int
    messages: int
    batching: bool
    max_redeliver: int
    retry: bool
    ack_timeout: int | None
    nack_delay: int
    ack_group_ms: int
    actions: list[str]
    seed: int


@st.composite
def workloads(draw, batching: bool | None = None) -> Workload:
    ack_group_ms = draw(st.sampled_from([0, 100]))
    ack_timeout = draw(st.sampled_from([None, 1000, 2500]))
    retry = draw(st.booleans())
    allowed = ["ack", "nack"] + (["ignore"] if ack_timeout else []) + (["retry"] if retry else [])
    if ack_group_ms == 0:  # a crash loses grouped acks; immediate acks keep the DLQ exactly-once
        allowed.append("crash")
    return Workload(
        version=draw(st.sampled_from(["3.0", "4.0", "4.1"])),
        key_shared=draw(st.booleans()),
        consumers=draw(st.integers(1, 3)),
        messages=draw(st.integers(1, 10)),
        batching=draw(st.booleans()) if batching is None else batching,
        max_redeliver=draw(st.integers(1, 2)),
        retry=retry,
        ack_timeout=ack_timeout,
        nack_delay=draw(st.sampled_from([100, 700, 1500])),
        ack_group_ms=ack_group_ms,
        actions=draw(st.lists(st.sampled_from(allowed + ["nack", "nack"]), min_size=5, max_size=60)),
        seed=draw(st.integers(0, 2**16)),
    )


def run(w: Workload):
    """Drive the workload to the end; returns (lab, client, payloads the application acked, retry copies seen)."""
    lab = pl.Lab(version=w.version, seed=w.seed)
    client = lab.client()
    ctype = pl.ConsumerType.KeyShared if w.key_shared else pl.ConsumerType.Shared

    def subscribe(i: int):
        return client.subscribe(
            TOPIC,
            "sub",
            consumer_type=ctype,
            consumer_name=f"c{i}",
            receiver_queue_size=4,
            unacked_messages_timeout_ms=w.ack_timeout,
            negative_ack_redelivery_delay_ms=w.nack_delay,
            dead_letter_policy=pl.ConsumerDeadLetterPolicy(w.max_redeliver),
            lab_retry_enable=w.retry,
            lab_ack_group_time_ms=w.ack_group_ms,
        )

    consumers = [subscribe(i) for i in range(w.consumers)]
    producer = client.create_producer(TOPIC, batching_enabled=w.batching, batching_max_messages=3)
    for i in range(w.messages):
        producer.send_async(f"p{i}".encode(), None, partition_key=f"k{i % 4}")
    producer.flush()
    acked: set[bytes] = set()
    actions = list(w.actions)
    made = w.consumers
    turn = 0
    idle_rounds = 0
    while idle_rounds < 400:
        progressed = False
        for k in range(len(consumers)):
            c = consumers[(turn + k) % len(consumers)]
            if not c.receiver_queue:
                continue
            msg = c.receive(0)
            progressed = True
            action = actions.pop(0) if actions else "ack"
            if action == "ack":
                c.acknowledge(msg)
                acked.add(msg.data())
            elif action == "nack":
                c.negative_acknowledge(msg)
            elif action == "retry":
                c.reconsume_later(msg, 300)
            elif action == "crash":
                c.crash()
                consumers[(turn + k) % len(consumers)] = subscribe(made)
                made += 1
            break
        turn += 1
        if not progressed:
            idle_rounds += 1
            if lab.scheduler.next_deadline() is None and not any(c.receiver_queue for c in consumers):
                break
            lab.advance(250)
    lab.run_until_idle()
    return lab, client, acked


def dlq_payloads(client) -> list[bytes]:
    reader = client.subscribe(DLQ, "check", initial_position=pl.InitialPosition.Earliest)
    out = []
    while reader.receiver_queue:
        out.append(reader.receive(0).data())
    return out


def outcome(w: Workload):
    lab, client, acked = run(w)
    payloads = {f"p{i}".encode() for i in range(w.messages)}
    for topic in (TOPIC, RETRY):
        if lab.service.normalize(topic) in lab.service.topics:
            sub = lab.admin.topics.stats(topic)["subscriptions"].get("sub")
            assert sub is None or sub["msgBacklog"] == 0, (topic, sub)  # every message settled
    dead = dlq_payloads(client) if DLQ in lab.admin.topics.list() else []
    assert set(dead) <= payloads
    assert payloads == acked | set(dead), "a message was neither acknowledged nor dead-lettered"
    event(
        f"dead-lettered: {bool(dead)}; retried: {bool(lab.events.of_kind('reconsumed_later'))}; "
        f"crashed: {any(e.reason == 'crashed' for e in lab.events.of_kind('consumer_closed'))}"
    )
    return lab, acked, dead


@given(workloads(batching=False))
@SETTINGS
def test_with_a_dead_letter_policy_every_message_is_acked_or_dead_lettered_exactly_once(w):
    _lab, acked, dead = outcome(w)
    assert len(dead) == len(set(dead)), "a message reached the DLQ twice"
    assert not acked & set(dead), "a message was acknowledged and dead-lettered"


@given(workloads(batching=True))
@SETTINGS
def test_with_batches_nothing_is_lost_and_no_entry_is_dead_lettered_twice(w):
    """A batch is one entry: it goes to the DLQ whole - messages the application had acknowledged or retried
    included, as Pulsar's client does. With immediate acks no entry goes there twice; with grouped acks it can
    (at-least-once, as in Pulsar): a batch whose messages got a negative ack and an ack timeout in the same
    delivery is dead-lettered by the first, and the second's redeliver request reaches the broker before the
    grouped ack of the original, so another consumer gets it over the limit and dead-letters it again.

    Not on 4.1 Key_Shared: with batch-index acks on, a redelivered, partly acked batch is acked with ack sets only
    (the client's ack set keeps the indexes the broker had filtered out, as `ConsumerImpl` does) and the broker
    removes a pending ack only for an ack without ack set, so the hash can stay draining after consumers change.
    That is Pulsar's own behaviour up to the 2026 fix of the client's ack set (apache/pulsar#26125, PR #26135:
    the redelivered batch's ack set is not synced with the broker's, so the batch never counts as fully acked).
    """
    assume(not (w.version == "4.1" and w.key_shared))
    lab, _acked, dead = outcome(w)
    by_count = [(e.ledger, e.entry) for e in lab.events.of_kind("dead_lettered") if e.reason == "redelivery count"]
    if w.ack_group_ms == 0:
        assert len(by_count) == len(set(by_count))
    copies = sum(len(e.copy["ids"]) for e in lab.events.of_kind("dead_lettered"))
    assert copies == len(dead)


@given(workloads())
@settings(max_examples=10, deadline=None)
def test_the_same_workload_and_seed_give_the_same_event_log(w):
    assert run(w)[0].events.digest() == run(w)[0].events.digest()


@given(
    version=st.sampled_from(["3.0", "4.0", "4.1"]),
    delay=st.integers(100, 5000),
    gaps=st.lists(st.integers(0, 900), min_size=1, max_size=8),
    backoff=st.one_of(st.none(), st.tuples(st.integers(100, 2000), st.integers(2, 4))),
    renacks=st.integers(0, 2),
)
@SETTINGS
def test_no_negative_ack_redelivery_before_its_delay(version, delay, gaps, backoff, renacks):
    """3.x is never early; 4.0.2+/4.1 may be early by the bucket (up to 2^8 - 1 ms), never more."""
    lab = pl.Lab(version=version, seed=1)
    client = lab.client()
    policy = pl.MultiplierRedeliveryBackoff(backoff[0], backoff[0] * 20, backoff[1]) if backoff else None
    consumer = client.subscribe(
        TOPIC,
        "sub",
        consumer_type=pl.ConsumerType.Shared,
        negative_ack_redelivery_delay_ms=delay,
        lab_negative_ack_redelivery_backoff=policy,
    )
    producer = client.create_producer(TOPIC)
    for i in range(len(gaps)):
        producer.send(f"m{i}".encode())
    early = 0 if version == "3.0" else (1 << 8) - 1
    nacks: list[tuple[tuple[int, int], int, int, int]] = []  # (entry, time, delay, events so far)
    pending = [consumer.receive(0) for _ in gaps]
    while pending:
        msg = pending.pop(0)
        lab.advance(gaps[len(nacks) % len(gaps)])
        mid = msg.message_id()
        wanted = policy.next(msg.redelivery_count()) if policy else delay
        consumer.negative_acknowledge(msg)
        nacks.append(((mid.ledger, mid.entry), lab.now(), wanted, len(lab.events)))
        if msg.redelivery_count() < renacks:
            pending.append(consumer.receive(timeout_millis=200_000))
    lab.run_until_idle()
    dispatched = [(e.seq, e.time, (e.ledger, e.entry)) for e in lab.events.of_kind("dispatched")]
    for pos, at, wanted, seq in nacks:
        after = [t for n, t, p in dispatched if p == pos and n >= seq]
        assert after, "a negatively acknowledged message never came back"
        assert after[0] >= at + wanted - early, (pos, at, wanted, after[0])
        if version == "3.0" and policy is None:  # deadline map, checked every delay/3 (ns, run on whole ms)
            interval_ms = -(-(max(wanted, 100) * 1_000_000 // 3) // 1_000_000)
            assert after[0] <= at + max(wanted, 100) + interval_ms


@given(
    ack_timeout=st.sampled_from([1000, 1200, 2000, 3000, 5000]),
    tick=st.sampled_from([100, 300, 1000, 2000, 7000]),
    receive_at=st.lists(st.integers(0, 3000), min_size=1, max_size=6),
    key_shared=st.booleans(),
)
@SETTINGS
def test_ack_timeout_never_redelivers_before_its_window(ack_timeout, tick, receive_at, key_shared):
    """A received, unacknowledged message comes back after more than ceil(timeout/tick)*tick and at most one
    tick later (reference §8.1, golden README-dispatch §4)."""
    lab = pl.Lab(seed=1)
    client = lab.client()
    ctype = pl.ConsumerType.KeyShared if key_shared else pl.ConsumerType.Shared
    consumer = client.subscribe(
        TOPIC, "sub", consumer_type=ctype, unacked_messages_timeout_ms=ack_timeout, lab_tick_duration_ms=tick
    )
    producer = client.create_producer(TOPIC)
    for i in range(len(receive_at)):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    received = {}
    for at in sorted(receive_at):
        lab.run_until(max(at, lab.now()))
        msg = consumer.receive(0)  # the fresh messages were queued first
        mid = msg.message_id()
        received[(mid.ledger, mid.entry)] = (lab.now(), len(lab.events))
    lab.advance(3 * ack_timeout + 2 * tick)
    step = min(tick, ack_timeout)
    low = -(-ack_timeout // step) * step
    dispatched = [(e.seq, e.time, (e.ledger, e.entry), e.redelivery_count) for e in lab.events.of_kind("dispatched")]
    for pos, (at, seq) in received.items():
        again = [(t, count) for n, t, p, count in dispatched if p == pos and n >= seq]
        assert again and again[0][1] == 1
        assert low < again[0][0] - at <= low + step
