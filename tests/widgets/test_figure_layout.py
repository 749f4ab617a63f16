"""Figures fit for a projector (issue 14): the layout properties that keep text from overlapping or being clipped,
integer axes for counts, and a player step that leaves the browser's figure equal to the frame's figure.

The browser side of a FigureWidget is modelled by `BrowserFigure`: it starts from what the widget sends on display
and applies each message plotly's widget sends (relayout, restyle, update, add / delete traces) the way plotly.js
does - a key set replaces the value, a null removes it - so a test sees what a step leaves on the page.
"""

from __future__ import annotations

import copy
import re
from functools import partial
from typing import Any

import plotly.graph_objects as go
import pytest
from plotly.basedatatypes import Undefined

import pulsarlab as pl
import pulsarlab_widgets.player as player_module
from pulsarlab.scenarios.delayed_workload import sweep
from pulsarlab.scenarios.key_shared import KeySharedScenario
from pulsarlab.snapshot.recorder import Recorder
from pulsarlab_widgets.player import Player, spare_trace, sync_figure
from pulsarlab_widgets.views.chunk_reassembly import chunk_reassembly_view
from pulsarlab_widgets.views.compare import compare_figure
from pulsarlab_widgets.views.cursor import cursor_view
from pulsarlab_widgets.views.delayed import delayed_memory_view, delayed_timeline_view, memory_comparison_figure
from pulsarlab_widgets.views.dispatch_timeline import dispatch_timeline_view
from pulsarlab_widgets.views.hash_range import hash_range_view
from pulsarlab_widgets.views.lab_common import empty_figure
from pulsarlab_widgets.views.redelivery_trackers import redelivery_trackers_view
from pulsarlab_widgets.views.ring import ring_view
from pulsarlab_widgets.views.style import count_axis, index_axis, legend_below, nice_step


