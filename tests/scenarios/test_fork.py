"""Fork "what if from here": a scenario run recorded (and saved), replayed to frame N, changed, run on; the
branch equals the base up to the change and diverges exactly there."""

from __future__ import annotations

from pathlib import Path

import pytest

import pulsarlab as pl
from pulsarlab.scenarios.fork import Change, first_divergence, fork, record_row, same_frame
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


ALL_CHANGES = [
    Change("consumer_leaves", consumer="c1"),
    Change("consumer_joins"),
    Change("nack_next", count=2),
    Change("setting_changes", setting="dispatcherMaxReadBatchSize", value=1),
    Change("version_changes", version="3.0"),
    Change("version_changes", version="4.1"),
]


@pytest.mark.parametrize("change", ALL_CHANGES, ids=lambda c: "-".join(str(v) for v in c.as_dict().values()))
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


@pytest.mark.parametrize("frame", [0, 1, 57, -2], ids=lambda f: f"frame{f}")
def test_a_setting_change_restarts_the_broker_with_it_exactly_at_the_fork(recorded, frame):
    _result, rec = recorded
    n = frame if frame >= 0 else len(rec) // 2
    result = fork(rec, n, Change("setting_changes", setting="dispatcherMaxReadBatchSize", value=1))
    c = result.change_frame
    assert c >= n and result.first_divergence == c
    assert first_divergence(rec[:c], result.branch[:c]) is None
    assert result.branch[c].kind == "broker_restarting"
    assert all(rec[i].snapshot.setting("dispatcherMaxReadBatchSize") == 100 for i in range(len(rec)))
    assert result.branch[c - 1].snapshot.setting("dispatcherMaxReadBatchSize") == 100
    after = [result.branch[i].snapshot.setting("dispatcherMaxReadBatchSize") for i in range(c, len(result.branch))]
    assert set(after) == {1}
    assert "dispatcherMaxReadBatchSize = 1 (was 100), the broker restarts" in result.summary()


def test_the_setting_itself_changes_dispatch_not_only_the_restart(recorded):
    _result, rec = recorded
    n = len(rec) // 3
    one = fork(rec, n, Change("setting_changes", setting="dispatcherMaxReadBatchSize", value=1))
    many = fork(rec, n, Change("setting_changes", setting="dispatcherMaxReadBatchSize", value=50))
    assert one.change_frame == many.change_frame
    parted = first_divergence(one.branch, many.branch)
    assert parted is not None and parted >= one.change_frame
    kinds = [one.branch[i].kind for i in range(one.change_frame, len(one.branch))]
    assert "broker_restarted" in kinds and "cursor_recovered" in kinds


