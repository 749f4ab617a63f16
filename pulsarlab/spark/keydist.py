"""Key distribution at scale: keys x selectors x consumer counts on Spark DataFrames.

Models no Pulsar class; it runs `pulsarlab.scenarios.distribution` in Spark workers. Each partition
hashes its keys once with mmh3 (never Spark's ``hash()``, which is not Pulsar's Murmur3), counts them
for every (version, selector, consumers) with the model's vectorised pieces, and emits integer partial
counts; Spark sums them and the driver turns the sums into metrics with the same code as
`distribution_metrics`, so the results are equal. Only ``mapInPandas`` and DataFrame aggregation are
used (no RDD API), so the pipeline also runs on Spark Connect. Generated keys ("key-0", "key-1", ...)
are made inside the workers from a tiny DataFrame of slice numbers instead of being shipped as strings.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from pulsarlab.scenarios.distribution import (
    MAX_CONSUMERS,
    DistributionAccumulator,
    DistributionCounts,
    MembershipPlan,
    build_plan,
    check_count,
    check_kind,
    check_version,
    sequential_keys,
)

RESULT_COLUMNS = [
    "selector",
    "version",
    "consumers",
    "imbalance",
    "moved_on_join",
    "moved_on_leave",
    "keys_per_consumer",
    "total_keys",
]
COUNTS_SCHEMA = "selector string, version string, consumers int, item string, count long"
CHUNK_KEYS = 1 << 18  # keys generated, hashed and counted at a time inside a worker
# Generated keys: n_keys is cut into equal slices of about SLICE_KEYS, one row each in a small
# spark.range; Spark spreads the rows over its default parallelism (one task per core, as each Python
# task costs ~0.1 s beyond its keys), and a task turns each run of consecutive slices into key chunks.
SLICE_KEYS = 1 << 16
# counter names besides the consumer names c1..cN (which never start with '#')
UNASSIGNED, MOVED_ON_JOIN, MOVED_ON_LEAVE = "#unassigned", "#moved_on_join", "#moved_on_leave"
TOTAL = "#total"

Config = tuple[str, str, int]  # (version, selector, consumers)


def _as_tuple(value: Any, what: str) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        value = (value,)
    value = tuple(value)
    if not value:
        raise ValueError(f"{what} is empty; give at least one")
    return value


def check_configs(selectors: Any, consumer_counts: Any, version: Any, points: Any) -> tuple[list[Config], int]:
    """Every (version, selector, consumers) to compute, validated on the driver before any Spark job."""
    # checked, then repeats dropped (order kept): a config counted twice would be summed twice
    versions = dict.fromkeys(check_version(v) for v in _as_tuple(version, "version"))
    kinds = dict.fromkeys(check_kind(k) for k in _as_tuple(selectors, "selectors"))
    counts = dict.fromkeys(
        check_count(n, "consumer count", 1, MAX_CONSUMERS) for n in _as_tuple(consumer_counts, "consumer_counts")
    )
    points = check_count(points, "points")
    return [(v, k, n) for v in versions for k in kinds for n in counts], points


@functools.lru_cache(maxsize=512)
def cached_plan(kind: str, n_consumers: int, version: str, points: int) -> MembershipPlan:
    """`build_plan`, kept per process: Spark reuses Python workers, so later tasks skip the set-up."""
    return build_plan(kind, n_consumers, version, points)


def _counts_frame(all_counts: Sequence[DistributionCounts]) -> pd.DataFrame:
    """Partial counts in long form: one row per (config, counter)."""
    rows = []
    for c in all_counts:
        head = (c.selector, c.version, c.consumers)
        rows.extend((*head, f"c{i}", int(n)) for i, n in enumerate(c.keys_per_consumer, start=1))
        rows.append((*head, UNASSIGNED, c.unassigned))
        rows.append((*head, MOVED_ON_JOIN, c.moved_on_join))
        rows.append((*head, MOVED_ON_LEAVE, c.moved_on_leave))
        rows.append((*head, TOTAL, c.total_keys))
    frame = pd.DataFrame(rows, columns=["selector", "version", "consumers", "item", "count"])
    return frame.astype({"consumers": "int32", "count": "int64"})


def _count_partition(
    configs: list[Config], points: int, key_chunks: Callable[[pd.DataFrame], Iterator[Sequence]]
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The mapInPandas function: build the plans once per partition, count every chunk, emit the sums."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        accumulator = DistributionAccumulator(cached_plan(k, n, v, points) for v, k, n in configs)
        for batch in batches:
            for keys in key_chunks(batch):
                accumulator.add_keys(keys)
        yield _counts_frame(accumulator.counts())

    return run


def slice_runs(slice_numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Runs of consecutive slice numbers as half-open pairs: [4, 5, 6, 9] -> [(4, 7), (9, 10)]."""
    runs: list[tuple[int, int]] = []
    for number in sorted(slice_numbers):
        if runs and runs[-1][1] == number:
            runs[-1] = (runs[-1][0], number + 1)
        else:
            runs.append((number, number + 1))
    return runs


