"""Delayed-delivery snapshots, views and exercises, headless: what each tracker shows (queue, time buckets, buckets
and segments in memory vs stored), a restart and the rebuild in the player, the memory panels, and the
exercise checkers with right and wrong answers."""

from __future__ import annotations

import json
from datetime import timedelta

import plotly.graph_objects as go
import pytest

import pulsarlab as pl
from pulsarlab.broker.delayed import jvm_memory as mem
from pulsarlab.broker.delayed.bucket.tracker import BUCKET_TRACKER_FACTORY
from pulsarlab.exercises.delayed import (
    check_delivery_times,
    check_restart_recovery,
    check_subscription_delays,
    delivery_times_answer,
    restart_answer,
    subscription_delay_answer,
)
from pulsarlab.scenarios.delayed_workload import sweep
from pulsarlab.snapshot.delayed import DELIVERED, LOADED, MAX_ITEMS, STORED
from pulsarlab.snapshot.lab import snapshot
from pulsarlab.snapshot.recorder import Recorder
from pulsarlab_widgets.player import Player
from pulsarlab_widgets.views.delayed import (
    DELAYED_VIEW_KINDS,
    SEGMENT_LABELS,
    delayed_memory_view,
    delayed_timeline_view,
    memory_comparison_figure,
    scheduling_work_figure,
)

BUCKETS = {
    "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
    "delayedDeliveryMinIndexCountPerBucket": 2,
    "managedLedgerMaxEntriesPerLedger": 2,
    "delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds": 2,
}


def run(version: str = "4.0", conf: dict | None = None, messages: int = 7, record: bool = False):
    lab = pl.Lab(version=version, seed=1, broker_config=conf or {})
    rec = Recorder(lab, every=DELAYED_VIEW_KINDS) if record else None
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(messages):
        producer.send(f"m{i}".encode(), deliver_after=timedelta(seconds=3 + i))
    return lab, consumer, rec


def traces_named(fig: go.Figure, text: str) -> list:
    return [t for t in fig.data if t.name and text in t.name]


# --- snapshots ------------------------------------------------------------------------------------------


def test_in_memory_snapshot_lists_the_queue_in_delivery_order():
    lab, _c, _r = run("4.0")
    lab.advance(4000)
    d = snapshot(lab).subscription().dispatcher.delayed
    assert d.form == "priority_queue" and d.kind == "InMemoryDelayedDeliveryTracker (priority queue)"
    assert d.messages == d.queue_size == 5 and [q[0] for q in d.queue] == [5000, 6000, 7000, 8000, 9000]
    assert (d.cutoff, d.next_delivery, d.timer_deadline) == (5000, 5000, 5000)
    assert d.memory_bytes == d.index_size_bytes == d.priority_queue_bytes == mem.bytes_capacity(5)
    json.dumps(snapshot(lab).to_dict())


def test_4_1_snapshot_shows_time_buckets_of_the_rounded_precision():
    lab, _c, _r = run("4.1")
    d = snapshot(lab).subscription().dispatcher.delayed
    assert d.form == "time_bitmap" and d.precision_ms == 512
    assert all(b.timestamp % 512 == 0 for b in d.time_buckets)
    assert sum(b.messages for b in d.time_buckets) == d.messages == 7


def test_bucket_snapshot_shows_segments_in_memory_and_stored():
    lab, _c, _r = run(conf=BUCKETS)
    d = snapshot(lab).subscription().dispatcher.delayed
    assert d.form == "bucket" and len(d.buckets) == 3 and d.mutable_size == 1
    states = {seg.state for b in d.buckets for seg in b.segments}
    assert states == {LOADED}  # segment 1 of each bucket is loaded when it is sealed
    assert d.stored_bytes == lab.service.bucket_snapshot_storage.total_length()
    assert all(b.snapshot_ledger in lab.service.bucket_snapshot_storage for b in d.buckets)
    lab.advance(5000)  # the first bucket's segment 1 taken: its segment 2 loads, later segments stay stored
    d = snapshot(lab).subscription().dispatcher.delayed
    assert sum(b.messages for b in d.buckets) + d.mutable_size == d.messages