@pytest.mark.parametrize("version", ["3.0", "4.1"])
def test_a_version_change_reloads_the_broker_on_the_new_profile(recorded, version):
    _result, rec = recorded
    assert rec[0].snapshot.version == "4.0"
    result = fork(rec, len(rec) // 3, Change("version_changes", version=version))
    c = result.change_frame
    assert result.first_divergence == c
    assert {result.branch[i].snapshot.version for i in range(c)} == {"4.0"}
    assert {result.branch[i].snapshot.version for i in range(c, len(result.branch))} == {version}
    lab = result.branch.lab
    assert lab.version == version and lab.service.profile.name == version
    subs = [s for t in lab.service.topics.values() for s in t.subscriptions.values() if s.dispatcher is not None]
    assert subs and all(s.dispatcher.profile.name == version for s in subs), "dispatchers made after the restart"
    assert f"restarts as Pulsar {version} (was 4.0)" in result.summary()
    if version == "4.1":  # 4.1 defaults batch-index acks on, but the model fixes them when a topic is made
        assert "acknowledgmentAtBatchIndexLevelEnabled stays False" in result.done
        assert lab.config["acknowledgmentAtBatchIndexLevelEnabled"] is False


def test_a_branch_saved_to_a_file_forks_again_with_its_own_change_replayed(tmp_path: Path, recorded):
    _result, rec = recorded
    first = fork(rec, len(rec) // 3, Change("version_changes", version="3.0"))
    loaded = pl.load_timeline(first.branch.save(tmp_path / "branch.plt.jsonl.gz"))
    [made] = loaded.inputs["fork_changes"]
    assert made["change"] == {"kind": "version_changes", "version": "3.0"} and made["frame"] == first.change_frame
    later = first.change_frame + 20
    second = fork(loaded, later, Change("consumer_joins"))  # the replay makes the 3.0 change again, then this one
    assert second.first_divergence is not None and second.first_divergence >= later
    assert second.branch[later].snapshot.version == "3.0"
    assert [c["change"]["kind"] for c in second.branch.inputs["fork_changes"]] == ["version_changes", "consumer_joins"]
    earlier = fork(loaded, 5, Change("consumer_joins"))  # before the branch's own change: that one is not made
    assert [c["change"]["kind"] for c in earlier.branch.inputs["fork_changes"]] == ["consumer_joins"]
    assert {f.snapshot.version for f in earlier.branch} == {"4.0"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "setting_changes", "setting": "noSuchSetting", "value": 1}, "unknown broker setting 'noSuchSetting'"),
        ({"kind": "setting_changes", "value": 1}, "setting_changes needs setting="),
        (
            {"kind": "setting_changes", "setting": "dispatcherMaxReadBatchSize", "value": "10"},
            "dispatcherMaxReadBatchSize takes an int \\(default 100\\), got '10'",
        ),
        (
            {"kind": "setting_changes", "setting": "activeConsumerFailoverConsistentHashing", "value": 1},
            "takes a bool",
        ),
        (
            {"kind": "setting_changes", "setting": "acknowledgmentAtBatchIndexLevelEnabled", "value": True},
            "read only when a topic, cursor or client is made",
        ),
        ({"kind": "version_changes"}, "version_changes needs version=, one of: "),
        ({"kind": "version_changes", "version": "9.9"}, "unknown Pulsar version profile '9.9'"),
        ({"kind": "consumer_joins", "version": "3.0"}, "version= belongs to version_changes"),
        ({"kind": "consumer_joins", "setting": "dispatcherMaxReadBatchSize"}, "belong to setting_changes"),
        ({"kind": "consumer_joins", "count": 3}, "count= is how many messages nack_next nacks"),
        ({"kind": "nack_next", "count": 0}, "count must be an int >= 1"),
        ({"kind": "Consumer_Leaves"}, "unknown change 'Consumer_Leaves'; changes: consumer_leaves, consumer_joins"),
    ],
)
def test_a_bad_change_is_refused_when_made(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Change(**kwargs)


def test_a_change_that_changes_nothing_is_refused(recorded):
    _result, rec = recorded
    with pytest.raises(ValueError, match="dispatcherMaxReadBatchSize is already 100 at the fork frame"):
        fork(rec, 10, Change("setting_changes", setting="dispatcherMaxReadBatchSize", value=100))
    with pytest.raises(ValueError, match="already runs Pulsar 4.0"):
        fork(rec, 10, Change("version_changes", version="4.0"))


@pytest.mark.parametrize("frame", [True, 1.0, "3"])
def test_a_fork_frame_that_is_no_int_is_refused(recorded, frame):
    _result, rec = recorded
    with pytest.raises(TypeError, match="the fork frame must be an int"):
        fork(rec, frame, Change("consumer_joins"))


def test_a_change_round_trips_through_its_dict():
    for change in ALL_CHANGES:
        assert Change.from_dict(change.as_dict()) == change
    with pytest.raises(ValueError, match="has no field"):
        Change.from_dict({"kind": "consumer_joins", "when": 3})
    with pytest.raises(ValueError, match="an object with a 'kind'"):
        Change.from_dict(["consumer_joins"])


def test_first_divergence_agrees_with_comparing_every_frame_as_json(recorded, tmp_path: Path):
    _result, rec = recorded
    loaded = pl.load_timeline(rec.save(tmp_path / "run.plt.jsonl.gz"))

    def by_json(a, b):
        for i in range(min(len(a), len(b))):
            if not same_frame(a[i], b[i]):
                return i
        return None if len(a) == len(b) else min(len(a), len(b))

    assert first_divergence(rec, loaded) is None and by_json(rec, loaded) is None
    for change in ALL_CHANGES[:4]:
        branch = fork(loaded, len(rec) // 4, change).branch
        assert first_divergence(loaded, branch) == by_json(loaded, branch) is not None
        assert first_divergence(branch, rec) == by_json(branch, rec)
    assert first_divergence(rec, rec[: len(rec) - 1]) == len(rec) - 1
