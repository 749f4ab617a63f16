"""The tracker workload (pulsarlab.scenarios.delayed_workload) and its Spark sweep (pulsarlab.spark.delayed_sweep): the same
rows locally and in Spark workers, every message released, bucket memory well below the in-memory queue's, and bad
grids refused on the driver."""

from __future__ import annotations

import pandas as pd
import pytest

from pulsarlab.broker.delayed import jvm_memory as mem
from pulsarlab.scenarios.delayed_workload import RESULT_FIELDS, run_tracker_workload, sweep, workload
from pulsarlab.spark.delayed_sweep import RESULT_COLUMNS, check_grid, delayed_sweep

SMALL = dict(entries_per_ledger=500, broker_config={"delayedDeliveryMinIndexCountPerBucket": 500})


def test_the_workload_is_seeded_and_in_cursor_order():
    a = workload(1200, 60_000, 3, 1000, 500)
    b = workload(1200, 60_000, 3, 1000, 500)
    assert all((x == y).all() for x, y in zip(a, b))
    ledgers, entries, times = a
    assert ledgers.tolist()[:2] == [3, 3] and ledgers[-1] == 5 and entries[500] == 0
    assert times.min() >= 1000 and times.max() < 61_000


def test_both_trackers_release_everything_and_the_in_memory_queue_costs_its_bytes_capacity():
    for tracker in ("in-memory", "bucket"):
        result = run_tracker_workload(tracker, 3000, 3_600_000, seed=1, **SMALL)
        assert result.released == 3000
    in_memory = run_tracker_workload("in-memory", 3000, 3_600_000, seed=1, **SMALL)
    assert in_memory.memory_bytes == in_memory.index_size_bytes == mem.bytes_capacity(3000)
    assert in_memory.stored_bytes == in_memory.segment_loads == in_memory.snapshot_ops == 0


def test_buckets_trade_memory_for_stored_snapshots_and_segment_loads():
    in_memory = run_tracker_workload("in-memory", 10_000, 86_400_000, seed=2, **SMALL)
    bucket = run_tracker_workload("bucket", 10_000, 86_400_000, seed=2, **SMALL)
    assert bucket.buckets == 19  # sealed every 500 indexes when the next ledger arrives; the 20th stays mutable
    assert bucket.memory_bytes < in_memory.memory_bytes / 2
    assert bucket.stored_bytes > 0 and bucket.segment_loads > 0
    assert bucket.timer_fires == in_memory.timer_fires  # the same timer rule over the same deliverAt times


def test_a_wider_spread_means_more_segments_to_load():
    narrow = run_tracker_workload("bucket", 5000, 600_000, **SMALL)
    wide = run_tracker_workload("bucket", 5000, 86_400_000, **SMALL)
    assert wide.segment_loads > narrow.segment_loads


def test_bad_workloads_fail_clearly():
    with pytest.raises(ValueError, match="tracker must be one of"):
        run_tracker_workload("heap", 10, 10)
    with pytest.raises(ValueError, match="messages must be an int >= 1"):
        run_tracker_workload("bucket", 0, 10)
    with pytest.raises(ValueError, match="unknown broker setting"):
        run_tracker_workload("bucket", 10, 10, broker_config={"delayedDeliveryMaxNumBucket": 1})


def test_bad_grids_fail_on_the_driver():
    assert check_grid((10, 10), 5, "bucket", (0,)) == [("bucket", 10, 5, 0)]
    with pytest.raises(ValueError, match="trackers must be among"):
        check_grid(10, 5, "heap", 0)
    with pytest.raises(ValueError, match="message counts"):
        check_grid(0, 5, "bucket", 0)
    with pytest.raises(ValueError, match="spreads"):
        check_grid(10, -1, "bucket", 0)
    with pytest.raises(ValueError, match="empty"):
        check_grid((), 5, "bucket", 0)


@pytest.mark.spark
def test_the_spark_sweep_equals_the_local_sweep(spark):
    grid = dict(messages=(500, 2000), spreads_ms=(600_000, 86_400_000), seeds=(0, 1))
    result = delayed_sweep(spark, partitions=3, **grid, **SMALL)
    assert list(result.columns) == RESULT_COLUMNS == list(RESULT_FIELDS)
    local = pd.DataFrame([r.as_dict() for r in sweep(**grid, **SMALL)], columns=RESULT_COLUMNS)
    pd.testing.assert_frame_equal(result, local, check_dtype=False)
    assert (result.released == result.messages).all()


@pytest.mark.spark
def test_the_spark_sweep_refuses_bad_options_before_running(spark):
    with pytest.raises(ValueError, match="unknown broker setting"):
        delayed_sweep(spark, messages=10, broker_config={"nope": 1})
    with pytest.raises(ValueError, match="partitions"):
        delayed_sweep(spark, messages=10, partitions=0)
