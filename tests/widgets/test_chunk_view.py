"""The chunk reassembly view, headless: snapshot fields, figures for every subscription type, the pending map
filling and emptying, eviction and discard marks, and the player stepping through a recorded run."""

from __future__ import annotations

import json
from functools import partial

import plotly.graph_objects as go
import pytest

import pulsarlab as pl
from pulsarlab.snapshot.lab import snapshot
from pulsarlab.snapshot.recorder import Recorder
from pulsarlab_widgets.player import Player
from pulsarlab_widgets.views.chunk_reassembly import (
    chunk_reassembly_view,
    pending_rows,
    producer_colors,
    summary,
    topic_chunks,
)

TYPES = [pl.ConsumerType.Exclusive, pl.ConsumerType.Failover, pl.ConsumerType.Shared, pl.ConsumerType.KeyShared]


def three_producers(consumer_type=pl.ConsumerType.Exclusive, max_pending=2, consumers=1):
    """Three producers send one 3-chunk message each at t = 0, chunks interleaved 1 ms apart."""
    lab = pl.Lab(version="4.0", seed=2, broker_config={"maxMessageSize": 100})
    rec = Recorder(lab)
    client = lab.client()
    subs = [
        client.subscribe(
            "big",
            "s",
            consumer_type=consumer_type,
            consumer_name=f"c{i}",
            max_pending_chunked_message=max_pending,
            auto_ack_oldest_chunked_message_on_queue_full=True,
        )
        for i in range(consumers)
    ]
    lab.advance(1000)  # Failover: the delay before the first read
    for name in ("p0", "p1", "p2"):
        client.create_producer(
            "big", producer_name=name, chunking_enabled=True, lab_chunk_send_interval_ms=1
        ).send_async(bytes(200), None)
    lab.advance(50)
    return lab, rec, subs


def trace(fig: go.Figure, name: str):
    return next(t for t in fig.data if t.name == name)


def test_snapshots_carry_each_entrys_chunk_fields_and_each_consumers_pending_map():
    lab, rec, _subs = three_producers()
    t = snapshot(lab).topic("big")
    chunks = [c for led in t.ledgers for c in led.chunks]
    assert len(chunks) == 9 and all(c is not None for c in chunks)
    assert [(c.uuid, c.chunk_id) for c in chunks[:3]] == [("p0-0", 0), ("p1-0", 0), ("p2-0", 0)]
    frame = rec[rec.find("chunk_discarded")]
    pending = frame.snapshot.subscription("big", "s").consumers[0].chunks
    assert [p.uuid for p in pending.pending] == ["p1-0", "p2-0"]
    assert pending.max_pending == 2 and pending.pending_count == 2 and pending.auto_ack_oldest
    assert pending.uuid_queue == ("p1-0", "p2-0")
    assert all(p.stored == 1 and p.total_chunks == 3 for p in pending.pending)
    json.loads(frame.snapshot.to_json())


@pytest.mark.parametrize("consumer_type", TYPES, ids=lambda t: t.name)
def test_the_view_draws_every_subscription_type(consumer_type):
    lab, rec, _subs = three_producers(
        consumer_type, max_pending=10, consumers=1 if consumer_type is pl.ConsumerType.Exclusive else 2
    )
    assert rec.errors == []
    for i in (0, rec.find("chunk_received"), len(rec) - 1):
        fig = chunk_reassembly_view(rec[i].snapshot, [rec[i].event] if rec[i].event is not None else [])
        assert isinstance(fig, go.Figure)
    last = snapshot(lab)
    fig = chunk_reassembly_view(last)
    producers = [t for t in fig.data if t.name and t.name.startswith("producer ")]
    assert sorted(t.name for t in producers) == ["producer p0", "producer p1", "producer p2"]
    assert sum(len(t.x) for t in producers) == 9
    assert not pending_rows(last.subscription("big", "s"))  # every message assembled


def test_the_pending_map_fills_then_the_oldest_is_evicted_and_its_later_chunks_are_marked_discarded():
    _lab, rec, _subs = three_producers()
    i = rec.find("chunk_received")
    third = rec.find("chunk_received", rec.find("chunk_received", i + 1) + 1)
    rows = pending_rows(rec[third].snapshot.subscription("big", "s"))  # logged before p2-0's chunk 0 is stored
    assert [p.uuid for _c, p in rows] == ["p0-0", "p1-0"]
    k = rec.find("chunk_discarded")
    fig = chunk_reassembly_view(rec[k].snapshot, [rec[k].event])
    crosses = trace(fig, "chunk discarded this step")
    assert list(crosses.x) == [1] and list(crosses.y) == ["c0 · p0-0 (no context)"]
    assert "discarded chunk 1 of p0-0" in fig.layout.title.text
    stored = trace(fig, "chunk stored")
    assert sorted(stored.y) == ["c0 · p1-0", "c0 · p2-0"]
    missing = trace(fig, "chunk missing")
    assert len(missing.x) == 4  # chunks 1 and 2 of the two pending messages
    e = rec.find("chunked_message_evicted")
    evicted = chunk_reassembly_view(rec[e].snapshot, [rec[e].event])
    assert "dropped p0-0 (queue full), chunks acked" in evicted.layout.title.text


def test_topic_entries_follow_the_ledger_with_one_colour_per_producer():
    lab, _rec, _subs = three_producers()
    t = snapshot(lab).topic("big")
    entries = topic_chunks(t)
    assert [pos for pos, _c in entries] == [(3, e) for e in range(9)]
    colors = producer_colors(t)
    assert list(colors) == ["p0", "p1", "p2"] and len(set(colors.values())) == 3
    fig = chunk_reassembly_view(snapshot(lab), max_entries=4)
    shown = sorted(x for tr in fig.data if tr.name and tr.name.startswith("producer ") for x in tr.x)
    assert shown == [0, 1, 2, 3]


def test_summary_and_empty_states():
    lab = pl.Lab(broker_config={"maxMessageSize": 100})
    assert "no subscription yet" in chunk_reassembly_view(snapshot(lab)).layout.annotations[0].text
    client = lab.client()
    client.subscribe("big", "s", consumer_name="c0")
    assert summary(snapshot(lab)) == "c0: no chunk received yet"
    producer = client.create_producer("big", chunking_enabled=True, lab_chunk_send_interval_ms=5)
    producer.send_async(bytes(300), None)
    lab.advance(1)
    assert summary(snapshot(lab)) == ("c0: pending standalone-0-0-0 (1/4); 1 pending message counted, limit 10")
    with pytest.raises(TypeError, match="LabSnapshot"):
        chunk_reassembly_view({"kind": "x"})
    with pytest.raises(ValueError, match="max_entries"):
        chunk_reassembly_view(snapshot(lab), max_entries=0)


def test_the_player_steps_through_a_recorded_run_with_the_view():
    _lab, rec, _subs = three_producers()
    player = Player(rec, [partial(chunk_reassembly_view, subscription="s")])
    assert "chunk_discarded" in player.kinds() and "chunked_message_evicted" in player.kinds()
    player.jump_to_kind("chunked_message_evicted")
    assert "queue full" in player.explanation
    at = player.jump_to_kind("chunked_message_assembled")
    assert "assembled p1-0" in player.figures[0].layout.title.text
    player.back()
    assert "assembled" not in player.figures[0].layout.title.text
    player.step()
    assert player.index == at
    assert (
        player.figures[0].layout.title.text
        == chunk_reassembly_view(rec[at].snapshot, [rec[at].event]).layout.title.text
    )
