"""Redelivery in snapshots and its two views, headless: message lives from the event log, the trackers'
internals per frame, the figures the player shows, and their errors."""

from __future__ import annotations

import json
from functools import partial

import plotly.graph_objects as go
import pytest

import pulsarlab as pl
from pulsarlab.snapshot.lab import snapshot
from pulsarlab.snapshot.recorder import VIEW_KINDS, Recorder
from pulsarlab.snapshot.redelivery import (
    ACKED,
    COUNTED,
    DEAD_LETTERED,
    DELIVERED,
    DLQ_CANDIDATE,
    NACK_DUE,
    NACKED,
    PUBLISHED,
    REDELIVERY_ASKED,
    RETRIED,
    TIMED_OUT,
    message_lives,
)
from pulsarlab_widgets.player import Player, render
from pulsarlab_widgets.views.redelivery_timeline import redelivery_timeline_view
from pulsarlab_widgets.views.redelivery_trackers import pick_tracker, redelivery_trackers_view


def recorded(version="4.0"):
    """a: nacked until it is dead-lettered; b: ignored (ack timeout) once, then acked; c: retried once."""
    lab = pl.Lab(version=version, seed=1)
    rec = Recorder(lab)
    client = lab.client()
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=pl.ConsumerType.Shared,
        consumer_name="c1",
        negative_ack_redelivery_delay_ms=1000,
        unacked_messages_timeout_ms=3000,
        lab_retry_enable=True,
        dead_letter_policy=pl.ConsumerDeadLetterPolicy(2),
    )
    producer = client.create_producer("orders")
    for payload in (b"a", b"b", b"c"):
        producer.send(payload)
    seen_b = 0
    while True:
        try:
            msg = consumer.receive(timeout_millis=6000)
        except pl.Timeout:
            break
        if msg.data() == b"a":
            consumer.negative_acknowledge(msg)
        elif msg.data() == b"b":
            seen_b += 1
            if seen_b > 1:
                consumer.acknowledge(msg)
        elif msg.properties().get("RECONSUMETIMES"):
            consumer.acknowledge(msg)
        else:
            consumer.reconsume_later(msg, 500)
    lab.advance(200)
    return lab, rec, consumer


@pytest.fixture(scope="module")
def run():
    return recorded()


def test_lives_follow_each_message(run):
    lab, rec, _consumer = run
    lives = message_lives(rec[-1].snapshot.redelivery, subscription="sub")
    by_label = {life.label: life for life in lives}
    a, b, c = (by_label[f"orders 3:{i}"] for i in range(3))
    assert a.outcome == "dead-lettered" and a.deliveries == 3 and a.max_redelivery_count == 2
    kinds = a.kinds()
    assert kinds[:4] == [PUBLISHED, DELIVERED, NACKED, NACK_DUE]
    assert kinds.count(NACKED) == 3 and kinds.count(COUNTED) == 2 and kinds.count(REDELIVERY_ASKED) == 2
    assert kinds.index(DLQ_CANDIDATE) < kinds.index(DEAD_LETTERED) < kinds.index(ACKED)
    assert [s.count for s in a.steps if s.kind == DELIVERED] == [0, 1, 2]
    assert b.outcome == "acked" and TIMED_OUT in b.kinds() and b.deliveries == 2
    assert c.outcome == "retried" and c.kinds().count(RETRIED) == 1
    # copies come right after their origin, linked to it
    i = lives.index(a)
    assert lives[i + 1].origin == (a.topic, 3, 0) and lives[i + 1].topic.endswith("orders-sub-DLQ")
    retry_copy = lives[lives.index(c) + 1]
    assert retry_copy.origin == (c.topic, 3, 2) and retry_copy.outcome == "acked"
    assert [s.delay_ms for s in c.steps if s.kind == RETRIED] == [500]


