"""Views build figures from snapshots headlessly; the player's controls move every figure and the label."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import pytest

from pulsarlab.exercises import check_autosplit_ranges, check_batch_routing
from pulsarlab.scenarios.distribution import distribution_metrics
from pulsarlab.scenarios.key_shared import KeySharedScenario, snapshot_assignments
from pulsarlab_widgets.player import Player, events_between, render, sync_figure
from pulsarlab_widgets.views import compare_figure, hash_range_view, ring_view, scale_figure, sticky_view


def autosplit_scenario() -> KeySharedScenario:
    sc = KeySharedScenario("auto_split")
    for name in ("c1", "c2", "c3", "c4"):
        sc.add(name)
    sc.remove("c2")
    return sc


def bars_by_row(fig: go.Figure, row: str) -> list[tuple[int, int, str]]:
    """(start, end, trace name) of every bar drawn in a row."""
    out = []
    for trace in fig.data:
        if trace.type != "bar" or trace.visible is False:  # a player's spare trace slot draws nothing
            continue
        for y, base, width in zip(trace.y, trace.base, trace.x):
            if y == row:
                out.append((base, base + width - 1, trace.name))
    return sorted(out)


# -- views --------------------------------------------------------------------------------------


def test_hash_range_view_draws_every_assignment_of_the_snapshot():
    sc = autosplit_scenario()
    snap = sc.snapshot()
    fig = hash_range_view(snap)
    assert "Hash ranges" in fig.layout.title.text
    drawn = bars_by_row(fig, "assignments")
    names = dict(snap["consumers"])
    assert [(s, e) for s, e, _n in drawn] == [(s, e) for s, e, _c in snapshot_assignments(snap)]
    assert [n for _s, _e, n in drawn] == [f"{names[c]} (id {c})" for _s, _e, c in snapshot_assignments(snap)]
    assert bars_by_row(fig, "moved this step") == []


def test_hash_range_view_marks_what_moved_in_the_events():
    sc = autosplit_scenario()
    i = sc.timeline.find("range_split", start=4)  # c3 splits c2's range
    frame = sc.timeline[i]
    fig = hash_range_view(frame.snapshot, [frame.event])
    moved = bars_by_row(fig, "moved this step")
    assert [(s, e) for s, e, _n in moved] == [tuple(frame.event.taken)]
    drawn = next(t for t in fig.data if t.name == "moved this step")  # one trace, each bar named for its new owner
    assert list(drawn.text) == [frame.event.name]
    assert drawn.hovertext[0].endswith(f"to {frame.event.name}")


def test_hash_range_view_for_a_ring_and_for_sticky_gaps():
    ch = KeySharedScenario("consistent_hashing", points=10)
    ch.add("c1")
    ch.add("c2")
    fig = hash_range_view(ch.snapshot())
    widths = sum(w for t in fig.data for w in t.x)
    assert widths == 65535  # the 4.x key-hash range [1, 65535], covered once
    st = KeySharedScenario("sticky")
    st.add("c1", ranges=[(0, 9)])
    gaps = [t for t in hash_range_view(st.snapshot()).data if t.name.startswith("no consumer")]
    assert list(gaps[0].base) == [10] and list(gaps[0].x) == [65526]


def test_ring_view_points_collisions_and_keys():
    sc = KeySharedScenario("consistent_hashing", points=10, range_max=63)
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    sc.select_keys(["key1", "key2"])
    snap = sc.snapshot()
    fig = ring_view(snap, sc.log.of_kind("key_selected"))
    assert "Consistent-hash ring" in fig.layout.title.text
    point_traces = [t for t in fig.data if t.name.endswith(" points")]
    assert sum(len(t.r) for t in point_traces) == len(snap["ring"])
    shared = [p for p, _s, others in snap["ring"] if others]
    collisions = next(t for t in fig.data if t.name.startswith("collisions"))
    assert len(collisions.theta) == len(shared) > 0
    keys = next(t for t in fig.data if t.name == "keys")
    assert list(keys.text) == ["'key1'", "'key2'"]
    assert fig.layout.polar.angularaxis.direction == "clockwise"


def test_ring_view_highlights_the_point_of_the_frame():
    sc = KeySharedScenario("consistent_hashing", points=3)
    sc.add("c1")
    frame = sc.timeline[sc.timeline.find("ring_point_added")]
    fig = ring_view(frame.snapshot, [frame.event])
    changed = next(t for t in fig.data if t.name == "changed this step")
    assert len(changed.theta) == 1
    assert changed.theta[0] == pytest.approx(360 * (frame.event.point - 1) / 65535)


def test_sticky_view_shows_gaps_and_rejections_with_pulsars_text():
    sc = KeySharedScenario("sticky")
    sc.add("c1", ranges=[(0, 100), (200, 300)])
    sc.add("c2", ranges=[(250, 400)])
    fig = sticky_view(sc.snapshot(), sc.log.of_kind("assign_rejected"))
    assert "Sticky hash ranges" in fig.layout.title.text
    gap = next(t for t in fig.data if t.name.startswith("no consumer"))
    assert list(gap.base) == [101, 301]
    rejected = bars_by_row(fig, "rejected: c2")
    assert [(s, e) for s, e, _n in rejected] == [(250, 400)]
    texts = [a.text for a in fig.layout.annotations]
    assert texts == [
        "ConsumerAssignException: Range conflict with consumer Consumer{subscription=PersistentSubscription{topic="
        "persistent://public/default/my-topic, name=my-subscription}, consumerId=1, consumerName=c1, "
        "address=/127.0.0.1:6650}"
    ]


def test_views_reject_the_wrong_snapshot_clearly():
    sc = autosplit_scenario()
    with pytest.raises(ValueError, match="ring_view draws a selector snapshot with a 'ring' entry"):
        ring_view(sc.snapshot())
    with pytest.raises(ValueError, match="key_hash_range"):
        hash_range_view({"range_map": (), "consumers": ()})


def test_compare_figure_uses_the_distribution_metrics():
    keys = [f"key-{i}" for i in range(3000)]
    fig = compare_figure(keys, kinds=("auto_split", "consistent_hashing"), n_consumers=3)
    assert "Selector comparison" in fig.layout.title.text
    for kind in ("auto_split", "consistent_hashing"):
        m = distribution_metrics(keys, kind, 3)
        per = next(t for t in fig.data if t.name == kind and t.xaxis == "x")
        assert dict(zip(per.x, per.y)) == m["keys_per_consumer"]
        moved = next(t for t in fig.data if t.name == kind and t.xaxis == "x3")
        assert list(moved.y) == [m["moved_on_join"], m["moved_on_leave"]]


def test_scale_figure_from_a_key_distribution_frame():
    import pandas as pd

    rows = [
        {
            "selector": k,
            "version": "4.0",
            "consumers": n,
            "imbalance": 1 + n / 10,
            "moved_on_join": 1 / (n + 1),
            "moved_on_leave": 1 / n,
            "keys_per_consumer": {},
            "total_keys": 1000,
        }
        for k in ("auto_split", "sticky")
        for n in (2, 4)
    ]
    fig = scale_figure(pd.DataFrame(rows))
    lines = [t for t in fig.data if t.xaxis == "x"]
    assert {t.name for t in lines} == {"auto_split", "sticky"}
    assert list(lines[0].y) == [1.2, 1.4]
    with pytest.raises(ValueError, match="missing"):
        scale_figure(pd.DataFrame([{"selector": "x"}]))


# -- player ---------------------------------------------------------------------------------------


def test_player_step_back_jump_update_figures_and_label():
    sc = autosplit_scenario()
    player = Player(sc.timeline, [hash_range_view])
    fig = player.figures[0]
    assert isinstance(fig, go.FigureWidget)
    assert player.index == 0
    assert sc.timeline[0].explanation in player.label.value.replace("&#x27;", "'")
    # c1 joined, placed in the next step: the grey bar says so (not "no consumer", while the text says c1 joins)
    assert bars_by_row(fig, "assignments") == [(0, 65536, "not assigned yet: c1 joined, placed in the next step")]

    player.step()
    player.step()  # range_assigned -> hash_ranges_moved: c1 owns everything
    assert player.index == 2
    assert bars_by_row(fig, "assignments") == [(0, 65536, "c1 (id 1)")]

    split = player.jump_to_kind("range_split")
    assert split == sc.timeline.find("range_split")
    assert player.index == split
    expected = bars_by_row(hash_range_view(sc.timeline[split].snapshot), "assignments")
    assert bars_by_row(fig, "assignments") == expected
    assert "took the lower half" in player.label.value

    player.back()
    assert player.index == split - 1
    assert bars_by_row(fig, "assignments") == bars_by_row(
        hash_range_view(sc.timeline[split - 1].snapshot), "assignments"
    )

    player.jump(-1)
    assert player.index == len(sc.timeline) - 1
    player.step()  # at the end: stays
    assert player.index == len(sc.timeline) - 1
    assert bars_by_row(fig, "assignments") == bars_by_row(hash_range_view(sc.snapshot()), "assignments")
    assert player.jump_to_kind("range_split", direction=+1) is None
    with pytest.raises(ValueError, match="no event of kind"):
        player.jump_to_kind("ring_point_added")
    with pytest.raises(IndexError):
        player.jump(len(sc.timeline))


def test_player_passes_the_events_since_the_last_frame():
    sc = autosplit_scenario()
    seen: list[list[str]] = []

    def recording_view(snapshot, events):
        seen.append([e.kind for e in events])
        return go.Figure(go.Bar(x=[1]), layout=dict(title="recording"))

    player = Player(sc.timeline, recording_view, prefetch=False)  # only the frames shown: no drawing ahead
    player.jump(3)
    player.back()
    assert seen == [
        ["consumer_added"],
        [sc.timeline[j].kind for j in (1, 2, 3)],
        [sc.timeline[2].kind],
    ]
    assert [e.seq for e in events_between(sc.timeline, 5, 7)] == [6, 7]


def test_player_drives_several_views_and_the_controls_are_linked():
    sc = KeySharedScenario("consistent_hashing", points=4)
    sc.add("c1")
    sc.add("c2")
    player = Player(sc.timeline, [ring_view, hash_range_view], interval_ms=800)
    player.play.value = 6  # what the Play widget does when it ticks
    assert player.index == 6 and player.slider.value == 6
    ring_titles = player.figures[0].layout.title.text
    assert "Consistent-hash ring" in ring_titles and "Hash ranges" in player.figures[1].layout.title.text
    points = sum(len(t.r) for t in player.figures[0].data if t.visible is not False and t.name.endswith(" points"))
    assert points == len(sc.timeline[6].snapshot["ring"])
    player.step_button.click()
    assert player.index == 7
    player.back_button.click()
    assert player.index == 6
    player.speed.value = 2.0
    assert player.play.interval == 400


def test_player_marks_each_figure_with_its_frame_after_sending_the_frames_changes():
    """The front end shows ``shown_frame`` as the figure's data-frame; it is set after the frame's figure update on
    the same comm, so it arrives after it, and a figure a step leaves unchanged is marked too."""
    sc = KeySharedScenario("consistent_hashing", points=4)
    sc.add("c1")
    sc.add("c2")
    player = Player(sc.timeline, [ring_view, hash_range_view], start=2, prefetch=False)
    assert [f.shown_frame for f in player.figures] == [2, 2]
    sent: list[tuple[int, str, object]] = []
    for k, fig in enumerate(player.figures):
        note = lambda c, k=k: c["new"] is not None and sent.append((k, c["name"], c["new"]))  # noqa: E731
        fig.observe(note, names=["_py2js_update", "shown_frame"])
    player.step()
    names = [[name for j, name, _v in sent if j == k] for k in (0, 1)]
    # frame 3 adds a ring point to hashes c1 already owned: the ring changes, the hash ranges do not; both get
    # their mark, last
    assert names == [["_py2js_update", "shown_frame"], ["shown_frame"]], sent
    assert [f.shown_frame for f in player.figures] == [3, 3]
    sent.clear()
    player.jump(3)  # the slider does not move: nothing is sent
    assert sent == []


def test_player_with_any_timeline_of_snapshot_frames():
    @dataclass
    class Step:
        snapshot: Any
        explanation: str

    def count_view(snapshot, events):
        return go.Figure(go.Bar(x=list(range(snapshot)), y=[1] * snapshot), layout=dict(title=f"n={snapshot}"))

    timeline = [Step(n, f"{n} bars") for n in (1, 3, 2)]
    player = Player(timeline, count_view)
    assert player.kinds() == []
    player.jump(1)
    assert len(player.figures[0].data[0].x) == 3
    assert "3 bars" in player.label.value
    with pytest.raises(ValueError, match="no frames yet"):
        Player([], count_view)
    with pytest.raises(TypeError, match="view function"):
        Player(timeline, ["not a view"])


def test_player_refresh_picks_up_new_frames():
    sc = KeySharedScenario("auto_split")
    sc.add("c1")
    player = Player(sc.timeline, hash_range_view)
    sc.add("c2")
    player.refresh()
    assert player.slider.max == len(sc.timeline) - 1
    assert "range_split" in player.kind.options
    player.jump(-1)
    assert player.index == len(sc.timeline) - 1


def test_sync_figure_replaces_traces_when_their_number_changes():
    widget = go.FigureWidget(go.Figure([go.Bar(x=[1]), go.Bar(x=[2])], layout=dict(title="a")))
    sync_figure(widget, go.Figure([go.Scatter(x=[5, 6])], layout=dict(title="b")))
    assert [t.type for t in widget.data] == ["scatter"] and list(widget.data[0].x) == [5, 6]
    assert widget.layout.title.text == "b"
    sync_figure(widget, go.Figure([go.Scatter(y=[7])], layout=dict(title="c")))
    assert widget.data[0].x is None and list(widget.data[0].y) == [7]


def test_static_render_to_html():
    sc = KeySharedScenario("consistent_hashing", points=5)
    sc.add("c1")
    sc.add("c2")
    sc.select_keys(["Order-3459134"])
    fig = render(ring_view, sc.timeline, -1)
    html = fig.to_html(include_plotlyjs=False, full_html=False)
    assert "Consistent-hash ring" in html and "Order-3459134" in html
    static = render(hash_range_view, sc.timeline, -1)
    assert static.to_dict() == hash_range_view(sc.timeline[-1].snapshot, [sc.timeline[-1].event]).to_dict()


# -- exercise checkers (their messages are what the notebook shows) ------------------------------


def test_autosplit_checker_explains_the_lower_half_rule():
    ok = check_autosplit_ranges({"c1": (32769, 65536), "c2": (16385, 32768), "c3": (0, 16384)})
    assert ok and str(ok).startswith("OK")
    swapped = check_autosplit_ranges({"c1": (32769, 65536), "c2": (0, 16384), "c3": (16385, 32768)})
    assert not swapped
    assert "c3 should own [0, 16384]; you said [16385, 32768]: the NEWCOMER takes the LOWER half" in swapped.message
    top = check_autosplit_ranges({"c1": (32769, 65535), "c2": (16385, 32768), "c3": (0, 16384)})
    assert "ends at rangeSize 65536" in top.message
    assert "should be a dict" in check_autosplit_ranges([(0, 1)]).message


def test_batch_checker_explains_the_first_key_rule():
    keys = ["customer-2", "customer-4", "customer-1", "customer-2", "customer-4"]
    sc = KeySharedScenario("consistent_hashing")
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    own = {s.key: s.consumer_name for s in sc.select_keys(keys, record=False)}
    right = {"default": own["customer-2"], "key_based": {k: own[k] for k in keys}}
    assert check_batch_routing(right, keys)
    wrong_default = own["customer-4"] if own["customer-4"] != own["customer-2"] else own["customer-1"]
    result = check_batch_routing({**right, "default": wrong_default}, keys)
    assert not result and "FIRST message's key 'customer-2'" in result.message
    lumped = check_batch_routing({**right, "key_based": {k: right["default"] for k in keys}}, keys)
    assert any(own[k] != right["default"] for k in keys)
    assert not lumped and "its own sub-batch" in lumped.message