def _generated_chunks(n_keys: int, slices: int) -> Callable[[pd.DataFrame], Iterator[list[str]]]:
    def chunks(batch: pd.DataFrame) -> Iterator[list[str]]:
        for first, stop_slice in slice_runs(batch["id"].tolist()):
            start, stop = first * n_keys // slices, stop_slice * n_keys // slices
            for lo in range(start, stop, CHUNK_KEYS):
                yield sequential_keys(lo, min(lo + CHUNK_KEYS, stop))

    return chunks


def _column_chunks(key_column: str) -> Callable[[pd.DataFrame], Iterator[list]]:
    def chunks(batch: pd.DataFrame) -> Iterator[list]:
        keys = batch[key_column]
        if keys.isna().any():
            raise ValueError(f"key column {key_column!r} contains nulls; every key must be a string or bytes")
        yield keys.tolist()

    return chunks


def _key_source(spark, n_keys, keys_df, key_column: str, partitions):
    """(DataFrame fed to mapInPandas, chunk function) for generated or given keys."""
    if (n_keys is None) == (keys_df is None):
        raise ValueError("give exactly one of n_keys (generate 'key-<i>' keys) or keys_df (a DataFrame of keys)")
    if partitions is not None:
        partitions = check_count(partitions, "partitions")
    if keys_df is not None:
        if not isinstance(key_column, str) or key_column not in keys_df.columns:
            raise ValueError(f"keys_df has no column {key_column!r}; its columns are {keys_df.columns}")
        data_type = keys_df.schema[key_column].dataType.typeName()
        if data_type not in ("string", "binary"):
            raise TypeError(f"key column {key_column!r} must be string or binary, not {data_type}")
        source = keys_df.select(key_column)
        if partitions is not None:
            source = source.repartition(partitions)
        return source, _column_chunks(key_column)
    n_keys = check_count(n_keys, "n_keys")
    slices = min(n_keys, max(-(-n_keys // SLICE_KEYS), partitions or 1))
    if partitions is None:
        # Spark's default parallelism (on Connect too), but no more partitions than slices
        source = spark.range(0, slices).coalesce(slices)
    else:
        source = spark.range(0, slices, 1, partitions)
    return source, _generated_chunks(n_keys, slices)


def key_distribution(
    spark,
    n_keys: int | None = None,
    selectors: Sequence[str] = ("auto_split", "consistent_hashing", "sticky"),
    consumer_counts: Sequence[int] = (2, 4, 8),
    version: str | Sequence[str] = "4.0",
    keys_df=None,
    key_column: str = "key",
    points: int = 100,
    partitions: int | None = None,
) -> pd.DataFrame:
    """Keys per consumer, imbalance, and keys moved on join/leave, per (selector, version, consumers).

    Keys are either ``n_keys`` generated keys ``"key-0" .. "key-<n_keys-1>"`` or the string/binary
    ``key_column`` of ``keys_df``. ``version`` may be one profile name or several. ``partitions`` sets
    how many Spark tasks share the generated keys (default: Spark's default parallelism, one per core
    locally), or repartitions ``keys_df``. Each row equals `distribution_metrics` on the same keys
    (see that function for the metric definitions). Columns: selector, version, consumers,
    imbalance, moved_on_join, moved_on_leave, keys_per_consumer ({"c1": count, ...}), total_keys.
    """
    configs, points = check_configs(selectors, consumer_counts, version, points)
    for v, k, n in configs:  # fail on the driver, not in a worker, if a selector cannot be built
        cached_plan(k, n, v, points)
    source, key_chunks = _key_source(spark, n_keys, keys_df, key_column, partitions)

    partial = source.mapInPandas(_count_partition(configs, points, key_chunks), COUNTS_SCHEMA).toPandas()
    sums = partial.groupby(["selector", "version", "consumers", "item"], as_index=False)["count"].sum()
    return _metrics_frame(configs, sums)


def _metrics_frame(configs: list[Config], sums: pd.DataFrame) -> pd.DataFrame:
    """The result rows, in config order, from the summed long-form counts."""
    totals = {
        (row.selector, row.version, int(row.consumers), row.item): int(row.count)
        for row in sums.itertuples(index=False)
    }
    rows = []
    for v, k, n in configs:
        counts = DistributionCounts(
            k,
            v,
            n,
            np.array([totals.get((k, v, n, f"c{i}"), 0) for i in range(1, n + 1)], dtype=np.int64),
            totals.get((k, v, n, UNASSIGNED), 0),
            totals.get((k, v, n, MOVED_ON_JOIN), 0),
            totals.get((k, v, n, MOVED_ON_LEAVE), 0),
            totals.get((k, v, n, TOTAL), 0),
        )
        if counts.total_keys == 0:
            raise ValueError("no keys to count: keys_df is empty")
        metrics = counts.metrics()
        rows.append({column: metrics[column] for column in RESULT_COLUMNS})
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)
