"""`pulsarlab watch` against `pulsarlab serve --admin-port` running a real `pulsar-client` workload.

Key_Shared on Pulsar 4.0: ``holder`` takes the first messages and stops acknowledging three of them, ``nacker``
joins (the hashes it takes from ``holder`` start draining) and negatively acknowledges every message the first
time it sees it. The watch polls the served lab's admin REST API; what it draws must be what the model holds
(`SnapshotBuilder` under the server's lock) field for field. Every wait is on the state it means (the lab's
stats, the application's own record of what it nacked and acked), bounded.
"""

from __future__ import annotations

import threading

import pulsar
import pytest
from serve_support import client_for, receive_all, served_lab, wait_until

import pulsarlab as pl
from pulsarlab.snapshot.lab import SnapshotBuilder
from pulsarlab.watch import AdminClient, Watcher
from pulsarlab.watch.reproduce import reproduce

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/orders"


def _sub_stats(lab: pl.Lab, server) -> dict:
    with server.lock:
        return lab.admin.topics.stats(TOPIC)["subscriptions"]["workers"]


def _same_as_the_model(watched, model) -> None:
    """The watch's picture of the subscription equals the model's own snapshot of it."""
    mine = watched.subscription(TOPIC, "workers")
    theirs = model.subscription(TOPIC, "workers")
    assert mine.type == theirs.type == "Key_Shared"
    assert mine.cursor.mark_delete == theirs.cursor.mark_delete
    assert mine.cursor.read_position == theirs.cursor.read_position
    assert mine.cursor.individually_deleted_messages == theirs.cursor.individually_deleted_messages
    assert mine.cursor.individually_deleted == tuple(tuple(r) for r in theirs.cursor.individually_deleted)
    names = {c.id: c.name for c in theirs.consumers}
    my_names = {c.id: c.name for c in mine.consumers}
    assert sorted(my_names.values()) == sorted(names.values())
    for c in theirs.consumers:
        m = mine.consumer(c.name)
        assert (m.unacked, m.permits, m.blocked) == (c.unacked, c.permits, c.blocked), c.name
        assert mine.hash_ranges(m.id) == theirs.hash_ranges(c.id), c.name
    drain = sorted((names[d.consumer], d.hash, d.ref_count, d.blocked) for d in theirs.dispatcher.draining)
    my_drain = sorted((my_names[d.consumer], d.hash, d.ref_count, d.blocked) for d in mine.dispatcher.draining)
    assert my_drain == drain


def _keys_nacker_takes() -> list[str]:
    """The keys the Key_Shared selector gives ``nacker`` once it joins ``holder`` (a scratch lab, same names)."""
    scratch = pl.Lab(version="4.0")
    c = scratch.client()
    for name in ("holder", "nacker"):
        c.subscribe("orders", "workers", pl.ConsumerType.KeyShared, consumer_name=name)
    selector = scratch.service.topics[TOPIC].subscriptions["workers"].dispatcher.selector
    return [k for k in (f"customer-{i}" for i in range(6)) if selector.select_key(k).name == "nacker"]