def test_a_longer_bucket_has_stored_and_delivered_segments():
    conf = dict(
        BUCKETS,
        delayedDeliveryMinIndexCountPerBucket=4,
        managedLedgerMaxEntriesPerLedger=4,
        delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds=1,
    )
    lab, _c, _r = run(conf=conf, messages=5)
    bucket = snapshot(lab).subscription().dispatcher.delayed.buckets[0]
    assert [s.state for s in bucket.segments] == [LOADED, STORED, STORED, STORED]
    lab.advance(3000)  # the timer's read takes 3000 and 4000 (cutoff now + tick): segments 1 and 2
    bucket = snapshot(lab).subscription().dispatcher.delayed.buckets[0]
    assert [s.state for s in bucket.segments] == [DELIVERED, DELIVERED, LOADED, STORED]
    assert snapshot(lab).subscription().dispatcher.delayed.in_stored_buckets == 1


def test_snapshots_copy_at_most_max_items():
    lab, _c, _r = run(messages=MAX_ITEMS + 20)
    d = snapshot(lab).subscription().dispatcher.delayed
    assert len(d.queue) == MAX_ITEMS and d.queue_size == MAX_ITEMS + 20


def test_taking_a_snapshot_does_not_change_the_run():
    def digest(take: bool) -> str:
        lab, consumer, _ = run("4.1", conf={"delayedDeliveryFixedDelayDetectionLookahead": 3})
        for _ in range(20):
            if take:
                snapshot(lab)
            lab.advance(500)
        return lab.events.digest()

    assert digest(True) == digest(False)


# --- views --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version, conf", [("4.0", {}), ("4.1", {}), ("4.0", BUCKETS)])
def test_timeline_and_memory_views_build_for_every_frame(version, conf):
    lab, consumer, rec = run(version, conf, record=True)
    lab.advance(4000)
    lab.restart_broker()
    lab.advance(8000)
    assert not rec.errors
    for i in range(len(rec)):
        for view in (delayed_timeline_view, delayed_memory_view):
            assert isinstance(view(rec[i].snapshot, [rec[i].event] if rec[i].event else []), go.Figure)
    player = Player(rec, [delayed_timeline_view, delayed_memory_view])
    player.jump_to_kind("broker_restarting")
    assert "BROKER RESTART" in player.figures[0].layout.title.text or "restarted" in str(
        player.figures[0].layout.annotations
    )


def test_timeline_shows_segments_by_state_and_the_released_messages():
    lab, _c, rec = run(conf=BUCKETS, record=True)
    fig = delayed_timeline_view(snapshot(lab))
    assert traces_named(fig, SEGMENT_LABELS[LOADED])
    rows = set(fig.layout.yaxis.categoryarray)
    assert any(r.startswith("bucket [") for r in rows) and any(r.startswith("mutable bucket") for r in rows)
    lab.advance(3000)
    i = rec.find("delayed_released", start=0)
    frame = rec[i]
    fig = delayed_timeline_view(frame.snapshot, [frame.event])
    released = traces_named(fig, "released this step")
    assert released and list(released[0].x) == [3000]
    assert "released" in fig.layout.title.text


def test_timeline_explains_the_empty_cases():
    lab = pl.Lab(seed=1)
    assert "no subscription" in str(delayed_timeline_view(snapshot(lab)).layout.annotations[0].text)
    client = lab.client()
    client.subscribe("t", "s", consumer_type=pl.ConsumerType.Exclusive)
    client.create_producer("t").send(b"x", deliver_after=timedelta(seconds=5))
    assert "deliver delayed messages at once" in delayed_timeline_view(snapshot(lab)).layout.annotations[0].text
    lab2, consumer, _r = run(messages=1)
    consumer.close()
    lab2.restart_broker()
    fig = delayed_memory_view(snapshot(lab2), lab2.events.of_kind("broker_restarting"))
    assert "no consumer connected" in fig.layout.annotations[0].text


def test_memory_view_compares_with_the_in_memory_queue():
    lab, _c, _r = run(conf=BUCKETS)
    fig = delayed_memory_view(snapshot(lab))
    pq = traces_named(fig, "priority queue (3.x/4.0)")[0]
    # priced by the broker's JVM model when the snapshot is taken; the view reads the figure from the snapshot
    assert snapshot(lab).subscription().dispatcher.delayed.priority_queue_bytes == mem.bytes_capacity(7)
    assert list(pq.y) == [mem.bytes_capacity(7)]
    stored = traces_named(fig, "snapshot ledgers")[0]
    assert list(stored.y) == [lab.service.bucket_snapshot_storage.total_length()]