# -- the browser's copy of a FigureWidget --------------------------------------------------------------------------
def _set_path(target: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for p in parents:
        target = target.setdefault(p, {})
    if value is None:
        target.pop(last, None)
    else:
        target[last] = copy.deepcopy(value)


class BrowserFigure:
    """What plotly.js holds for a FigureWidget: the figure it was displayed with, then every message applied."""

    def __init__(self, widget: go.FigureWidget) -> None:
        self.data = copy.deepcopy(widget._data)
        self.layout = copy.deepcopy(widget._layout)
        self.messages = 0
        widget.observe(
            self._message,
            names=["_py2js_relayout", "_py2js_restyle", "_py2js_update", "_py2js_addTraces", "_py2js_deleteTraces"],
        )

    def _restyle(self, style: dict, indexes: list[int]) -> None:
        for prop, values in style.items():
            for i, value in zip(indexes, values):
                if value is not Undefined:  # a batch's "leave this trace's value as it is"
                    _set_path(self.data[i], prop, value)

    def _message(self, change: dict) -> None:
        msg, name = change["new"], change["name"]
        if msg is None:
            return
        self.messages += 1
        if name == "_py2js_relayout":
            for k, v in msg["relayout_data"].items():
                _set_path(self.layout, k, v)
        elif name == "_py2js_restyle":
            self._restyle(msg["restyle_data"], msg["restyle_traces"])
        elif name == "_py2js_update":
            self._restyle(msg["style_data"], msg["style_traces"])
            for k, v in msg["layout_data"].items():
                _set_path(self.layout, k, v)
        elif name == "_py2js_addTraces":
            self.data.extend(copy.deepcopy(msg["trace_data"]))
        elif name == "_py2js_deleteTraces":
            for i in sorted(msg["delete_inds"], reverse=True):
                del self.data[i]

    def figure(self) -> dict:
        return _clean({"data": self.data, "layout": self.layout})


def _clean(value: Any) -> Any:
    """Without trace uids and empty containers (plotly.js draws ``marker: {}`` or ``annotations: []`` as none)."""
    if isinstance(value, dict):
        out = {k: _clean(v) for k, v in value.items() if k != "uid"}
        return {k: v for k, v in out.items() if v != {} and v != []}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _spec(fig: go.Figure) -> dict:
    return _clean({"data": [dict(t) for t in fig._data], "layout": dict(fig._layout)})


# -- scenarios -----------------------------------------------------------------------------------------------------
def ring_scenario() -> KeySharedScenario:
    ring = KeySharedScenario("consistent_hashing", "4.0", points=8)
    for name in ("c1", "c2", "c3"):
        ring.add(name)
    ring.select_keys(["Order-3459134", "key1", "k1"])
    ring.remove("c2")
    return ring


def acked_run() -> tuple[pl.Lab, Recorder]:
    """A subscription that receives 60 messages and acknowledges them cumulatively in one step."""
    lab = pl.Lab(version="4.0", seed=1)
    rec = Recorder(lab)
    client = lab.client()
    consumer = client.subscribe("orders", "workers", consumer_name="w1", receiver_queue_size=100)
    producer = client.create_producer("orders")
    for i in range(60):
        producer.send(f"m{i}".encode())
    lab.run_until_idle()
    last = None
    while consumer.receiver_queue:
        last = consumer.receive(0)
    consumer.acknowledge_cumulative(last)
    lab.advance(200)
    return lab, rec


def legend_gap_px(fig: go.Figure) -> float:
    """Pixels between the bottom of the plot area and the top of a horizontal legend under it."""
    lay = fig.layout
    legend = lay.legend
    assert legend.orientation == "h" and legend.yanchor == "top", "a legend under the plot, hanging from its top"
    plot = lay.height - lay.margin.t - lay.margin.b
    return -legend.y * plot


def assert_legend_clear(fig: go.Figure, min_gap: float = 50) -> None:
    """The legend hangs under the x axis' tick labels and title, inside the bottom margin, names unique."""
    gap = legend_gap_px(fig)
    assert gap >= min_gap, f"legend {gap:.0f} px under the plot: over the axis title"
    assert fig.layout.margin.b >= gap + 20, "the bottom margin holds the gap and a row of the legend"
    shown = [t.name for t in fig.data if t.showlegend is not False and t.name]
    assert len(shown) == len(set(shown)), f"duplicate legend entries: {shown}"


# -- the player step ------------------------------------------------------------------------------------------------
def test_sync_clears_what_the_frame_before_drew():
    """A live cursor view starts empty ("no subscription yet"); the next frame must not keep that text, nor the
    hidden axes, in the browser."""
    lab, rec = acked_run()
    widget = go.FigureWidget(empty_figure("Cursor", "no subscription yet: subscribe a consumer first"))
    browser = BrowserFigure(widget)
    fig = cursor_view(rec[-1].snapshot)
    sync_figure(widget, fig)
    shown = browser.figure()
    assert "no subscription yet" not in repr(shown["layout"].get("annotations"))
    assert shown["layout"]["xaxis"].get("visible") is not False
    assert shown == _spec(fig)


def test_player_steps_leave_the_browser_figure_equal_to_the_frame():
    ring = ring_scenario()
    player = Player(ring.timeline, [ring_view, hash_range_view])
    browsers = [BrowserFigure(w) for w in player.figures]
    order = list(range(1, len(ring.timeline))) + [3, 30, 0, len(ring.timeline) - 1, 10]
    for i in order:
        player.jump(i)
        for view, widget, browser in zip(player.views, player.figures, browsers):
            assert browser.figure() == _spec(widget), f"frame {i}: the widget and the browser differ"
    # frames whose figures do not change send nothing: jumping to the frame shown is free
    sent = [b.messages for b in browsers]
    player.jump(player.index)
    assert [b.messages for b in browsers] == sent


def test_drawing_ahead_shows_the_same_frames_as_drawing_on_demand():
    ring = ring_scenario()
    ahead = Player(ring.timeline, [ring_view, hash_range_view], start=5)
    on_demand = Player(ring.timeline, [ring_view, hash_range_view], start=5, prefetch=False)
    for move in ("step", "step", "back", "step", "step", "step", "back", "back", "step"):
        for p in (ahead, on_demand):
            getattr(p, move)()
        assert ahead.index == on_demand.index
        for a, b in zip(ahead.figures, on_demand.figures):
            assert _spec(a) == _spec(b), f"frame {ahead.index} after {move}"
    for p in (ahead, on_demand):
        p.jump(20)
        p.step()
    assert [_spec(f) for f in ahead.figures] == [_spec(f) for f in on_demand.figures]
    assert set(ahead._ahead) == {(22, 21), (20, None)}, "the next and the previous frame are being drawn"


def test_a_view_that_fails_fails_in_the_step_that_shows_its_frame():
    ring = ring_scenario()

    def fragile(snapshot, events):
        if len(snapshot["consumers"]) == 2:
            raise RuntimeError("cannot draw this frame")
        return ring_view(snapshot, events)

    player = Player(ring.timeline, fragile, start=0)
    with pytest.raises(RuntimeError, match="cannot draw"):
        for _ in range(len(ring.timeline)):
            player.step()


def _drawn(spec: dict) -> dict:
    """A browser figure without the player's spare trace slots at its end (hidden and empty: they draw nothing)."""
    data = list(spec["data"])
    while data and data[-1] == spare_trace(data[-1]["type"]):
        data.pop()
    return _clean({**spec, "data": data})


def test_a_step_that_draws_fewer_or_more_traces_redraws_once():
    """Traces a frame no longer draws stay as hidden spares and the next frame that draws them reuses them: each
    step is one update message (one plotly.js redraw), no deleteTraces or addTraces."""
    frames = [
        go.Figure([go.Scatter(x=[1, 2], y=[3, 4], name="a"), go.Bar(x=[1], y=[2], name="b")], layout=dict(title="2")),
        empty_figure("Cursor", "no subscription yet: subscribe a consumer first"),
        go.Figure([go.Scatter(x=[5], y=[6], name="c")], layout=dict(title="1")),
        go.Figure([go.Scatter(x=[1], y=[1], name="d"), go.Bar(x=[2], y=[3], name="e")], layout=dict(title="2 again")),
    ]
    widget = go.FigureWidget(frames[0])
    browser = BrowserFigure(widget)
    kinds: list[str] = []
    widget.observe(lambda c: c["new"] and kinds.append(c["name"]), names=["_py2js_addTraces", "_py2js_deleteTraces"])
    for fig in frames[1:]:
        sent = browser.messages
        sync_figure(widget, fig)
        assert browser.messages - sent == 1, f"{fig.layout.title.text}: {browser.messages - sent} messages"
        assert _drawn(browser.figure()) == _spec(fig)
        assert all(t["visible"] is False for t in browser.figure().get("data", [])[len(fig.data) :])
    assert kinds == []
    assert [t.type for t in widget.data] == ["scatter", "bar"]
    # a change of type at a slot replaces the traces from there on
    sync_figure(widget, go.Figure([go.Bar(x=[1], y=[1], name="f")]))
    assert [t.type for t in widget.data] == ["bar"] and _drawn(browser.figure()) == _spec(
        go.Figure([go.Bar(x=[1], y=[1], name="f")])
    )


def test_sync_updates_only_the_changed_properties():
    widget = go.FigureWidget(go.Figure([go.Scatter(x=[1, 2], y=[3, 4], name="a")], layout=dict(title="t")))
    sent: list[dict] = []
    widget.observe(lambda c: c["new"] and sent.append(c["new"]), names=["_py2js_update", "_py2js_relayout"])
    sync_figure(widget, go.Figure([go.Scatter(x=[1, 2], y=[3, 5], name="a")], layout=dict(title="t")))
    assert len(sent) == 1
    assert sent[0]["style_data"] == {"y": [[3, 5]]} and sent[0]["layout_data"] == {}


def test_player_figures_follow_the_width_of_their_cell():
    player = Player(ring_scenario().timeline, [ring_view])
    assert all(f._config.get("responsive") for f in player.figures)
    assert "pulsarlab-fit" in player._dom_classes
    assert any(type(c).__name__ == "FigureFit" for c in player.children)


# -- helpers --------------------------------------------------------------------------------------------------------
def test_count_and_index_axes_are_integer():
    assert [nice_step(x) for x in (0, 0.3, 1, 1.5, 3, 7, 40, 120)] == [1, 1, 1, 2, 5, 10, 50, 200]
    flat = count_axis([0, 0, 0])
    assert flat["range"][0] == 0 and flat["range"][1] >= 1 and flat["dtick"] == 1 and flat["tickformat"] == "d"
    negative = count_axis([-3, 5])
    assert negative["range"][0] < -3 and negative["dtick"] >= 1
    single = index_axis(2, 2)
    assert single["range"][1] - single["range"][0] >= 2 and single["dtick"] == 1
    assert legend_below(500, 100, 100, gap_px=60)["y"] == pytest.approx(-0.2)


# -- lab 02 / 10: dispatch timeline ---------------------------------------------------------------------------------
def test_dispatch_timeline_counts_on_integer_axes_from_zero():
    lab, rec = acked_run()
    first = next(i for i in range(len(rec)) if rec[i].snapshot.history and len(list(rec[i].snapshot.history)) == 1)
    for i in (first, len(rec) - 1):
        fig = dispatch_timeline_view(rec[i].snapshot, [rec[i].event])
        for axis in ("yaxis", "yaxis2", "yaxis3"):
            ax = fig.layout[axis]
            assert ax.dtick >= 1 and float(ax.dtick).is_integer() and ax.tickformat == "d", axis
            assert ax.range[0] <= 0 <= ax.range[1] and ax.range[1] >= 1, axis
        x = fig.layout.xaxis3
        assert x.dtick >= 1 and x.range[1] - x.range[0] >= 2
        assert_legend_clear(fig)


# -- lab 10 / 03: cursor --------------------------------------------------------------------------------------------
def test_cursor_view_shows_the_read_position_and_one_bar_per_acked_run():
    lab, rec = acked_run()
    i = next(j for j in range(len(rec)) if getattr(rec[j].event, "kind", None) == "mark_delete_moved")
    fig = cursor_view(rec[i].snapshot, [rec[i].event], subscription="workers")
    read = next(t for t in fig.data if t.name.startswith("read position"))
    lo, hi = fig.layout.xaxis.range
    assert lo + 0.5 <= read.x[0] <= hi - 0.5, "the read position marker sits inside the plot, not on its edge"
    acked = next(t for t in fig.data if t.name == "acked this step")
    assert acked.mode == "lines"
    segments = [k for k in range(0, len(acked.x), 3)]
    assert len(segments) == 1, "60 entries acked in one step: one bar, not 60 overlapping boxes"
    assert acked.x[1] - acked.x[0] >= 59
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert len(shown) == len(set(shown))


# -- lab 07: redelivery trackers ------------------------------------------------------------------------------------
def test_redelivery_trackers_titles_fit_and_empty_panels_are_drawn():
    lab = pl.Lab(version="4.0", seed=1)
    rec = Recorder(lab)
    client = lab.client()
    consumer = client.subscribe(
        "jobs", "workers", consumer_type=pl.ConsumerType.Shared, consumer_name="w1",
        unacked_messages_timeout_ms=3000, lab_tick_duration_ms=1000,
    )  # fmt: skip
    client.create_producer("jobs").send(b"job")
    lab.advance(500)
    consumer.receive(timeout_millis=0)
    fig = redelivery_trackers_view(rec[-1].snapshot)
    titles = [a.text for a in fig.layout.annotations if a.yanchor == "bottom"]
    assert len(titles) == 2
    for text in titles:
        for line in re.split(r"<br>", re.sub(r"</?sup>", "", text)):
            assert len(line) <= 40, f"subplot title line too long for half a 700 px figure: {line!r}"
    assert any(t.xaxis == "x2" for t in fig.data), "the nack panel has a trace, so plotly draws its axes"
    note = next(a for a in fig.layout.annotations if a.text == "no negative ack held")
    assert note.xref == "x2 domain"
    assert fig.layout.margin.t >= 120


# -- lab 08: chunks -------------------------------------------------------------------------------------------------
def test_chunk_view_step_lines_and_legend_clear_of_the_axis_title():
    lab = pl.Lab(version="4.0", seed=1, broker_config={"maxMessageSize": 1024})
    rec = Recorder(lab)
    client = lab.client()
    client.subscribe("big-files", "readers", consumer_name="reader", max_pending_chunked_message=2,
                     auto_ack_oldest_chunked_message_on_queue_full=True)  # fmt: skip
    for name in ("p0", "p1", "p2"):
        producer = client.create_producer("big-files", producer_name=name, chunking_enabled=True,
                                          lab_chunk_send_interval_ms=1)  # fmt: skip
        producer.send_async(bytes(2500), None)
    lab.run_until(100)
    drawn = 0
    for i in range(len(rec)):
        fig = chunk_reassembly_view(rec[i].snapshot, [rec[i].event])
        if not fig.layout.title.text.startswith("Chunk reassembly on"):
            continue  # before the subscription: the empty figure
        drawn += 1
        sup = re.search(r"<sup>(.*)</sup>", fig.layout.title.text).group(1)
        assert all(len(line) <= 100 for line in sup.split("<br>")), "one step line per line: none clipped"
        assert fig.layout.margin.t >= 86 + 16 * len(sup.split("<br>")), "the title's lines fit in the top margin"
        if any(t.showlegend is not False for t in fig.data):
            assert_legend_clear(fig)
    assert drawn > 10


# -- lab 01 ---------------------------------------------------------------------------------------------------------
def test_hash_ranges_frame_zero_agrees_with_its_text_and_the_legend_is_clear():
    split = KeySharedScenario("auto_split", "4.0")
    split.add("c1")
    fig = hash_range_view(split.timeline[0].snapshot, [split.timeline[0].event])
    assert [t.name for t in fig.data if len(t.x or ())] == ["not assigned yet: c1 joined, placed in the next step"]
    assert_legend_clear(fig)
    sticky = KeySharedScenario("sticky", "4.0")
    sticky.add("c1", ranges=[(0, 100)])
    sticky.add("c2", ranges=[(50, 200)])  # rejected: no promise that it gets a range
    names = [t.name for t in hash_range_view(sticky.timeline[-1].snapshot, [sticky.timeline[-1].event]).data]
    assert "no consumer (messages wait)" in names


def test_comparison_labels_stand_upright_and_the_reference_lines_are_named_in_the_titles():
    fig = compare_figure([f"key-{i}" for i in range(3000)], n_consumers=3, version="4.0")
    labelled = [t for t in fig.data if t.text is not None]
    assert labelled and all(t.textangle == -90 and t.textposition == "outside" for t in labelled)
    texts = [a.text for a in fig.layout.annotations]
    assert len(texts) == 3, "only the subplot titles: no note drawn over the bars"
    assert "ideal join 25.0%" in texts[2]
    tallest = max(max(t.y) for t in labelled if t.xaxis == "x3")
    assert fig.layout.yaxis3.range[1] >= tallest * 1.3, "room above the tallest bar for its label"
    assert_legend_clear(fig)


# -- lab 09 ---------------------------------------------------------------------------------------------------------
def test_delayed_figures_legends_and_names():
    rows = [
        r.as_dict()
        for r in sweep(
            messages=(100, 200),
            spreads_ms=(60_000,),
            entries_per_ledger=50,
            broker_config={"delayedDeliveryMinIndexCountPerBucket": 50},
        )
    ]
    fig = memory_comparison_figure(rows)
    names = [t.name for t in fig.data]
    assert not any("in-memory in memory" in n for n in names)
    assert any(n.startswith("in-memory tracker: memory") for n in names)
    assert_legend_clear(fig)

    from datetime import timedelta

    lab = pl.Lab(version="4.0", seed=1)
    rec = Recorder(lab)
    client = lab.client()
    worker = client.subscribe("reminders", "workers", consumer_type=pl.ConsumerType.Shared, consumer_name="w1")
    producer = client.create_producer("reminders")
    for ms in (500, 1500):
        producer.send(b"x", deliver_after=timedelta(milliseconds=ms))
    lab.advance(600)
    while worker.receiver_queue:
        worker.acknowledge(worker.receive(0))
    snap = rec[-1].snapshot
    for view in (delayed_timeline_view, partial(delayed_memory_view)):
        assert_legend_clear(view(snap, [rec[-1].event]), min_gap=40)


def test_a_step_that_changes_the_height_keeps_the_width_following_the_cell():
    """plotly.js answers a relayout of the height by fixing the width it has (700 px before the figure was fitted):
    the step sends a null width with it."""
    widget = go.FigureWidget(empty_figure("Cursor", "no subscription yet: subscribe a consumer first"))
    sent: list[dict] = []
    widget.observe(lambda c: c["new"] and sent.append(c["new"]), names=["_py2js_update"])
    lab, rec = acked_run()
    sync_figure(widget, cursor_view(rec[-1].snapshot))
    layout = sent[-1]["layout_data"]
    assert "height" in layout and "width" in layout and layout["width"] is None


def test_redelivery_timeline_and_blocking_legends_hang_under_the_axis_title():
    from pulsarlab_widgets.views.key_shared_blocking import key_shared_blocking_view
    from pulsarlab_widgets.views.redelivery_timeline import redelivery_timeline_view

    lab, rec = acked_run()
    assert_legend_clear(redelivery_timeline_view(rec[-1].snapshot))
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    consumer = client.subscribe("orders", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c1")
    producer = client.create_producer("orders")
    for i in range(6):
        producer.send(f"m{i}".encode(), partition_key=f"k{i % 3}")
    lab.run_until_idle()
    consumer.receive(0)
    from pulsarlab.snapshot.lab import snapshot

    assert_legend_clear(key_shared_blocking_view(snapshot(lab)))


def _counting(view, calls: list):
    """``view`` noting in ``calls`` the event of each frame it draws (by the player or its draw-ahead worker):
    the last of the events it is given."""

    def counted(snapshot, events):
        calls.append(events[-1].seq)
        return view(snapshot, events)

    return counted


def test_a_step_takes_the_frame_drawn_ahead_once_the_delay_has_passed(monkeypatch):
    monkeypatch.setattr(player_module, "AHEAD_DELAY_S", 0.0)
    ring, calls = ring_scenario(), []
    player = Player(ring.timeline, _counting(ring_view, calls), start=5)
    on_demand = Player(ring.timeline, ring_view, start=5, prefetch=False)
    for _ in range(3):
        for future in list(player._ahead.values()):
            future.result(timeout=60)  # the next and the previous frame drawn ahead
        player.step()
        on_demand.step()
        # the worker is already drawing the new frame's neighbours (a neighbour may share the frame's snapshot):
        # count only the draws of the frame stepped to
        assert calls.count(ring.timeline[player.index].event.seq) == 1, (
            "the step drew its frame again instead of taking the one drawn ahead"
        )
        assert _spec(player.figures[0]) == _spec(on_demand.figures[0]), f"frame {player.index}"


def test_a_step_before_the_delay_draws_its_frame_itself_and_nothing_is_drawn_ahead_for_the_frame_left(monkeypatch):
    monkeypatch.setattr(player_module, "AHEAD_DELAY_S", 600.0)
    ring, calls = ring_scenario(), []
    player = Player(ring.timeline, _counting(ring_view, calls), start=5)
    try:
        on_demand = Player(ring.timeline, ring_view, start=5, prefetch=False)
        assert len(calls) == 1, "only the frame shown is drawn at once"
        waiting = list(player._ahead.values())
        assert len(waiting) == 2 and not any(f.done() for f in waiting)
        player.step()
        on_demand.step()
        assert len(calls) == 2, "the step drew frame 6 itself"
        assert _spec(player.figures[0]) == _spec(on_demand.figures[0])
        # frame 5's neighbours: the one waiting wakes up and gives up, the one queued behind it is cancelled
        assert [f.cancelled() or f.result(timeout=60) is None for f in waiting] == [True, True]
        assert len(calls) == 2
    finally:
        player._moved.set()  # frame 6's neighbours would hold the kernel's one worker for 600 s: draw them now
        for future in list(player._ahead.values()):
            future.cancelled() or future.result(timeout=60)


# one row of ipywidgets controls (28 px and a 2 px margin around it), a line of the label, the player's title row
CONTROL_ROW_PX = 32
LABEL_LINE_PX = 20
LABEL_CHARS_PER_LINE = 150  # a 13 px font (about 7 px a character) in the 1,100 px output area of a 1280 px screen


def test_lab_01_ring_player_fits_a_720_px_screen():
    ring = ring_scenario()
    player = Player(
        ring.timeline,
        [ring_view, hash_range_view],
        start=ring.timeline.find("key_selected"),
        title="ring",
        prefetch=False,
    )
    for i in range(len(ring.timeline)):
        player.jump(i)
        label_lines = 1 + -(-len(ring.timeline[i].explanation) // LABEL_CHARS_PER_LINE)
        controls = LABEL_LINE_PX + 2 * CONTROL_ROW_PX + LABEL_LINE_PX * label_lines
        figures = sum(f.layout.height for f in player.figures)
        assert controls + figures <= 720, f"frame {i}: {controls} px of controls and {figures} px of figures"
    assert_legend_clear(player.figures[1])