def test_watch_follows_a_real_client_workload_on_serve(tmp_path):
    moving = _keys_nacker_takes()
    assert moving and len(moving) < 6
    with served_lab(version="4.0", seed=3) as (lab, server), client_for(server) as client:
        holder = client.subscribe(TOPIC, "workers", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name="holder")
        producer = client.create_producer(TOPIC, batching_enabled=False)
        for i in range(24):
            producer.send(f"order-{i}".encode(), partition_key=f"customer-{i % 6}")
        got = [m for _n, m in receive_all({"holder": holder}, 24)]
        # holder stops acknowledging three messages, at least one of a key nacker will take (it drains)
        held = [m for m in got if m.partition_key() == moving[0]][:2]
        held += [m for m in got if m not in held][:1]
        for m in got:
            if m not in held:
                holder.acknowledge(m)
        wait_until(lambda: _sub_stats(lab, server)["msgBacklog"] == 3, what="holder's 21 acks")

        watcher = Watcher(AdminClient(server.admin_url), "orders", 0.5)
        state = watcher.poll()
        assert watcher.profile == "4.0" and "keyHashRangeArrays" in watcher.profile_reason
        assert "ack-holes" in {t.finding.rule for t in state.findings}
        with server.lock:
            model = SnapshotBuilder(lab).build()
        _same_as_the_model(state.snapshot, model)

        # a consumer that nacks joins; the hashes it takes from holder drain
        nacker = client.subscribe(
            TOPIC,
            "workers",
            consumer_type=pulsar.ConsumerType.KeyShared,
            consumer_name="nacker",
            negative_ack_redelivery_delay_ms=200,
        )
        nacked: set[str] = set()
        acked: set[str] = set()
        stop = threading.Event()
        failed: list[Exception] = []

        def work() -> None:
            try:
                while not stop.is_set():
                    try:
                        m = nacker.receive(100)
                    except pulsar.Timeout:
                        continue
                    text = m.data().decode()
                    if m.redelivery_count() == 0:
                        nacked.add(text)
                        nacker.negative_acknowledge(m)
                    else:
                        nacker.acknowledge(m)
                        acked.add(text)
            except Exception as e:  # noqa: BLE001 - the test reports it, instead of waiting out a dead thread
                failed.append(e)

        worker = threading.Thread(target=work)
        worker.start()
        try:
            for i in range(24, 36):
                producer.send(f"order-{i}".encode(), partition_key=f"customer-{i % 6}")
            mine = sum(1 for i in range(24, 36) if f"customer-{i % 6}" not in moving)
            for _n, m in receive_all({"holder": holder}, mine):  # holder acks the new messages of its keys
                holder.acknowledge(m)

            def settled() -> bool:
                assert failed == [], f"nacker's thread raised {failed}"
                s = _sub_stats(lab, server)
                by_name = {c["consumerName"]: c for c in s["consumers"]}
                return (
                    bool(nacked)
                    and nacked <= acked
                    and by_name["nacker"]["unackedMessages"] == 0
                    and by_name["holder"]["unackedMessages"] == 3
                    and s["msgBacklog"] == 3 + s["msgInReplay"]
                )

            wait_until(settled, timeout_s=30, what="the nacked messages redelivered and acked")
            state = watcher.poll()
            with server.lock:
                model = SnapshotBuilder(lab).build()
            _same_as_the_model(state.snapshot, model)
            rules = {t.finding.rule for t in state.findings}
            assert "ack-holes" in rules
            sub = state.snapshot.subscription(TOPIC, "workers")
            assert sub.dispatcher.draining and "draining-hashes" in rules
            assert {d.consumer for d in sub.dispatcher.draining} == {sub.consumer("holder").id}
            holes = next(t for t in state.findings if t.finding.rule == "ack-holes")
            assert holes.polls == 2
            for m in held:  # holder acks at last: the draining hashes clear, nacker gets their messages
                holder.acknowledge(m)
            wait_until(lambda: _sub_stats(lab, server)["msgBacklog"] == 0, timeout_s=30, what="the backlog to drain")
        finally:
            stop.set()
            worker.join(10)
        assert not worker.is_alive() and failed == [], f"nacker's thread: alive {worker.is_alive()}, raised {failed}"
        state = watcher.poll()
        cleared = {t.finding.rule for t in state.changes.cleared}
        assert {"ack-holes", "draining-hashes"} <= cleared and state.findings == ()
        out = watcher.save(tmp_path / "serve-watch.plt.jsonl.gz")

    tl = pl.load_timeline(out)
    assert len(tl) == 3 and [f.event.kind for f in tl] == ["admin_polled"] * 3
    rep = reproduce(tl, frame=1)
    assert {"holder", "nacker"} <= set(rep.consumers)
    assert "holder's Key_Shared hash ranges" in rep.explain() and "nacker's Key_Shared hash ranges" in rep.explain()
    assert len(rep.held["holder"]) == 3
