"""Issue 20 in headless chromium: an exported player's play / pause buttons and slider sit under its first figure's
legend, however many rows the legend wraps to, with no empty band under them (lab 07's players)."""

from __future__ import annotations

import json
from functools import partial

import pytest
import test_classroom_browser as classroom
from plotly.offline import get_plotlyjs

import pulsarlab as pl
from pulsarlab.snapshot.recorder import Recorder
from pulsarlab_widgets.classroom.animation import page_css, page_script, player_html
from pulsarlab_widgets.player import Player
from pulsarlab_widgets.views.redelivery_timeline import redelivery_timeline_view
from pulsarlab_widgets.views.redelivery_trackers import redelivery_trackers_view

pytestmark = pytest.mark.browser
browser_page = classroom.browser_page

# what a player's first figure shows, in page pixels: its svg, its legend and its controls
BOXES_JS = """root => {
  const div = root.querySelector('.pl-view');
  const box = sel => { const el = div.querySelector(sel); if (!el) return null;
    const r = el.getBoundingClientRect(); return r.height ? [r.top, r.bottom] : null; };
  return JSON.stringify({figure: box('svg.main-svg'), legend: box('g.legend'),
    buttons: box('g.updatemenu-container'), slider: box('g.slider-container'), frame: root.dataset.frame});
}"""


def lab_07_player() -> Player:
    """Lab 07's first recording (an ack timeout of 3 s ticking each second, a message received and forgotten)."""
    lab = pl.Lab(version="4.0", seed=1)
    rec = Recorder(lab)
    client = lab.client()
    consumer = client.subscribe(
        "jobs",
        "workers",
        consumer_type=pl.ConsumerType.Shared,
        consumer_name="w1",
        unacked_messages_timeout_ms=3000,
        lab_tick_duration_ms=1000,
    )
    producer = client.create_producer("jobs")
    for i in range(3):
        producer.send(f"job-{i}".encode())
    lab.advance(500)
    first, _forgotten, third = (consumer.receive(timeout_millis=0) for _ in range(3))
    consumer.acknowledge(first)
    consumer.acknowledge(third)
    consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    lab.advance(200)
    # lab 07's second player leads with the timeline, whose legend hangs under the plot
    return Player(rec, [partial(redelivery_timeline_view, subscription="workers"), redelivery_trackers_view])


def test_exported_player_controls_sit_under_the_legend_with_no_empty_band(browser_page, tmp_path):
    page, route, record = browser_page
    player = lab_07_player()
    path = tmp_path / "player.html"
    path.write_text(
        f"<html><head><meta charset='utf-8'><script>{get_plotlyjs()}</script><style>{page_css()}</style></head>"
        f"<body>{player_html(player, 'p1')}<script>{page_script()}</script></body></html>"
    )
    route(lambda url: url.startswith("file:"))
    page.goto(path.as_uri())
    root = page.locator("#p1")
    root.locator(".pl-view svg.main-svg").first.wait_for(timeout=classroom.DRAW_MS)
    root.click(position={"x": 5, "y": 5})
    seen_legend = 0
    for frame, key in enumerate(["Home"] + ["ArrowRight"] * (len(player.timeline) - 1)):
        root.press(key)
        # every view drawn and the controls moved under the legend (after plotly.js drew it: asynchronous)
        page.wait_for_function("([el, f]) => el.dataset.drawn === String(f)", arg=[root.element_handle(), frame])
        boxes = json.loads(root.evaluate(BOXES_JS))
        fig_bottom = boxes["figure"][1]
        controls_top = min(boxes["buttons"][0], boxes["slider"][0])
        controls_bottom = max(boxes["buttons"][1], boxes["slider"][1])
        if boxes["legend"] is not None:
            seen_legend += 1
            assert boxes["legend"][1] <= controls_top, f"frame {boxes['frame']}: the controls cover the legend"
        assert fig_bottom - controls_bottom <= 24, f"frame {boxes['frame']}: {fig_bottom - controls_bottom} px empty"
    assert seen_legend and not record["errors"] and not record["blocked"]