def test_sweep_figures():
    rows = [
        r.as_dict()
        for r in sweep(
            messages=(200, 800),
            spreads_ms=(60_000, 600_000),
            entries_per_ledger=100,
            broker_config={"delayedDeliveryMinIndexCountPerBucket": 100},
        )
    ]
    fig = memory_comparison_figure(rows)
    assert fig.layout.xaxis.type == "log" and len(fig.data) == 6  # in-memory x2, bucket memory x2, stored x2
    work = scheduling_work_figure(rows)
    assert len(work.data) == 6  # 3 metrics x 2 trackers
    with pytest.raises(ValueError, match="at least one row"):
        memory_comparison_figure([])


def test_views_fail_clearly_on_the_wrong_snapshot():
    with pytest.raises(TypeError, match="LabSnapshot"):
        delayed_timeline_view({"kind": "x"})


# --- exercises ------------------------------------------------------------------------------------------


def test_delivery_time_exercise():
    right = delivery_times_answer((500, 1500, 2200, 3000, 5000))
    assert check_delivery_times(right).ok
    wrong = check_delivery_times([500, 1500, 2200, 3000, 5000])
    assert not wrong.ok and "cutoff" in wrong.message
    late = check_delivery_times([right[0], right[1] - 500, *right[2:]])
    assert not late.ok and "lastTickRun + tick" in late.message
    assert not check_delivery_times([1, 2]).ok
    strict = delivery_times_answer((500, 1500), strict=True)
    assert all(t >= d for t, d in zip(strict, (500, 1500)))


def test_subscription_type_exercise():
    right = subscription_delay_answer(10_000)
    assert right == {"Exclusive": 0, "Failover": 0, "Shared": 10_000, "Key_Shared": 10_000}
    assert check_subscription_delays(right, 10_000).ok
    wrong = check_subscription_delays({k: 10_000 for k in right}, 10_000)
    assert not wrong.ok and "PersistentDispatcherMultipleConsumers" in wrong.message
    assert not check_subscription_delays({"Shared": 0}).ok


def test_restart_exercise():
    right = restart_answer()
    assert right["recovered"] + right["read_again"] == 10 and right["read_again"] > 0
    assert check_restart_recovery(right).ok
    everything = check_restart_recovery({"recovered": 10, "read_again": 0})
    assert not everything.ok and "mutable bucket" in everything.message
    assert not check_restart_recovery({"recovered": 0, "read_again": 10}).ok
    assert not check_restart_recovery([9, 1]).ok


def test_the_labs_checks_pass_with_the_solutions_and_wait_for_an_answer_as_shipped():
    import re
    from pathlib import Path

    import nbformat

    from pulsarlab.exercises.solutions import source

    lab = Path(__file__).resolve().parents[2] / "labs" / "09-delayed-delivery.ipynb"
    cells = [
        c.source
        for c in nbformat.read(lab, as_version=4).cells
        if c.cell_type == "code"
        and "answer_" in c.source
        and "check_" in c.source
        and "exercises.mechanisms" not in c.source  # run both ways by tests/labs/test_lab_claims.py (needs bucket_conf)
    ]
    assert len(cells) == 3
    namespace = {
        "check_delivery_times": check_delivery_times,
        "check_subscription_delays": check_subscription_delays,
        "check_restart_recovery": check_restart_recovery,
    }
    for shipped in cells:
        *body, last = shipped.strip().splitlines()
        exec("\n".join(body), namespace)
        assert not eval(last, namespace).answered
        solved = re.sub(r"^(answer_\d+) = \.\.\.$", lambda m: source(lab.stem, m.group(1)), shipped, flags=re.M)
        *body, last = solved.strip().splitlines()
        exec("\n".join(body), namespace)
        result = eval(last, namespace)
        assert result.ok, result.message


def test_paused_in_the_snapshot_is_the_trackers_rule_and_taking_it_changes_no_timer():
    lab = pl.Lab(version="4.0", seed=1, broker_config={"delayedDeliveryFixedDelayDetectionLookahead": 3})
    client = lab.client()
    client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(5):
        producer.send(f"m{i}".encode(), deliver_after=timedelta(seconds=3))
    tracker = lab.service.topics[lab.service.normalize("t")].subscriptions["s"].dispatcher.delayed.tracker
    timer = tracker.timer
    d = snapshot(lab).subscription().dispatcher.delayed
    assert d.paused and tracker.would_pause_all_deliveries()
    assert tracker.timer == timer  # asking re-evaluated no timer
    assert tracker.should_pause_all_deliveries()
    lab.advance(3000)
    d = snapshot(lab).subscription().dispatcher.delayed
    assert not d.paused and not tracker.would_pause_all_deliveries() and d.messages == 0
