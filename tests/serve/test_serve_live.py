"""Live views follow a served lab, redraw outside the model lock, and keep frames for the player."""

from __future__ import annotations

import threading
from functools import partial

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab, wait_until

from pulsarlab.snapshot.recorder import VIEW_KINDS
from pulsarlab_widgets.live import LiveViews
from pulsarlab_widgets.views.cursor import cursor_view
from pulsarlab_widgets.views.dispatch_timeline import CLIENT_QUEUE_UNKNOWN, dispatch_timeline_view
from pulsarlab_widgets.views.key_shared_blocking import key_shared_blocking_view

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/live"


def test_live_views_follow_real_traffic_and_step_back():
    with served_lab() as (lab, server), client_for(server) as client:
        live = LiveViews(
            server,
            [partial(cursor_view, subscription="ks"), dispatch_timeline_view, key_shared_blocking_view],
            max_fps=20,
        )
        try:
            assert "no subscription yet" in live.figures[0].layout.annotations[0].text
            consumers = {
                n: client.subscribe(TOPIC, "ks", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=n)
                for n in ("a", "b")
            }
            p = client.create_producer(TOPIC)
            for i in range(20):
                p.send(f"m{i}".encode(), partition_key=f"k{i % 5}")
            got = 0
            for c in consumers.values():
                while True:
                    try:
                        m = c.receive(300)
                    except pulsar.Timeout:
                        break
                    c.acknowledge(m)
                    got += 1
            assert got == 20
            wait_until(
                lambda: live.frames[-1].snapshot.subscription(TOPIC, "ks").cursor.mark_delete == (3, 19),
                what="a live frame with every ack",
            )
            wait_until(lambda: "Cursor" in (live.figures[0].layout.title.text or ""), what="the cursor figure")
            names = {c.name for c in live.frames[-1].snapshot.subscription(TOPIC, "ks").consumers}
            assert names == {"a", "b"}
            # real clients keep their receiver queues: the panel says so in words instead of staying empty
            timeline = dispatch_timeline_view(live.frames[-1].snapshot)
            assert [a.text for a in timeline.layout.annotations if a.yref == "y2 domain"] == [CLIENT_QUEUE_UNKNOWN]
            assert timeline.layout.yaxis2.visible is False
            assert not live.errors
        finally:
            live.stop()
        assert not live.running
        frames = live.frames
        # a frame per event since the views started: the whole run can be stepped
        seqs = [f.event.seq for f in frames[1:]]
        with server.lock:
            drawn = [seq for seq in range(seqs[0], len(lab.events)) if lab.events[seq].kind in VIEW_KINDS]
        assert frames[0].event is None and seqs == drawn
        assert [f.index for f in frames] == list(range(len(frames)))
        acks = [f for f in frames if f.kind == "mark_delete_moved"]
        assert len(acks) >= 2 and acks[-1].snapshot.subscription(TOPIC, "ks").cursor.mark_delete == (3, 19)
        player = live.player()
        assert len(player.timeline) == len(frames) and player.index == len(frames) - 1
        player.back()
        assert player.index == len(frames) - 2
        player.jump(0)
        assert "as the live views start" in player.explanation


def test_rendering_never_holds_the_model_lock():
    rendering = threading.Event()
    release = threading.Event()

    def slow_view(snapshot, events):
        if events:  # the first figure (no events) is built at once; later ones wait
            rendering.set()
            release.wait(20)
        return cursor_view(snapshot, events)

    with served_lab() as (lab, server), client_for(server) as client:
        live = LiveViews(server, [slow_view], max_fps=50)
        try:
            c = client.subscribe(TOPIC, "s")
            wait_until(rendering.is_set, what="a refresh to start rendering")
            # the refresh thread is stuck inside the view: the network loop must still serve clients
            client.create_producer(TOPIC).send(b"while-rendering")
            assert c.receive(RECEIVE_MS).data() == b"while-rendering"
        finally:
            release.set()
            live.stop()


def test_live_views_keep_a_frame_per_event_within_the_event_window() -> None:
    """The live views keep a frame for each of the newest events the views draw (`VIEW_KINDS`), as many as the lab's
    event window holds (``pulsarlab serve --event-window``) or ``keep_frames``."""
    from pulsarlab.events import _FLUSH_EVENTS

    with served_lab() as (lab, server), client_for(server) as client:
        lab.events.set_window(_FLUSH_EVENTS)
        assert LiveViews(server, [cursor_view], start=False).keep_frames == _FLUSH_EVENTS
        live = LiveViews(server, [partial(cursor_view, subscription="w")], start=False, keep_frames=40)
        consumer = client.subscribe(TOPIC, "w")
        p = client.create_producer(TOPIC, batching_enabled=False)
        for i in range(100):
            p.send(f"m{i}".encode())
        for _ in range(100):
            consumer.acknowledge(consumer.receive(RECEIVE_MS))
        wait_until(
            lambda: live.frames[-1].snapshot.subscription(TOPIC, "w").cursor.mark_delete == (3, 99),
            what="a frame with every ack",
        )
        live.stop()
        with server.lock:
            count = len(lab.events)
            drawn = [seq for seq in range(count) if lab.events[seq].kind in VIEW_KINDS]
        frames = live.frames
        assert [f.event.seq for f in frames] == drawn[-40:]
        assert frames[-1].index == len(drawn)  # the first frame, then one per event drawn
        assert len(live.recorder) <= 40 + 40 // 8
        assert live.refresh() and not live.errors
        player = live.player()
        assert player.index == 39 and len(player.timeline) == 40
