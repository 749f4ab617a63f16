"""Delayed-delivery trackers at scale: message count x delay spread x tracker (x seed) on Spark DataFrames.

Models no Pulsar class; it runs `pulsarlab.scenarios.delayed_workload.run_tracker_workload` (one tracker alone,
docs/guide/delayed-delivery.md#in-memory-tracker, #bucket-tracker) in Spark workers. The grid is a small DataFrame of
(tracker, messages, spread_ms, seed) rows, spread over the tasks; each task runs its rows with ``mapInPandas`` and
returns their memory, stored bytes and scheduling work, so the result equals the local
`pulsarlab.scenarios.delayed_workload.sweep` row for row. Only ``mapInPandas`` and DataFrame calls are used (no RDD
API), so it also runs on Spark Connect.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import pandas as pd

from pulsarlab.scenarios.delayed_workload import RESULT_FIELDS, TRACKERS, run_tracker_workload

GRID_SCHEMA = "tracker string, messages long, spread_ms long, seed long"
RESULT_SCHEMA = (
    "tracker string, messages long, spread_ms long, seed long, memory_bytes long, index_size_bytes long, "
    "stored_bytes long, buckets long, timer_fires long, segment_loads long, snapshot_ops long, "
    "released long"
)
RESULT_COLUMNS = list(RESULT_FIELDS)


def _values(value: Any, what: str) -> tuple:
    if isinstance(value, (str, int)):
        value = (value,)
    value = tuple(value)
    if not value:
        raise ValueError(f"{what} is empty; give at least one")
    return tuple(dict.fromkeys(value))


def check_grid(messages: Any, spreads_ms: Any, trackers: Any, seeds: Any) -> list[tuple[str, int, int, int]]:
    """The grid rows (tracker, messages, spread_ms, seed), checked on the driver before any Spark job."""
    rows = []
    for n in _values(messages, "messages"):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"message counts must be ints >= 1, got {n!r}")
        for s in _values(spreads_ms, "spreads_ms"):
            if not isinstance(s, int) or isinstance(s, bool) or s < 0:
                raise ValueError(f"delay spreads must be ints >= 0 (ms), got {s!r}")
            for t in _values(trackers, "trackers"):
                if t not in TRACKERS:
                    raise ValueError(f"trackers must be among {TRACKERS}, got {t!r}")
                for seed in _values(seeds, "seeds"):
                    if not isinstance(seed, int) or isinstance(seed, bool):
                        raise ValueError(f"seeds must be ints, got {seed!r}")
                    rows.append((t, n, s, seed))
    return rows


def _parallelism(spark) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        return 2


def _run_rows(options: Mapping[str, Any]):
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            results = [
                run_tracker_workload(
                    row.tracker, int(row.messages), int(row.spread_ms), int(row.seed), **options
                ).as_dict()
                for row in batch.itertuples(index=False)
            ]
            yield pd.DataFrame(results, columns=RESULT_COLUMNS)

    return run


def delayed_sweep(
    spark,
    messages: Any = (1_000, 5_000, 20_000),
    spreads_ms: Any = (3_600_000, 86_400_000),
    trackers: Any = TRACKERS,
    seeds: Any = (0,),
    partitions: int | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Memory, stored bytes and scheduling work of each tracker for each (messages, spread, seed).

    ``options`` go to `run_tracker_workload` (``min_delay_ms``, ``entries_per_ledger``, ``release_batch``,
    ``version``, ``broker_config``). ``partitions`` (default: Spark's default parallelism) spreads the grid
    rows over tasks. Rows come back in grid order: messages, then spread, then tracker, then seed.
    """
    grid = check_grid(messages, spreads_ms, trackers, seeds)
    run_tracker_workload(grid[0][0], 1, grid[0][2], grid[0][3], **options)  # bad options fail here, not in a worker
    frame = pd.DataFrame(grid, columns=["tracker", "messages", "spread_ms", "seed"])
    source = spark.createDataFrame(frame, GRID_SCHEMA)
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1):
        raise ValueError(f"partitions must be an int >= 1, got {partitions!r}")
    source = source.repartition(partitions if partitions is not None else min(len(grid), _parallelism(spark)))
    result = source.mapInPandas(_run_rows(dict(options)), RESULT_SCHEMA).toPandas()
    order = {row: i for i, row in enumerate(grid)}
    result["_order"] = [
        order[(r.tracker, int(r.messages), int(r.spread_ms), int(r.seed))] for r in result.itertuples(index=False)
    ]
    return result.sort_values("_order").drop(columns="_order").reset_index(drop=True)[RESULT_COLUMNS]


__all__ = ["GRID_SCHEMA", "RESULT_COLUMNS", "RESULT_SCHEMA", "check_grid", "delayed_sweep"]