def test_frames_hold_a_growing_prefix_of_the_steps(run):
    _lab, rec, _consumer = run
    sizes = [len(f.snapshot.redelivery.steps) for f in rec]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    frame = rec[rec.find("negative_acked")]
    assert all(s.event_index <= frame.event_index for s in frame.snapshot.redelivery.steps)
    whole = snapshot(rec.lab).redelivery  # a fresh builder folds the whole log the same way
    assert tuple(whole.steps) == tuple(rec[-1].snapshot.redelivery.steps)
    assert json.loads(rec[-1].snapshot.to_json())["redelivery"]["steps"][0]["kind"] == PUBLISHED


def test_trackers_in_snapshots():
    lab = pl.Lab(version="3.0", seed=1)
    rec = Recorder(lab)
    client = lab.client()
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=pl.ConsumerType.Shared,
        consumer_name="c1",
        unacked_messages_timeout_ms=3000,
        lab_tick_duration_ms=1000,
        negative_ack_redelivery_delay_ms=900,
    )
    producer = client.create_producer("orders")
    ids = [producer.send(f"m{i}".encode()) for i in range(2)]
    lab.advance(400)
    ignored, nacked = consumer.receive(0), consumer.receive(0)
    consumer.negative_acknowledge(nacked)
    t = snapshot(lab).redelivery.tracker("c1")
    assert t.ack_timeout_ms == 3000 and t.tick_ms == 1000 and len(t.ring) == 4
    assert t.ring[-1] == ((ids[0].ledger, ids[0].entry, -1),) and t.tracked == 1 and t.next_tick_ms == 1000
    assert [(n.ledger, n.entry, n.due_ms) for n in t.nacks] == [(ids[1].ledger, ids[1].entry, 400 + 900)]
    assert t.nack_form == "deadline_map" and t.nack_step_ms == 300 and t.next_nack_ms == 700
    lab.advance(1000)  # one tick: the id moved one set closer to the head
    t = snapshot(lab).redelivery.tracker("c1")
    assert t.ring[-2] == ((ids[0].ledger, ids[0].entry, -1),)
    frames = [f for f in rec if f.kind == "ack_timeout_tick"]
    assert frames and frames[0].snapshot.redelivery.tracker(consumer.consumer_name()).tracked >= 1
    assert ignored.message_id() == ids[0]


def test_four_x_trackers_show_buckets():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=pl.ConsumerType.Shared,
        consumer_name="c1",
        negative_ack_redelivery_delay_ms=1000,
        dead_letter_policy=pl.ConsumerDeadLetterPolicy(1),
    )
    producer = client.create_producer("orders")
    producer.send(b"m")
    lab.advance(300)
    consumer.negative_acknowledge(consumer.receive(0))
    t = pick_tracker(snapshot(lab), None)
    assert t.nack_form == "time_buckets" and t.nack_step_ms == 256
    assert [n.due_ms for n in t.nacks] == [(300 + 1000) & ~255] and t.nacks[0].partition == -2
    assert t.max_redeliver_count == 1 and t.dead_letter_topics == ("persistent://public/default/orders-sub-DLQ",)
    msg = consumer.receive(timeout_millis=2000)
    assert snapshot(lab).redelivery.tracker("c1").dlq_candidates == ((msg.message_id().ledger, msg.message_id().entry),)


@pytest.mark.parametrize("view", [redelivery_timeline_view, redelivery_trackers_view])
def test_views_draw_every_frame(run, view):
    _lab, rec, _consumer = run
    for i in range(0, len(rec), 7):
        fig = render(view, rec, i, since=i - 1 if i else None)
        assert isinstance(fig, go.Figure) and fig.layout.title.text
    last = view(rec[-1].snapshot, [rec[-1].event])
    assert isinstance(last, go.Figure)


