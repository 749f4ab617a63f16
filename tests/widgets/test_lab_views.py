"""Lab snapshots, the recorder and the broker-model views: JSON-friendly snapshots, headless figures for every
subscription type, frames that step back to earlier states, and the acks / failover exercise checkers."""

from __future__ import annotations

import dataclasses
import json
from functools import partial
from typing import Any, Callable

import plotly.graph_objects as go
import pytest

import pulsarlab as pl
from pulsarlab.exercises.acks import (
    ack_flush_answer,
    ack_ranges_answer,
    batch_redelivery_answer,
    check_ack_flush_times,
    check_ack_ranges,
    check_batch_redelivery,
)
from pulsarlab.exercises.failover import check_failover_assignment, check_failover_takeover, takeover_answer
from pulsarlab.snapshot.lab import LabSnapshot, snapshot
from pulsarlab.snapshot.recorder import VIEW_KINDS, Recorder
from pulsarlab_widgets.player import Player
from pulsarlab_widgets.views.cursor import DELETED, HOLE, cursor_view, entry_states
from pulsarlab_widgets.views.dispatch_timeline import dispatch_timeline_view, series
from pulsarlab_widgets.views.failover_graph import ACTIVE, PENDING, failover_graph, failover_graph_view
from pulsarlab_widgets.views.key_shared_blocking import blocking_rows, key_shared_blocking_view

VIEWS = (cursor_view, dispatch_timeline_view, failover_graph_view, key_shared_blocking_view)
TYPES = {
    "Exclusive": pl.ConsumerType.Exclusive,
    "Failover": pl.ConsumerType.Failover,
    "Shared": pl.ConsumerType.Shared,
    "Key_Shared": pl.ConsumerType.KeyShared,
}


def workload(type_name: str, version: str = "4.0", partitions: int = 0, record: bool = True) -> tuple[pl.Lab, Any]:
    """Two consumers (one for Exclusive), batched and single messages with keys, some acks, a consumer leaving."""
    lab = pl.Lab(version=version, seed=3, broker_config={"managedLedgerMaxEntriesPerLedger": 4})
    if partitions:
        lab.admin.topics.create_partitioned_topic("t", partitions)
    rec = Recorder(lab) if record else None
    client = lab.client()
    ctype = TYPES[type_name]
    c1 = client.subscribe("t", "s", consumer_type=ctype, consumer_name="c1", receiver_queue_size=6)
    c2 = None
    if type_name != "Exclusive":
        c2 = client.subscribe(
            "t",
            "s",
            consumer_type=ctype,
            consumer_name="c2",
            receiver_queue_size=6,
            lab_priority_level=1 if type_name == "Failover" else 0,
        )
    lab.advance(1000)  # the Failover delay before the first read
    producer = client.create_producer("t", batching_enabled=True, batching_max_messages=3)
    for i in range(14):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i % 5}")
    lab.run_until_idle()
    for c in (c1, c2):
        for _ in range(4):
            if c is not None and c.receiver_queue:
                c.acknowledge(c.receive(0))
    lab.advance(100)
    if c2 is not None:
        c2.close()
    if c1.receiver_queue:
        c1.receive(0)
    lab.advance(50)
    return lab, rec


def scenarios() -> list[Any]:
    out = [pytest.param(t, "4.0", 0, id=f"{t}-4.0") for t in TYPES]
    out += [
        pytest.param("Key_Shared", "3.0", 0, id="Key_Shared-3.0"),
        pytest.param("Shared", "4.1", 0, id="Shared-4.1"),
        pytest.param("Failover", "4.0", 3, id="Failover-partitioned"),
    ]
    return out


