"""Fork "what if from here": a scenario run recorded (and saved), replayed to frame N, changed, run on; the
branch equals the base up to the change and diverges exactly there."""

from __future__ import annotations

from pathlib import Path

import pytest

import pulsarlab as pl
from pulsarlab.scenarios.fork import Change, first_divergence, fork, record_row
from pulsarlab.scenarios.spec import ScenarioSpec
from pulsarlab.snapshot.recorder import Recorder


def row(**kw):
    base = {
        "messages": 30,
        "keys": 4,
        "consumers": 2,
        "subscription_type": "Key_Shared",
        "seeds": 3,
        "publish_rate_per_s": 200,
        "receiver_queue_size": 5,
        "negative_ack_redelivery_delay_ms": 100,
    }
    return next(ScenarioSpec.from_dict({**base, **kw}).rows())


@pytest.fixture(scope="module")
def recorded():
    return record_row(row())


def test_replaying_a_row_gives_identical_frames(recorded):
    _result, rec = recorded
    _again, rec2 = record_row(row())
    assert len(rec) > 50
    assert first_divergence(rec, rec2) is None


@pytest.mark.parametrize(
    "change",
    [Change("consumer_leaves", consumer="c1"), Change("consumer_joins"), Change("nack_next", count=2)],
    ids=lambda c: c.kind,
)
def test_a_fork_diverges_exactly_where_the_change_was_made(recorded, change):
    _result, rec = recorded
    n = len(rec) // 3
    result = fork(rec, n, change)
    assert result.change_frame >= n, "the change is made at or after frame N"
    assert result.change_time >= rec[n].time
    for i in range(result.change_frame):
        assert result.branch[i].snapshot.to_json() == rec[i].snapshot.to_json()
        assert result.branch[i].explanation == rec[i].explanation
    assert result.first_divergence is not None and result.first_divergence >= result.change_frame
    if change.kind != "nack_next":  # a consumer closing or subscribing is itself the next event
        assert result.first_divergence == result.change_frame
    else:  # the nack shows when the application next takes a message
        assert result.branch[result.first_divergence].kind is not None
    assert "first divergence at frame" in result.summary()


def test_a_consumer_leaving_shows_in_the_branch_and_not_in_the_base(recorded):
    _result, rec = recorded
    result = fork(rec, len(rec) // 3, Change("consumer_leaves", consumer="c1"))
    start = result.change_frame
    closed = next(i for i in range(start, len(result.branch)) if result.branch[i].kind == "consumer_closed")
    assert closed < start + 10, "closing flushes c1's acks, then it closes"

    def names(frame):
        return [c.name for c in frame.snapshot.subscription().consumers]

    assert "c1" not in names(result.branch[closed]) and "c1" in names(rec[closed])
    assert "c1" in names(result.branch[start - 1])


def test_fork_from_a_saved_file(tmp_path: Path, recorded):
    _result, rec = recorded
    loaded = pl.load_timeline(rec.save(tmp_path / "row.plt.jsonl.gz"))
    assert loaded.inputs["scenario_row"]["seed"] == 3
    from_file = fork(loaded, 40, Change("consumer_joins"))
    from_rec = fork(rec, 40, Change("consumer_joins"))
    assert from_file.change_frame == from_rec.change_frame
    assert from_file.first_divergence == from_rec.first_divergence
    assert first_divergence(from_file.branch, from_rec.branch) is None


def test_fork_frame_out_of_range_and_bad_changes_fail_clearly(recorded):
    _result, rec = recorded
    n = len(rec)
    with pytest.raises(IndexError, match=f"fork frame {n} is outside the timeline \\(0..{n - 1}\\)"):
        fork(rec, n, Change("consumer_joins"))
    with pytest.raises(IndexError, match="fork frame -1"):
        fork(rec, -1, Change("consumer_joins"))
    with pytest.raises(ValueError, match="unknown change 'consumer_crashes'"):
        Change("consumer_crashes")
    with pytest.raises(ValueError, match="no consumer 'zz' at the fork frame"):
        fork(rec, 10, Change("consumer_leaves", consumer="zz"))


def test_a_timeline_without_replayable_inputs_cannot_be_forked():
    lab = pl.Lab()
    rec = Recorder(lab)
    lab.client().subscribe("t", "s")
    with pytest.raises(ValueError, match="no replayable inputs"):
        fork(rec, 0, Change("consumer_joins"))


def test_a_timeline_from_another_model_is_refused(tmp_path: Path, recorded):
    _result, rec = recorded
    other = record_row(row(seeds=4))[1]
    other.inputs["scenario_row"] = rec.inputs["scenario_row"]  # claims seed 3, holds seed 4's frames
    with pytest.raises(ValueError, match="the replay differs from the timeline at frame"):
        fork(other, len(other) // 2, Change("consumer_joins"))


def test_the_fork_view_opens_both_branches_at_the_divergence_and_steps_them_together(recorded):
    from pulsarlab_widgets.fork import ForkView
    from pulsarlab_widgets.views.cursor import cursor_view

    _result, rec = recorded
    result = fork(rec, len(rec) // 3, Change("consumer_leaves", consumer="c1"))
    view = ForkView(result, [cursor_view])
    d = result.first_divergence
    assert view.base.index == view.branch.index == d
    assert "the branches differ here" in view.label.value
    view.branch.press("ArrowLeft")
    assert view.base.index == view.branch.index == d - 1
    view.base.press("Home")
    assert view.branch.index == 0 and "identical (before the change)" in view.label.value
    view.base.press("End")
    assert view.branch.index == min(len(rec), len(result.branch)) - 1
    view.to_divergence.click()
    assert view.base.index == view.branch.index == d
