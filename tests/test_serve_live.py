"""Live views follow a served lab, redraw outside the model lock, and keep frames for the player."""

from __future__ import annotations

import threading
from functools import partial

import pulsar
from serve_support import RECEIVE_MS, client_for, served_lab, wait_until

from pulsarlab_widgets.live import LiveViews
from pulsarlab_widgets.views.cursor import cursor_view
from pulsarlab_widgets.views.dispatch_timeline import dispatch_timeline_view
from pulsarlab_widgets.views.key_shared_blocking import key_shared_blocking_view

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
            assert not live.errors
        finally:
            live.stop()
        assert not live.running
        frames = live.frames
        assert len(frames) >= 2 and frames[0].event is None and frames[-1].event is not None
        assert sum(len(f.events) for f in frames) <= len(lab.events)
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


def test_live_views_read_a_windowed_event_log() -> None:
    """With the log keeping a window (as ``pulsarlab serve --event-window`` does), a frame's events start no earlier
    than the oldest event kept."""
    from pulsarlab.events import _FLUSH_EVENTS

    with served_lab() as (lab, server), client_for(server) as client:
        lab.events.set_window(_FLUSH_EVENTS)
        live = LiveViews(server, [partial(cursor_view, subscription="w")], start=False, max_events=10 * _FLUSH_EVENTS)
        live.capture(force=True)
        consumer = client.subscribe(TOPIC, "w")
        p = client.create_producer(TOPIC, batching_enabled=False, block_if_queue_full=True)
        for i in range(3000):
            p.send_async(f"m{i}".encode(), None)
        p.flush()
        for _ in range(3000):
            consumer.acknowledge(consumer.receive(30_000))
        with server.lock:
            assert len(lab.events) > 2 * _FLUSH_EVENTS, len(lab.events)
            first = lab.events.first_seq
        assert first > 0
        frame = live.capture()  # the redelivery history folds what the window still holds
        assert frame is not None and frame.events[0].seq >= first
        assert frame.events[-1].seq < len(lab.events) and not live.errors