# -- snapshots ------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_name,version,partitions", scenarios())
def test_snapshots_are_json_serialisable_and_frozen(type_name: str, version: str, partitions: int) -> None:
    lab, rec = workload(type_name, version, partitions)
    assert rec.errors == []
    snap = snapshot(lab)
    text = json.dumps(snap.to_dict())
    assert json.loads(text) == snap.to_dict()
    assert snap.to_json() == text
    mid = rec[len(rec) // 2].snapshot
    assert json.loads(mid.to_json())["history"], "a recorder frame carries its history"
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.time = 0  # type: ignore[misc]
    sub = snap.subscription("t-partition-0" if partitions else "t", "s")
    assert sub.type == type_name


@pytest.mark.parametrize("type_name,version,partitions", scenarios())
def test_snapshot_agrees_with_admin_stats(type_name: str, version: str, partitions: int) -> None:
    lab, _rec = workload(type_name, version, partitions)
    snap = snapshot(lab)
    for t in snap.topics:
        internal = lab.admin.topics.stats_internal(t.name)
        stats = lab.admin.topics.stats(t.name)
        assert [led.ledger_id for led in t.ledgers] == [led["ledgerId"] for led in internal["ledgers"]]
        assert sum(led.entries for led in t.ledgers) == internal["numberOfEntries"]
        for s in t.subscriptions:
            cur = internal["cursors"][s.name]
            assert f"{s.cursor.mark_delete[0]}:{s.cursor.mark_delete[1]}" == cur["markDeletePosition"]
            assert f"{s.cursor.read_position[0]}:{s.cursor.read_position[1]}" == cur["readPosition"]
            assert s.cursor.individually_deleted_messages == cur["individuallyDeletedMessages"]
            assert s.cursor.backlog == stats["subscriptions"][s.name]["msgBacklog"]
            by_name = {c["consumerName"]: c for c in stats["subscriptions"][s.name]["consumers"]}
            for c in s.consumers:
                assert c.permits == by_name[c.name]["availablePermits"]
                assert c.unacked == by_name[c.name]["unackedMessages"]
                assert c.blocked == by_name[c.name]["blockedConsumerOnUnackedMsgs"]
            if s.dispatcher is not None and s.dispatcher.type in ("Exclusive", "Failover"):
                active = stats["subscriptions"][s.name].get("activeConsumerName")
                assert (
                    s.consumer(s.dispatcher.active_consumer).name if s.dispatcher.active_consumer is not None else None
                ) == active


def six_received_in_ledgers_of_three() -> tuple[pl.Lab, Any, list[Any]]:
    """Six messages on "t" (3 entries per ledger) received by an individually acking consumer of "s"."""
    lab = pl.Lab(version="4.0", broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    client = lab.client()
    consumer = client.subscribe("t", "s", lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(6):
        producer.send(f"m{i}".encode())
    return lab, consumer, [consumer.receive(0) for _ in range(6)]


def test_single_delete_in_the_snapshot_and_the_cursor_view() -> None:
    """testSingleDelete (reference §7.2): acks of p4, p1, p3, p3, p2, p5 with 3 entries per ledger."""
    lab, consumer, msgs = six_received_in_ledgers_of_three()
    seen = []
    for i in (3, 0, 2, 2, 1, 4):
        consumer.acknowledge(msgs[i])
        cur = snapshot(lab).subscription().cursor
        seen.append((cur.mark_delete, cur.individually_deleted_messages))
    assert seen == [
        ((3, -1), "[(4:-1..4:0]]"),
        ((3, 0), "[(4:-1..4:0]]"),
        ((3, 0), "[(3:1..3:2],(4:-1..4:0]]"),
        ((3, 0), "[(3:1..3:2],(4:-1..4:0]]"),
        ((4, 0), "[]"),
        ((4, 1), "[]"),
    ]


def test_cursor_view_colours_holes_and_individually_deleted_entries() -> None:
    lab, consumer, msgs = six_received_in_ledgers_of_three()
    for i in (0, 2, 4):
        consumer.acknowledge(msgs[i])
    snap = snapshot(lab)
    t = snap.topic("t")
    states = entry_states(t, t.subscription("s"))
    assert [p for p, s in states.items() if s == HOLE] == [(3, 1), (4, 0)]
    assert [p for p, s in states.items() if s == DELETED] == [(3, 2), (4, 1)]
    fig = cursor_view(snap)
    drawn = {tr.name: sorted(zip(tr.x, tr.y)) for tr in fig.data if tr.type == "scatter"}
    assert drawn[HOLE] == [(0, 1), (1, 0)]  # (entry, ledger row)
    assert "stuck behind the hole at 3:1" in fig.layout.title.text


def test_cursor_view_shows_client_only_batch_acks_on_4_0_and_broker_bits_on_4_1() -> None:
    figs = {}
    for version in ("4.0", "4.1"):
        lab = pl.Lab(version=version)
        client = lab.client()
        c = client.subscribe(
            "t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="c1", batch_index_ack_enabled=True
        )
        p = client.create_producer("t", batching_enabled=True, batching_max_messages=5)
        for i in range(5):
            p.send_async(b"%d" % i, None)
        lab.run_until_idle()
        msgs = [c.receive(0) for _ in range(5)]
        for i in (0, 1, 3):
            c.acknowledge(msgs[i])
        lab.advance(100)
        snap = snapshot(lab)
        figs[version] = {tr.name: len(tr.x) for tr in cursor_view(snap).data if tr.type == "scatter"}
        bits = snap.subscription().cursor.batch_acks
        if version == "4.0":
            assert bits == ()
        else:
            assert [(b.acked, b.unacked) for b in bits] == [((0, 1, 3), (2, 4))]
    assert figs["4.0"]["batch message acked by the app (client only)"] == 3
    assert figs["4.0"]["batch message acked (broker knows)"] == 0
    assert figs["4.1"]["batch message acked (broker knows)"] == 3
    assert figs["4.1"]["batch message not acked"] == 2


# -- views on every subscription type -----------------------------------------------------------


def hv_values(xs: Any, ys: Any, at: list[int]) -> list[Any]:
    """The value a ``line_shape="hv"`` line through (xs, ys) shows at each x of ``at``: the y of the last point at
    or before it (None inside a gap or before the first point)."""
    out = []
    k = -1
    for x in at:
        while k + 1 < len(xs) and xs[k + 1] is not None and xs[k + 1] <= x:
            k += 1
        out.append(ys[k] if k >= 0 else None)
    return out


@pytest.mark.parametrize("type_name,version,partitions", scenarios())
def test_every_view_builds_a_figure_for_every_frame_kind(type_name: str, version: str, partitions: int) -> None:
    _lab, rec = workload(type_name, version, partitions)
    picked = {rec.find(kind) for kind in rec.kinds()} | {0, len(rec) - 1}
    for i in sorted(j for j in picked if j is not None):
        frame = rec[i]
        for view in VIEWS:
            fig = view(frame.snapshot, [frame.event])
            assert isinstance(fig, go.Figure)
            assert fig.layout.title.text
            json.dumps(fig.to_plotly_json(), default=str)


@pytest.mark.parametrize("type_name,version,partitions", scenarios())
def test_dispatch_timeline_draws_each_consumers_history(type_name: str, version: str, partitions: int) -> None:
    _lab, rec = workload(type_name, version, partitions)
    snap = rec[-1].snapshot
    lines = series(snap)
    names = sorted({pts[-1].name for pts in lines.values()})
    assert names == (["c1"] if type_name == "Exclusive" else ["c1", "c2"])
    fig = dispatch_timeline_view(snap)
    for axis, field in (("x", "permits"), ("x2", "receiver_queue"), ("x3", "in_flight")):
        drawn = {tr.name: tr for tr in fig.data if tr.xaxis == axis and not tr.name.endswith("blocked")}
        for pts in lines.values():
            tr = drawn[pts[-1].name]
            assert tr.line.shape == "hv"
            # the step line through its change points is the line through every sample
            assert hv_values(tr.x, tr.y, [p.event_index for p in pts]) == [getattr(p, field) for p in pts], field
            assert len(tr.x) <= len(pts) and len(tr.hovertext) == len(tr.x)
    c1 = next(pts for pts in lines.values() if pts[-1].name == "c1")
    queue_size = 6 * max(partitions, 1)
    assert max(p.permits for p in c1) == queue_size  # the first FLOW(receiver queue size) per partition
    frame = rec[len(rec) // 3]
    early = series(frame.snapshot)
    assert all(p.event_index <= frame.event_index for pts in early.values() for p in pts)


def test_dispatch_timeline_draws_change_points_and_marks_every_blocked_sample() -> None:
    """A consumer that never acks is blocked for most of a long run: each line sends its change points only (far
    fewer than its samples), and the blocked band covers exactly the blocked samples at their permits."""
    lab = pl.Lab(version="3.0", broker_config={"maxUnackedMessagesPerConsumer": 6})
    rec = Recorder(lab)
    client = lab.client()
    shared = pl.ConsumerType.Shared
    lazy, healthy = (
        client.subscribe("t", "s", consumer_type=shared, consumer_name=n, receiver_queue_size=4) for n in ("c1", "c2")
    )
    producer = client.create_producer("t")
    for i in range(60):
        producer.send(f"m{i}".encode())
        while lazy.receiver_queue:
            lazy.receive(0)  # never acknowledged
        while healthy.receiver_queue:
            healthy.acknowledge(healthy.receive(0))
    snap = rec[-1].snapshot
    lines = series(snap)
    fig = dispatch_timeline_view(snap)
    c1 = next(pts for pts in lines.values() if pts[-1].name == "c1")
    blocked = [p for p in c1 if p.blocked]
    assert blocked and len(blocked) < len(c1)
    drawn = sum(len(tr.x) for tr in fig.data)
    assert drawn < sum(len(pts) for pts in lines.values()) // 3
    band = next(tr for tr in fig.data if tr.name == "c1 blocked")
    assert band.marker.symbol == "x"
    # the band's runs (split at None) expanded at each sample: the permits of blocked samples, nothing elsewhere
    runs: list[tuple[list[int], list[int]]] = [([], [])]
    for x, y in zip(band.x, band.y):
        if x is None:
            runs.append(([], []))
        else:
            runs[-1][0].append(x)
            runs[-1][1].append(y)
    covered: dict[int, int] = {}
    for xs, ys in runs:
        inside = [p.event_index for p in c1 if xs[0] <= p.event_index <= xs[-1]]
        covered.update(zip(inside, hv_values(xs, ys, inside)))
    assert covered == {p.event_index: p.permits for p in blocked}


def test_failover_graph_reproduces_the_reference_picks() -> None:
    """§4: partitioned a(1), b(0), c(0) on partition 3 -> c; my-topic {c1, c2} -> c1, {c1, c2, c3} -> c3."""
    lab = pl.Lab(version="4.0")
    lab.admin.topics.create_partitioned_topic("pt", 4)
    client = lab.client()
    for name, pri in (("a", 1), ("b", 0), ("c", 0)):
        client.subscribe("pt", "s", consumer_type=pl.ConsumerType.Failover, consumer_name=name, lab_priority_level=pri)
    G = failover_graph(snapshot(lab), "pt")
    active = {u[1]: G.nodes[v]["label"] for u, v, a in G.edges(data=True) if a["kind"] in (ACTIVE, PENDING)}
    assert active == {0: "b", 1: "c", 2: "b", 3: "c"}
    assert {a["kind"] for u, v, a in G.edges(data=True) if G.nodes[v]["label"] == "a"} == {"standby, lower priority"}

    lab = pl.Lab(version="4.0")
    client = lab.client()
    picks = []
    for name in ("c1", "c2", "c3"):
        client.subscribe("my-topic", "s", consumer_type=pl.ConsumerType.Failover, consumer_name=name)
        G = failover_graph(snapshot(lab))
        picks.append([G.nodes[v]["label"] for u, v, a in G.edges(data=True) if a["kind"] in (ACTIVE, PENDING)])
    assert picks == [["c1"], ["c1"], ["c3"]]
    fig = failover_graph_view(snapshot(lab))
    assert "ring point of c3" in fig.layout.title.text


def test_failover_graph_marks_the_pending_switch_and_the_notifications() -> None:
    lab = pl.Lab(version="4.0")
    rec = Recorder(lab)
    client = lab.client()
    fo = pl.ConsumerType.Failover
    c1 = client.subscribe("t", "s", consumer_type=fo, consumer_name="c1")
    client.subscribe("t", "s", consumer_type=fo, consumer_name="c2", lab_priority_level=1)
    lab.advance(1000)
    c1.close()
    G = failover_graph(snapshot(lab))
    assert [(G.nodes[v]["label"], a["kind"]) for _u, v, a in G.edges(data=True)] == [("c2", PENDING)]
    assert G.nodes[("partition", 0)]["pending_until"] == 2000
    lab.advance(1000)
    i = rec.find("active_consumer_change", start=len(rec) - 1, direction=-1)
    fig = failover_graph_view(rec[i].snapshot, [rec[i].event])
    ringed = next(tr for tr in fig.data if tr.name == "told active / inactive this step")
    assert list(ringed.hovertext) == ["ACTIVE_CONSUMER_CHANGE to c2: active"]
    G = failover_graph(snapshot(lab))
    assert [a["kind"] for _u, _v, a in G.edges(data=True)] == [ACTIVE]


def test_key_shared_blocking_4_0_draining_hashes() -> None:
    """§3.2 (testKeySharedDrainingHashesConsumerStats): c2 joins while c1 holds 20 unacked messages."""
    lab = pl.Lab(version="4.0")
    client = lab.client()
    ks = pl.ConsumerType.KeyShared
    c1 = client.subscribe("t", "s", consumer_type=ks, consumer_name="c1")
    p = client.create_producer("t")
    for i in range(20):
        p.send(b"%d" % i, partition_key=str(i % 10))
    client.subscribe("t", "s", consumer_type=ks, consumer_name="c2")
    for i in range(20, 30):
        p.send(b"%d" % i, partition_key=str(i % 10))
    snap = snapshot(lab)
    d = snap.subscription().dispatcher
    stats = lab.admin.topics.stats("t")["subscriptions"]["s"]
    c1_stats = next(c for c in stats["consumers"] if c["consumerName"] == "c1")
    assert {(h.hash, h.ref_count) for h in d.draining} == {
        (h["hash"], h["unackMsgs"]) for h in c1_stats["drainingHashes"]
    }
    rows = blocking_rows(snap)
    assert rows and {r["reason"] for r in rows} == {"hash_draining"}
    assert {r["hash"] for r in rows} == {h.hash for h in d.draining}
    assert all(r["consumer"] == "c2" and r["draining_from"] == "c1" for r in rows)
    fig = key_shared_blocking_view(snap)
    waiting = next(tr for tr in fig.data if tr.name == "draining for another consumer")
    assert sorted(waiting.x) == sorted(r["hash"] for r in rows)
    # once c1 acknowledges everything, nothing waits any more
    while c1.receiver_queue:
        c1.acknowledge(c1.receive(0))
    lab.advance(200)
    assert blocking_rows(snapshot(lab)) == []


def test_key_shared_blocking_3_0_recently_joined() -> None:
    lab = pl.Lab(version="3.0")
    rec = Recorder(lab, every=VIEW_KINDS)
    client = lab.client()
    ks = pl.ConsumerType.KeyShared
    c1 = client.subscribe("t", "s", consumer_type=ks, consumer_name="c1", lab_ack_group_time_ms=0)
    p = client.create_producer("t")
    for i in range(4):
        p.send(b"%d" % i, partition_key=str(i))
    client.subscribe("t", "s", consumer_type=ks, consumer_name="c2", lab_ack_group_time_ms=0)
    for i in range(4, 40):
        p.send(b"%d" % i, partition_key=str(i))
    snap = snapshot(lab)
    d = snap.subscription().dispatcher
    c2 = snap.subscription().consumer("c2")
    assert d.recently_joined == ((c2.id, (3, 4)),)
    rows = blocking_rows(snap)
    assert rows and {r["reason"] for r in rows} == {"recently_joined"} and {r["consumer"] for r in rows} == {"c2"}
    i = rec.find("hash_blocked", start=len(rec) - 1, direction=-1)
    fig = key_shared_blocking_view(rec[i].snapshot, [rec[i].event])
    assert any(tr.name == "held back this step" and len(tr.x) == 1 for tr in fig.data)
    while c1.receiver_queue:
        c1.acknowledge(c1.receive(0))
    assert snapshot(lab).subscription().dispatcher.recently_joined == ()


def _annotation_box(fig: go.Figure, a: Any) -> tuple[float, float, float, float]:
    """The pixel box (x0, x1, y0, y1; y up from the plot area's bottom) plotly gives annotation ``a`` of ``fig``,
    its text width estimated at 0.6 em a character."""
    lay = fig.layout
    plot_w = lay.width or 700 - lay.margin.l - lay.margin.r
    plot_h = lay.height - lay.margin.t - lay.margin.b
    cats = list(lay.yaxis.categoryarray)
    lo, hi = lay.xaxis.range
    x = a.x * plot_w if a.xref == "paper" else (a.x - lo) / (hi - lo) * plot_w
    y = a.y * plot_h if a.yref == "paper" else (cats.index(a.y) + 0.5) / len(cats) * plot_h
    y += a.yshift or 0
    w, h = 0.6 * a.font.size * len(a.text), 1.3 * a.font.size
    y0 = {"bottom": y, "top": y - h}.get(a.yanchor, y - h / 2)
    return x, x + w, y0, y0 + h


def _bar_boxes(fig: go.Figure) -> list[tuple[float, float, float, float]]:
    """The pixel boxes of every horizontal bar of ``fig`` (plotly's default bargap of 0.2 of a row)."""
    lay = fig.layout
    plot_w = lay.width or 700 - lay.margin.l - lay.margin.r
    plot_h = lay.height - lay.margin.t - lay.margin.b
    cats = list(lay.yaxis.categoryarray)
    lo, hi = lay.xaxis.range
    row_h = plot_h / len(cats)
    boxes = []
    for tr in fig.data:
        if tr.type != "bar":
            continue
        for y, base, width in zip(tr.y, tr.base, tr.x):
            mid = (cats.index(y) + 0.5) * row_h
            x0 = (base - lo) / (hi - lo) * plot_w
            boxes.append((x0, x0 + width / (hi - lo) * plot_w, mid - 0.4 * row_h, mid + 0.4 * row_h))
    return boxes


def test_key_shared_blocking_joined_at_note_lies_on_no_bar() -> None:
    lab = pl.Lab(version="3.0")
    client = lab.client()
    ks = pl.ConsumerType.KeyShared
    client.subscribe("t", "s", consumer_type=ks, consumer_name="c1", lab_ack_group_time_ms=0)
    p = client.create_producer("t")
    for i in range(4):
        p.send(b"%d" % i, partition_key=str(i))
    client.subscribe("t", "s", consumer_type=ks, consumer_name="c2", lab_ack_group_time_ms=0)
    client.subscribe("t", "s", consumer_type=ks, consumer_name="c3", lab_ack_group_time_ms=0)
    for i in range(4, 40):
        p.send(b"%d" % i, partition_key=str(i))
    fig = key_shared_blocking_view(snapshot(lab))
    notes = [a for a in fig.layout.annotations if "joined at" in a.text]
    bars = _bar_boxes(fig)
    assert len(notes) == 2 and len(bars) >= 3
    boxes = [_annotation_box(fig, n) for n in notes]
    for x0, x1, y0, y1 in boxes:
        for bx0, bx1, by0, by1 in bars:
            assert x1 <= bx0 or bx1 <= x0 or y1 <= by0 or by1 <= y0, ((x0, x1, y0, y1), (bx0, bx1, by0, by1))
    assert [n.text.split()[0] for n in notes] == ["c2", "c3"]
    assert boxes[1][3] <= boxes[0][2]  # one line each, top down in the order they joined
    plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    title_bottom_px = fig.layout.margin.t / 2 + 22  # plotly centres the two-line title in the top margin
    assert boxes[-1][3] <= plot_h + fig.layout.margin.t - title_bottom_px


def test_key_shared_blocking_with_nobody_attached_says_so_without_axes() -> None:
    lab = pl.Lab(version="4.0")
    client = lab.client()
    c1 = client.subscribe("t", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c1")
    c1.close()
    fig = key_shared_blocking_view(snapshot(lab))
    assert [a.text for a in fig.layout.annotations] == ["no consumer attached"]
    assert fig.layout.xaxis.visible is False and fig.layout.yaxis.visible is False
    no_subscription = key_shared_blocking_view(snapshot(pl.Lab(version="4.0")))
    assert "no Key_Shared subscription" in no_subscription.layout.annotations[0].text


def test_dispatch_timeline_draws_the_model_client_receiver_queue() -> None:
    lab, _rec = workload("Shared")
    fig = dispatch_timeline_view(snapshot(lab))
    assert not [a for a in fig.layout.annotations if a.yref == "y2 domain"]
    assert any(tr.yaxis == "y2" and len(tr.y) for tr in fig.data)


def test_views_fail_clearly_on_the_wrong_snapshot_or_names() -> None:
    lab, _rec = workload("Shared")
    snap = snapshot(lab)
    for view in VIEWS:
        with pytest.raises(TypeError, match="LabSnapshot"):
            view({"consumers": []})
    with pytest.raises(KeyError, match="no subscription 'nope'"):
        cursor_view(snap, subscription="nope")
    with pytest.raises(KeyError, match="no topic"):
        cursor_view(snap, topic="nope")
    empty = snapshot(pl.Lab())
    for view in VIEWS:
        assert (
            "subscri" in view(empty).layout.annotations[0].text or "consumer" in view(empty).layout.annotations[0].text
        )
    text = key_shared_blocking_view(snap).layout.annotations[0].text
    assert "not Key_Shared" in text


# -- the recorder --------------------------------------------------------------------------------


def _script() -> list[Callable[[pl.Lab, dict], None]]:
    def subscribe(lab: pl.Lab, st: dict) -> None:
        st["client"] = lab.client()
        st["c"] = st["client"].subscribe(
            "t",
            "s",
            consumer_type=pl.ConsumerType.Shared,
            consumer_name="c1",
            receiver_queue_size=5,
            batch_index_ack_enabled=True,  # 4.1's batch-index acks, as a Java client has them by default
        )

    def publish(lab: pl.Lab, st: dict) -> None:
        st["p"] = st["client"].create_producer("t", batching_enabled=True, batching_max_messages=3)
        for i in range(10):
            st["p"].send_async(b"%d" % i, None)
        lab.run_until_idle()

    def receive(lab: pl.Lab, st: dict) -> None:
        st.setdefault("msgs", []).append(st["c"].receive(0))

    def ack(i: int) -> Callable[[pl.Lab, dict], None]:
        return lambda lab, st: st["c"].acknowledge(st["msgs"][i])

    def advance(lab: pl.Lab, st: dict) -> None:
        lab.advance(100)

    return [
        subscribe,
        publish,
        receive,
        receive,
        receive,
        receive,
        ack(0),
        ack(3),
        advance,
        ack(1),
        ack(2),
        advance,
        receive,
        receive,
        ack(5),
        advance,
    ]


def _run(k: int, record: bool) -> tuple[pl.Lab, Recorder | None, list[int], list[int]]:
    lab = pl.Lab(version="4.1", seed=7, broker_config={"managedLedgerMaxEntriesPerLedger": 2})
    rec = Recorder(lab) if record else None
    st: dict = {}
    ends, captured = [], []
    for step in _script()[:k]:
        step(lab, st)
        ends.append(len(lab.events) - 1)
        if rec is not None:
            captured.append(rec.capture(f"after step {len(ends)}").index)
    return lab, rec, ends, captured


def test_recorder_frames_step_back_to_what_a_fresh_replay_shows() -> None:
    """The cursor view at the frame of each step's last event equals the cursor view of a fresh run of the
    same seed stopped after that step; hand-captured frames equal the fresh snapshot as a whole."""
    n = len(_script())
    _lab, rec, ends, captured = _run(n, record=True)
    assert rec is not None and rec.errors == []
    views = []
    for k in range(1, n + 1):
        fresh, _r, fresh_ends, _c = _run(k, record=False)
        assert fresh_ends[-1] == ends[k - 1]
        want = snapshot(fresh)
        i = rec.frame_of(ends[k - 1])
        assert i is not None and rec.frame_for_event(ends[k - 1]) == i + 1  # then the hand-captured frame
        frame = rec[i]
        got_view = cursor_view(frame.snapshot).to_plotly_json()
        assert got_view == cursor_view(want).to_plotly_json()
        views.append(got_view)
        mine = rec[captured[k - 1]].snapshot
        assert mine.topics == want.topics and mine.time == want.time and mine.event_index == want.event_index
    assert len({json.dumps(v, sort_keys=True, default=str) for v in views}) > n // 2  # the steps change the picture


@pytest.mark.parametrize("type_name", list(TYPES))
def test_recording_does_not_change_the_run(type_name: str) -> None:
    recorded, rec = workload(type_name)
    plain, none = workload(type_name, record=False)
    assert none is None and rec is not None and len(rec) > 50
    assert recorded.events.digest() == plain.events.digest()


def test_recorder_explanations_name_consumers_and_cite_rules() -> None:
    lab, rec = workload("Shared")
    flows = [f for f in rec if f.kind == "flow"]
    assert flows and all("consumer c1" in f.explanation or "consumer c2" in f.explanation for f in flows)
    assert all("(CommandFlow; docs/guide/flow-control.md#flow-permits)" in f.explanation for f in flows)
    assert rec[0].event is None and "recording starts" in rec[0].explanation
    assert rec.kinds()[0] == "topic_created"


def test_recorder_every_and_kinds_and_close() -> None:
    lab = pl.Lab()
    every = Recorder(lab, every=5, initial=False)
    kinds = Recorder(lab, every={"flow", "dispatched"}, initial=False, history=False)
    client = lab.client()
    c = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared)
    p = client.create_producer("t")
    for i in range(7):
        p.send(b"x")
    every.close()
    c.receive(0)
    n = len(lab.events)
    assert len(every) < n and [f.event.seq for f in every] == list(range(0, len(every) * 5, 5))
    assert {f.kind for f in kinds} == {"flow", "dispatched"}
    assert len(kinds) == len(lab.events.of_kind("flow", "dispatched"))
    assert all(f.snapshot.history is None for f in kinds)
    with pytest.raises(ValueError, match="record_events=False"):
        Recorder(pl.Lab(record_events=False))
    with pytest.raises(ValueError):
        Recorder(lab, every=0)


def test_history_of_an_old_frame_does_not_grow() -> None:
    lab, rec = workload("Key_Shared")
    early = rec[10].snapshot
    before = list(early.history)
    assert all(s.event_index <= early.event_index for s in before)
    lab.client().subscribe("t", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="late")
    assert list(early.history) == before
    assert len(rec[-1].snapshot.history) > len(before)


def test_player_steps_through_a_recording_with_every_view() -> None:
    lab, rec = workload("Failover")
    views = [partial(v, subscription="s") for v in VIEWS]
    player = Player(rec, views, start=0)
    assert len(player.figures) == 4
    player.jump(-1)
    assert "frame" in player.label.value
    last_titles = [f.layout.title.text for f in player.figures]
    player.jump(1)
    assert [f.layout.title.text for f in player.figures] != last_titles
    i = player.jump_to_kind("active_consumer_change")
    assert i is not None and rec[i].kind == "active_consumer_change"


# -- exercises ------------------------------------------------------------------------------------


def test_ack_exercises_committed_answers_pass_and_wrong_ones_say_why() -> None:
    acks = [0, 1, 2, 4, 5, 7]
    assert ack_ranges_answer(acks)[:2] == ("3:2", "[(4:0..4:2],(5:0..5:1]]")
    assert check_ack_ranges(
        {"markDeletePosition": "3:2", "individuallyDeletedMessages": "[(4:0..4:2],(5:0..5:1]]"}, acks
    )
    wrong = check_ack_ranges(
        {"markDeletePosition": "4:2", "individuallyDeletedMessages": "[(4:1..4:2], (5:0..5:1]]"}, acks
    )
    assert not wrong
    assert "never passes an unacknowledged entry" in wrong.message
    assert "no space" in wrong.message and "open-closed" in wrong.message
    jump = check_ack_ranges({"markDeletePosition": "3:2", "individuallyDeletedMessages": "[]"}, [3, 0, 2, 1])
    assert not jump and "jumps over the ledger boundary" in jump.message

    assert batch_redelivery_answer([0, 1, 3], 5, "4.0") == [0, 1, 2, 3, 4]
    assert batch_redelivery_answer([0, 1, 3], 5, "4.1") == [2, 4]
    assert check_batch_redelivery({"4.0": [0, 1, 2, 3, 4], "4.1": [2, 4]})
    swapped = check_batch_redelivery({"4.0": [2, 4], "4.1": [0, 1, 2, 3, 4]})
    assert not swapped and "PIP-391" in swapped.message and "whole entry" in swapped.message

    assert ack_flush_answer((130, 140, 150, 320), 100, 3) == [150, 150, 150, 400]
    assert check_ack_flush_times([150, 150, 150, 400])
    late = check_ack_flush_times([230, 240, 250, 420])
    assert not late and "lab_max_ack_group_size" in late.message and "fixed-delay" in late.message


def test_failover_exercises_committed_answers_pass_and_wrong_ones_say_why() -> None:
    consumers = [("x", 0), ("w", 0), ("z", 1), ("y", 0)]
    assert check_failover_assignment({0: "w", 1: "x", 2: "y", 3: "w", 4: "x"}, consumers, 5)
    wrong = check_failover_assignment({0: "x", 1: "w", 2: "z", 3: "y", 4: "x"}, consumers, 5)
    assert not wrong and "sorted by (priority, name)" in wrong.message and "standby" in wrong.message

    want = takeover_answer()
    assert want["new_active"] == "c2" and want["first_delivery_ms"] == 1380 + 1000
    assert want["redelivered"] == ["m3", "m4", "m5"]
    assert check_failover_takeover({"new_active": "c2", "first_delivery_ms": 2380, "redelivered": ["m3", "m4", "m5"]})
    wrong = check_failover_takeover({"new_active": "c2", "first_delivery_ms": 1380, "redelivered": ["m4", "m5"]})
    assert not wrong and "activeConsumerFailoverDelayTimeMillis" in wrong.message and "lost" in wrong.message
    flushed = takeover_answer(crash_at=1420)  # the ack of m3 was flushed at 1400: it is not redelivered
    assert flushed["redelivered"] == ["m4", "m5"]


def test_lab_snapshot_is_importable_without_widgets() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pulsarlab.snapshot.lab, pulsarlab.snapshot.recorder; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('plotly', 'ipywidgets', 'widgets', 'pyspark')]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert isinstance(snapshot(pl.Lab()), LabSnapshot)
