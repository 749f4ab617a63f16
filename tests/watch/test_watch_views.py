"""The notebook's live views of a watch (`pulsarlab_widgets.live_watch.WatchViews`) over the constructed poll
sequences: they redraw at each poll, say how long each finding has held, and keep the last good figures when the
broker fails. Polls are driven by hand (`Watcher.poll`), so every redraw happens before the assertions."""

from __future__ import annotations

import json

from watch_support import FakeClock, fake_admin

from pulsarlab.watch import AdminClient, Watcher
from pulsarlab_widgets.live_watch import WatchViews, backlog_figure, default_views


def _figure_json(fig) -> str:
    return json.dumps(fig.to_dict(), sort_keys=True, default=str)


def test_live_views_redraw_at_each_poll_and_keep_the_last_good_state():
    clock = FakeClock()
    with fake_admin() as server:
        server.routes["/admin/v2/brokers/version"] = (200, b"4.0.0")
        server.sequence_poll("draining-4x", "fulfilment-events", 0)
        watcher = Watcher(AdminClient(server.url), "fulfilment-events", 2.0, clock=clock)
        live = WatchViews(watcher, start=False)
        assert len(watcher.frames) == 1 and live.redraws == 0
        cursor, blocking, timeline = live.figures
        assert "draining-hashes" in live.status.value and "(new)" in live.status.value
        assert "5003:1789" in _figure_json(cursor)
        assert "draining" in _figure_json(blocking)
        before = _figure_json(timeline)
        for p in (1, 2):
            clock.advance(2.0)
            server.sequence_poll("draining-4x", "fulfilment-events", p)
            watcher.poll()
        assert live.redraws == 2 and live.errors == []
        assert "for 4 s (3 polls)" in live.status.value and "mark-delete-stuck" in live.status.value
        assert _figure_json(timeline) != before  # the consumers' lines grew by two polls
        assert [list(d.y) for d in live.backlog.data] == [[48, 48, 48]]

        kept = [_figure_json(f) for f in live.figures]
        server.routes["/admin/v2/persistent/public/default/fulfilment-events/stats"] = (500, {"reason": "boom"})
        clock.advance(2.0)
        watcher.poll()
        assert "HTTP 500" in live.status.value and "the last good state stays on screen" in live.status.value
        assert [_figure_json(f) for f in live.figures] == kept

        clock.advance(4.0)
        server.sequence_poll("draining-4x", "fulfilment-events", 3)
        watcher.poll()
        assert "cleared" in live.status.value and "after 8 s" in live.status.value
        player = live.player()
        assert len(player.timeline) == 5 and player.index == 4


def test_every_default_view_draws_every_poll_of_both_sequences():
    for folder, topic, polls in (("draining-4x", "fulfilment-events", 4), ("ack-holes-3x", "settlement-events", 3)):
        clock = FakeClock()
        with fake_admin() as server:
            watcher = Watcher(AdminClient(server.url), topic, 2.0, clock=clock)
            for p in range(polls):
                server.sequence_poll(folder, topic, p)
                watcher.poll()
                clock.advance(2.0)
        for frame in watcher.frames:
            for view in default_views():
                assert view(frame.snapshot, [frame.event]).to_dict()["data"] is not None
        fig = backlog_figure(watcher.frames)
        assert len(fig.data) == len(list(watcher.frames[0].snapshot.subscriptions()))