def test_timeline_figure_content(run):
    _lab, rec, _consumer = run
    fig = redelivery_timeline_view(rec[-1].snapshot, subscription="sub")
    names = {t.name for t in fig.data if t.name and len(t.x)}  # the kinds drawn (every kind has a trace)
    assert {
        "delivered",
        "negatively acknowledged",
        "ack timeout",
        "sent to the DLQ",
        "sent to the retry topic",
        "redelivery counted",
    } <= names
    joined = [t for t in fig.data if t.mode == "lines" and t.line.dash == "dash" and len(t.x)]
    assert joined, "a copy's row is joined to its origin's by a dashed line"
    ticks = list(fig.layout.yaxis.ticktext)
    assert "orders 3:0 · → DLQ" in ticks and any(t.startswith("↳ orders-sub-DLQ") for t in ticks)
    assert "1 retried" in fig.layout.title.text and "1 dead-lettered" in fig.layout.title.text
    delivered = next(t for t in fig.data if t.name == "delivered")
    assert {"0", "1", "2"} <= set(delivered.text)  # each delivery shows the redelivery count it carried
    small = redelivery_timeline_view(rec[-1].snapshot, max_messages=2)
    assert len(small.layout.yaxis.ticktext) == 2 and "first 2 shown" in small.layout.title.text


def test_trackers_figure_content():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=pl.ConsumerType.Shared,
        consumer_name="c1",
        unacked_messages_timeout_ms=2000,
        negative_ack_redelivery_delay_ms=800,
    )
    producer = client.create_producer("orders")
    for i in range(3):
        producer.send(f"m{i}".encode())
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.negative_acknowledge(msgs[0])
    fig = redelivery_trackers_view(snapshot(lab), consumer="c1")
    (bars,) = [t for t in fig.data if t.type == "bar"]
    assert list(bars.y) == [0, 0, 2] and bars.x[0] == "head"
    assert "4.x time buckets of 256 ms" in fig.layout.annotations[1].text
    (due,) = [t for t in fig.data if t.type == "scatter"]
    assert list(due.x) == [768]
    off = redelivery_trackers_view(snapshot(pl.Lab(seed=1)))
    assert "no consumer yet" in off.layout.annotations[0].text


def test_views_fail_clearly(run):
    _lab, rec, _consumer = run
    with pytest.raises(TypeError, match="LabSnapshot"):
        redelivery_timeline_view({"kind": "x"})
    with pytest.raises(ValueError, match="max_messages"):
        redelivery_timeline_view(rec[-1].snapshot, max_messages=0)
    with pytest.raises(KeyError, match="no consumer 'nobody'"):
        redelivery_trackers_view(rec[-1].snapshot, consumer="nobody")
    with pytest.raises(KeyError):
        redelivery_timeline_view(rec[-1].snapshot, topic="no-such-topic")
    empty = redelivery_timeline_view(snapshot(pl.Lab(seed=1)))
    assert "no message stored yet" in empty.layout.annotations[0].text


def test_player_steps_through_the_redelivery_views(run):
    _lab, rec, _consumer = run
    player = Player(rec, [partial(redelivery_timeline_view, subscription="sub"), redelivery_trackers_view], start=0)
    assert "dead_lettered" in player.kinds() and "negative_acked" in player.kinds()
    player.jump_to_kind("dead_lettered")
    assert rec[player.index].kind == "dead_lettered"
    player.step()
    player.back()
    assert len(player.figures) == 2


def test_view_kinds_keep_the_redelivery_frames():
    lab = pl.Lab(version="4.0", seed=1)
    rec = Recorder(lab, every=VIEW_KINDS)
    client = lab.client()
    consumer = client.subscribe(
        "orders",
        "sub",
        consumer_type=pl.ConsumerType.Shared,
        negative_ack_redelivery_delay_ms=100,
        dead_letter_policy=pl.ConsumerDeadLetterPolicy(1),
    )
    client.create_producer("orders").send(b"m")
    for _ in range(2):
        consumer.negative_acknowledge(consumer.receive(timeout_millis=1000))
    lab.advance(1000)
    kinds = set(rec.kinds())
    assert {
        "negative_acked",
        "nack_timer_fired",
        "redeliver_ids",
        "redelivery_counted",
        "dead_letter_candidate",
        "dead_lettered",
        "letter_producer_created",
    } <= kinds
    assert message_lives(rec[-1].snapshot.redelivery)[0].outcome == "dead-lettered"
