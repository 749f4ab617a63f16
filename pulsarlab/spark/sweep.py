"""Scenario sweeps on Spark: every grid row of a scenario spec runs the whole model in a Spark worker; the event logs
land as a Parquet dataset and Spark SQL turns them into a per-run metrics table.

Models no Pulsar class. ``sweep(spark, spec, out)``:

1. checks the spec on the driver (`pulsarlab.scenarios.spec.load_spec`: unknown fields, bad values) and refuses
   an ``out`` that already holds a sweep unless ``overwrite``;
2. spreads the grid rows over Spark tasks; each task runs its rows with `pulsarlab.scenarios.run.run_row` inside
   ``mapInArrow`` (the Arrow-batch form of ``mapInPandas``; no RDD API, so it also runs on Spark Connect) and
   streams each run's event log as Arrow record batches built straight from the log's numpy columns
   (`EventLog.columns`: no Python object per event) into Parquet files (pyarrow: zstd, v2 pages, delta-encoded
   seq/time, dictionary-encoded kinds and fields); only one small row per run goes back through Spark;
3. the files form ``out/events/``, partitioned by ``scenario`` and ``version`` (one file per task and partition,
   rows in run then sequence-number order; a file appears, by rename, only once complete);
4. computes the metrics of `pulsarlab.scenarios.sweep_metrics` with Spark SQL over ``out/events/`` (`METRICS_SQL`),
   joins them to the grid rows and writes ``out/metrics/`` (Parquet, one row per run); returns them as pandas.

The event dataset (``out/events/scenario=<name>/version=<profile>/part-*.parquet``), one row per event:

=========  ============  ===============================================================================
column     type          meaning
=========  ============  ===============================================================================
scenario   string        the spec's ``name`` (partition column)
version    string        the Pulsar version profile of the run (partition column)
run        int32         the run's grid row number (``out/metrics/`` has its parameters)
seq        int32         the event's sequence number in the run's log (null on ``string`` rows)
time       int64         virtual time of the event, ms (null on ``string`` rows)
kind       string        event type name (`pulsarlab.events` catalogue, plus ``app_received`` and ``string``)
f0 .. f5   int64         the event type's fields in declaration order (``EventType.fields``): ints as they are,
                         bools as 0/1, str and json fields as ids into the run's ``string`` rows; null when the
                         event has no such field or left it unset
text       string        only on ``kind = 'string'`` rows: the text whose id is ``f0`` (null elsewhere)
=========  ============  ===============================================================================

`field_columns(kind)` maps field names to f0..f5 for one kind; `events_view` gives a DataFrame of one kind with its
fields named (str fields decoded). About 3.5-4.5 bytes per event on disk (``bench/scenarios.py``).

Simplifications: the tasks write the event files themselves (pyarrow) rather than through Spark's writer, which
turned every event into a JVM row and cost more than the model run (bench/scenarios.py); so ``out`` must be a local
path every executor and the driver share (one machine, or NFS). Each task returns the files it wrote; once the job
is done the driver deletes any other part file (from a task attempt Spark retried or speculated), so every run is
in the dataset once. Workers need the same pulsarlab installed (see the README).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pulsarlab.events import MAX_FIELDS, NONE_VALUE, get_event_type
from pulsarlab.scenarios.spec import ROW_FIELDS, GridRow, ScenarioSpec, load_spec
from pulsarlab.scenarios.sweep_metrics import METRIC_COLUMNS, ORDERING_REASONS

FIELD_COLUMNS = [f"f{i}" for i in range(MAX_FIELDS)]
FILE_COLUMNS = ["run", "seq", "time", "kind", *FIELD_COLUMNS, "text"]  # in each Parquet file
EVENT_COLUMNS = [*FILE_COLUMNS, "scenario", "version"]  # read back: the partition columns last
FILE_SCHEMA = pa.schema(
    [
        ("run", pa.int32()),
        ("seq", pa.int32()),
        ("time", pa.int64()),
        ("kind", pa.string()),
        *((c, pa.int64()) for c in FIELD_COLUMNS),
        ("text", pa.string()),
    ]
)
EVENTS_SCHEMA = (
    "run int, seq int, time long, kind string, "
    + ", ".join(f"{c} long" for c in FIELD_COLUMNS)
    + ", text string, scenario string, version string"
)
RUNS_SCHEMA = "scenario string, version string, run int, rows long, file string"
ROW_GROUP_EVENTS = 1 << 20  # events buffered per file before a row group is written
GRID_SCHEMA = "run int, row string"
STRING_KIND = "string"
BATCH_EVENTS = 1 << 17  # events per Arrow record batch out of a worker
RUN_KEYS = ("scenario", "version", "run")
# the event kinds `metrics_sql` reads
METRIC_KINDS = (
    "message_published",
    "dead_lettered",
    "app_received",
    "entry_persisted",
    "mark_delete_moved",
    "individually_deleted",
    "hash_blocked",
    "dispatched",
    STRING_KIND,
)
# the event files (pyarrow, in the tasks): zstd, v2 pages; run sequence number and time delta-encoded (they grow by
# small steps), the field columns and kinds dictionary-encoded (few distinct values per page)
PARQUET_FILE_OPTIONS = dict(
    compression="zstd",
    data_page_version="2.0",
    use_dictionary=["run", "kind", "text", *FIELD_COLUMNS],
    column_encoding={"seq": "DELTA_BINARY_PACKED", "time": "DELTA_BINARY_PACKED"},
)
# the metrics table (Spark's writer)
PARQUET_OPTIONS = {"compression": "zstd"}


class SweepOutputExists(FileExistsError):
    """``out`` already holds a sweep and ``overwrite`` was not given."""


def field_columns(kind: str) -> dict[str, str]:
    """Field name -> the column (f0..f5) that holds it, for event type ``kind``."""
    return {name: FIELD_COLUMNS[i] for i, (name, _t) in enumerate(get_event_type(kind).fields)}


# ----------------------------------------------------------------------------------------------- worker side


def _constant(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())


def _nullable(values: np.ndarray) -> pa.Array:
    missing = values == NONE_VALUE
    return pa.array(values, type=pa.int64(), mask=missing if missing.any() else None)


def run_batches(row: GridRow) -> Iterator[pa.RecordBatch]:
    """Run one grid row and yield its event log as record batches of `FILE_COLUMNS` (the string table last)."""
    from pulsarlab.scenarios.run import run_row

    cols = run_row(row).events.columns()
    names = pa.array(list(cols.kind_names), type=pa.string())
    n = len(cols)
    for start in range(0, n, BATCH_EVENTS):
        stop = min(n, start + BATCH_EVENTS)
        m = stop - start
        kinds = pa.DictionaryArray.from_arrays(pa.array(cols.kind[start:stop].astype(np.int32)), names)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(m, row.run, dtype=np.int32)),
                pa.array(np.arange(start, stop, dtype=np.int32)),
                pa.array(cols.time[start:stop]),
                kinds.cast(pa.string()),
                *(_nullable(f[start:stop]) for f in cols.fields),
                pa.nulls(m, pa.string()),
            ],
            names=FILE_COLUMNS,
        )
    k = len(cols.strings)
    if k:
        nothing = pa.nulls(k, pa.int64())
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(k, row.run, dtype=np.int32)),
                pa.nulls(k, pa.int32()),
                nothing,
                _constant(STRING_KIND, k),
                pa.array(np.arange(k, dtype=np.int64)),
                *([nothing] * (MAX_FIELDS - 1)),
                pa.array(list(cols.strings), type=pa.string()),
            ],
            names=FILE_COLUMNS,
        )


def row_from_json(text: str) -> GridRow:
    data = json.loads(text)
    data["broker_config"] = json.loads(data["broker_config"])
    return GridRow(**data)


class _DatasetWriter:
    """The Parquet files one task writes: one per (scenario, version) it ran, rows in run then seq order.

    Each file is written under a hidden name (``.part-<uuid>.parquet``, which readers skip) and renamed into place
    when the task's last run is in, so a file either is complete or is not there.
    """

    def __init__(self, events_dir: str) -> None:
        self.events_dir = Path(events_dir)
        self.open: dict[tuple[str, str], tuple[Any, Path, Path, list]] = {}

    def write(self, row: GridRow, batch: pa.RecordBatch) -> None:
        key = (row.scenario, row.version)
        if key not in self.open:
            folder = self.events_dir / f"scenario={row.scenario}" / f"version={row.version}"
            folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{uuid.uuid4().hex}.parquet"
            hidden = folder / f".{name}"
            writer = pq.ParquetWriter(hidden, FILE_SCHEMA, **PARQUET_FILE_OPTIONS)
            self.open[key] = (writer, hidden, folder / name, [])
        writer, _hidden, _final, pending = self.open[key]
        pending.append(batch)
        if sum(b.num_rows for b in pending) >= ROW_GROUP_EVENTS:
            self._flush(key)

    def _flush(self, key: tuple[str, str]) -> None:
        writer, _hidden, _final, pending = self.open[key]
        if pending:
            writer.write_table(pa.Table.from_batches(pending, schema=FILE_SCHEMA))
            pending.clear()

    def close(self) -> dict[tuple[str, str], str]:
        """Finish every file; returns (scenario, version) -> the file's path."""
        done = {}
        for key, (writer, hidden, final, _pending) in self.open.items():
            self._flush(key)
            writer.close()
            hidden.rename(final)
            done[key] = str(final)
        self.open.clear()
        return done

    def abandon(self) -> None:
        for writer, hidden, _final, _pending in self.open.values():
            try:
                writer.close()
            finally:
                hidden.unlink(missing_ok=True)
        self.open.clear()


def _write_grid(events_dir: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer = _DatasetWriter(events_dir)
        done: list[tuple[str, str, int, int]] = []
        try:
            for batch in batches:
                for text in batch.column("row").to_pylist():
                    row = row_from_json(text)
                    events = 0
                    for out in run_batches(row):
                        writer.write(row, out)
                        events += out.num_rows
                    done.append((row.scenario, row.version, row.run, events))
            files = writer.close()
        except BaseException:
            writer.abandon()
            raise
        if done:
            scenarios, versions, runs, counts = zip(*done)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(scenarios, pa.string()),
                    pa.array(versions, pa.string()),
                    pa.array(runs, pa.int32()),
                    pa.array(counts, pa.int64()),
                    pa.array([files[(sc, v)] for sc, v in zip(scenarios, versions)], pa.string()),
                ],
                names=["scenario", "version", "run", "rows", "file"],
            )

    return run


# ----------------------------------------------------------------------------------------------- metrics in SQL


def _f(kind: str, name: str) -> str:
    return field_columns(kind)[name]


def metrics_sql(events_view: str = "sweep_events", all_events: str | None = None) -> str:
    """Spark SQL computing `pulsarlab.scenarios.sweep_metrics.METRIC_COLUMNS` per run over the event dataset.

    ``events_view`` needs only the kinds in `METRIC_KINDS`; ``all_events`` (default: the same view) is read for
    the time of each run's last event.
    """
    all_events = all_events or events_view
    k = "scenario, version, run"
    pos = "* 4294967296 + "
    app = {n: _f("app_received", n) for n in ("msg", "key", "redelivery_count", "action")}
    reasons = ", ".join(f"'{r}'" for r in ORDERING_REASONS)
    f_ep = {n: _f("entry_persisted", n) for n in ("topic", "ledger", "entry")}
    f_md = {n: _f("mark_delete_moved", n) for n in ("cursor", "to_ledger", "to_entry")}
    f_id = {n: _f("individually_deleted", n) for n in ("cursor", "ledger", "entry")}
    f_hb = {n: _f("hash_blocked", n) for n in ("ledger", "entry", "reason")}
    f_dp = {n: _f("dispatched", n) for n in ("ledger", "entry")}
    # "the nearest following row's value": LAST(x, TRUE) over a running frame in reverse order (Spark evaluates a
    # running frame incrementally; a CURRENT ROW .. UNBOUNDED FOLLOWING frame is recomputed row by row, quadratic)
    running = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    return f"""
WITH ev AS (SELECT * FROM {events_view}),
base AS (
  SELECT {k}, SUM(IF(kind = 'message_published', 1, 0)) AS published,
         SUM(IF(kind = 'dead_lettered', 1, 0)) AS dead_lettered, MAX(time) AS end_ms
  FROM {all_events} WHERE kind <> '{STRING_KIND}' GROUP BY {k}),
app AS (
  SELECT {k}, seq, {app["msg"]} AS msg, {app["key"]} AS key, {app["redelivery_count"]} AS rc,
         {app["action"]} AS action
  FROM ev WHERE kind = 'app_received'),
app_m AS (
  SELECT {k}, COUNT(*) AS received, SUM(IF(action = 0, 1, 0)) AS acked, SUM(IF(action = 1, 1, 0)) AS nacked,
         SUM(IF(action = 2, 1, 0)) AS crashed, COUNT(*) - COUNT(DISTINCT msg) AS duplicates,
         SUM(IF(rc > 0, 1, 0)) AS redeliveries
  FROM app GROUP BY {k}),
ooo AS (
  SELECT {k}, SUM(IF(msg < prev_max, 1, 0)) AS out_of_order FROM (
    SELECT {k}, msg, MAX(msg) OVER (PARTITION BY {k}, key ORDER BY seq
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max
    FROM app) GROUP BY {k}),
persisted AS (
  SELECT {k}, {f_ep["topic"]} AS topic, {f_ep["ledger"]} AS ledger, {f_ep["ledger"]} {pos} {f_ep["entry"]} AS pos,
         time
  FROM ev WHERE kind = 'entry_persisted'),
marks AS (
  SELECT {k}, seq, time, {f_md["cursor"]} AS cursor, {f_md["to_ledger"]} AS ledger, {f_md["to_entry"]} AS entry,
         {f_md["to_ledger"]} {pos} {f_md["to_entry"]} AS pos
  FROM ev WHERE kind = 'mark_delete_moved'),
cursor_topic AS (
  SELECT {k}, cursor, MIN(topic) AS topic FROM (
    SELECT DISTINCT m.scenario, m.version, m.run, m.cursor, p.topic
    FROM marks m JOIN (SELECT DISTINCT {k}, ledger, topic FROM persisted) p
      ON m.scenario = p.scenario AND m.version = p.version AND m.run = p.run AND m.ledger = p.ledger
    WHERE m.entry >= 0)
  GROUP BY {k}, cursor HAVING COUNT(*) = 1),
coverage AS (
  SELECT {k}, pos, ptime,
         LAST(mtime, TRUE) OVER (PARTITION BY {k}, cursor ORDER BY pos DESC, is_mark DESC {running}) AS mtime, is_mark
  FROM (
    SELECT p.scenario, p.version, p.run, c.cursor, p.pos, 0 AS is_mark, p.time AS ptime, CAST(NULL AS BIGINT) AS mtime
    FROM persisted p JOIN cursor_topic c
      ON p.scenario = c.scenario AND p.version = c.version AND p.run = c.run AND p.topic = c.topic
    UNION ALL
    SELECT {k}, cursor, pos, 1, NULL, time FROM marks)),
lags AS (
  SELECT {k}, mtime - ptime AS lag FROM coverage WHERE is_mark = 0 AND mtime IS NOT NULL),
lag_ranked AS (
  SELECT {k}, lag, ROW_NUMBER() OVER (PARTITION BY {k} ORDER BY lag) AS rn, COUNT(*) OVER (PARTITION BY {k}) AS n
  FROM lags),
lag_m AS (
  SELECT {k}, MAX(n) AS md_covered_entries,
         MAX(IF(rn = GREATEST(1, (50 * n + 99) DIV 100), lag, NULL)) AS md_lag_ms_p50,
         MAX(IF(rn = GREATEST(1, (90 * n + 99) DIV 100), lag, NULL)) AS md_lag_ms_p90,
         MAX(IF(rn = GREATEST(1, (99 * n + 99) DIV 100), lag, NULL)) AS md_lag_ms_p99,
         MAX(lag) AS md_lag_ms_max
  FROM lag_ranked GROUP BY {k}),
dels AS (
  SELECT {k}, {f_id["cursor"]} AS cursor, {f_id["entry"]} AS entry, {f_id["ledger"]} {pos} {f_id["entry"]} AS pos,
         MIN(seq) AS a
  FROM ev WHERE kind = 'individually_deleted' GROUP BY {k}, {f_id["cursor"]}, {f_id["ledger"]}, {f_id["entry"]}),
del_cover AS (
  SELECT * FROM (
    SELECT {k}, cursor, pos, entry, a, is_mark,
           LAST(mseq, TRUE) OVER (PARTITION BY {k}, cursor ORDER BY pos DESC, is_mark DESC {running}) AS m
    FROM (
      SELECT {k}, cursor, pos, entry, a, 0 AS is_mark, CAST(NULL AS BIGINT) AS mseq FROM dels
      UNION ALL
      SELECT {k}, cursor, pos, NULL, NULL, 1, seq FROM marks))
  WHERE is_mark = 0),
starts AS (
  SELECT x.scenario, x.version, x.run, x.cursor, x.a AS xa, COALESCE(x.m, 9223372036854775807) AS xm,
         IF(p.a IS NOT NULL AND p.a < COALESCE(p.m, 9223372036854775807), p.a, NULL) AS pa,
         COALESCE(p.m, 9223372036854775807) AS pm
  FROM del_cover x LEFT JOIN del_cover p
    ON x.scenario = p.scenario AND x.version = p.version AND x.run = p.run AND x.cursor = p.cursor
       AND x.entry >= 1 AND p.pos = x.pos - 1),
pieces AS (
  SELECT {k}, cursor, iv.s, iv.e FROM starts
  LATERAL VIEW INLINE(ARRAY(
    NAMED_STRUCT('s', IF(pa IS NULL, xa, NULL), 'e', xm),
    NAMED_STRUCT('s', IF(pa IS NOT NULL, xa, NULL), 'e', LEAST(xm, COALESCE(pa, xm))),
    NAMED_STRUCT('s', IF(pa IS NOT NULL, GREATEST(xa, pm), NULL), 'e', xm))) iv
  WHERE iv.s IS NOT NULL AND iv.s < iv.e),
deltas AS (
  SELECT {k}, cursor, d.seq, SUM(d.d) AS d FROM pieces
  LATERAL VIEW INLINE(ARRAY(NAMED_STRUCT('seq', s, 'd', 1), NAMED_STRUCT('seq', e, 'd', -1))) d
  WHERE d.seq < 9223372036854775807
  GROUP BY {k}, cursor, d.seq),
holes AS (
  SELECT {k}, MAX(held) AS max_ack_holes FROM (
    SELECT {k}, SUM(d) OVER (PARTITION BY {k}, cursor ORDER BY seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS held
    FROM deltas)
  GROUP BY {k}),
reasons AS (
  SELECT {k}, f0 AS id FROM ev WHERE kind = '{STRING_KIND}' AND text IN ({reasons})),
blocks AS (
  SELECT {k}, seq, time, ledger, entry, is_d,
         LAST(dseq, TRUE) OVER (PARTITION BY {k}, ledger, entry ORDER BY seq DESC {running}) AS end_seq,
         LAST(dtime, TRUE) OVER (PARTITION BY {k}, ledger, entry ORDER BY seq DESC {running}) AS end_time
  FROM (
    SELECT e.scenario, e.version, e.run, e.seq, e.time, e.{f_hb["ledger"]} AS ledger, e.{f_hb["entry"]} AS entry,
           0 AS is_d, CAST(NULL AS INT) AS dseq, CAST(NULL AS BIGINT) AS dtime
    FROM ev e JOIN reasons r
      ON e.scenario = r.scenario AND e.version = r.version AND e.run = r.run AND e.{f_hb["reason"]} = r.id
    WHERE e.kind = 'hash_blocked'
    UNION ALL
    SELECT {k}, seq, time, {f_dp["ledger"]}, {f_dp["entry"]}, 1, seq, time FROM ev WHERE kind = 'dispatched')),
episodes AS (
  SELECT b.scenario, b.version, b.run, COALESCE(MAX(b.end_time), MAX(base.end_ms)) - MIN(b.time) AS ms
  FROM blocks b JOIN base ON b.scenario = base.scenario AND b.version = base.version AND b.run = base.run
  WHERE b.is_d = 0
  GROUP BY b.scenario, b.version, b.run, b.ledger, b.entry, b.end_seq),
blocked AS (
  SELECT {k}, COUNT(*) AS blocked_hash_episodes, SUM(ms) AS blocked_hash_ms_total, MAX(ms) AS blocked_hash_ms_max
  FROM episodes GROUP BY {k})
SELECT base.scenario, base.version, base.run,
       base.published, COALESCE(app_m.received, 0) AS received, COALESCE(app_m.acked, 0) AS acked,
       COALESCE(app_m.nacked, 0) AS nacked, COALESCE(app_m.crashed, 0) AS crashed, base.dead_lettered,
       COALESCE(app_m.duplicates, 0) AS duplicates, COALESCE(app_m.redeliveries, 0) AS redeliveries,
       COALESCE(ooo.out_of_order, 0) AS out_of_order, COALESCE(holes.max_ack_holes, 0) AS max_ack_holes,
       COALESCE(lag_m.md_covered_entries, 0) AS md_covered_entries, lag_m.md_lag_ms_p50, lag_m.md_lag_ms_p90,
       lag_m.md_lag_ms_p99, lag_m.md_lag_ms_max,
       COALESCE(blocked.blocked_hash_episodes, 0) AS blocked_hash_episodes,
       COALESCE(blocked.blocked_hash_ms_total, 0) AS blocked_hash_ms_total, blocked.blocked_hash_ms_max,
       base.end_ms
FROM base
LEFT JOIN app_m USING (scenario, version, run)
LEFT JOIN ooo USING (scenario, version, run)
LEFT JOIN lag_m USING (scenario, version, run)
LEFT JOIN holes USING (scenario, version, run)
LEFT JOIN blocked USING (scenario, version, run)
"""


# ----------------------------------------------------------------------------------------------- progress


class _Progress:
    """A one-line text progress bar of the run stage's tasks (stderr; a notebook shows it as stream output)."""

    def __init__(self, total_runs: int, tasks: int, enabled: bool, out: Any = None) -> None:
        import sys

        self.total_runs, self.tasks, self.enabled = total_runs, tasks, enabled
        self.out = out if out is not None else sys.stderr
        self.last = -1
        self.started = time.perf_counter()

    def show(self, done_tasks: int, final: bool = False) -> None:
        if not self.enabled:
            return
        done_tasks = min(done_tasks, self.tasks)
        if done_tasks == self.last and not final:
            return
        self.last = done_tasks
        width = 30
        filled = width * done_tasks // max(1, self.tasks)
        elapsed = time.perf_counter() - self.started
        self.out.write(
            f"\rsweep [{'#' * filled}{'.' * (width - filled)}] {done_tasks}/{self.tasks} tasks "
            f"({self.total_runs} runs) {elapsed:5.1f} s"
        )
        if final:
            self.out.write("\n")
        self.out.flush()


def _watch(spark, progress: _Progress) -> Callable[[], None]:
    """Start reporting the running job's completed tasks; returns the function that stops it."""
    if not progress.enabled:
        return lambda: None
    try:
        tracker = spark.sparkContext.statusTracker()
    except Exception:  # Spark Connect: the server reports stage progress to a handler
        register = getattr(spark, "registerProgressHandler", None)
        if register is None:
            return lambda: None

        def handler(stages, inflight_tasks, operation_id, done) -> None:
            stages = list(stages or ())
            if stages:
                widest = max(stages, key=lambda s: s.num_tasks)
                if widest.num_tasks == progress.tasks:
                    progress.show(widest.num_completed_tasks)

        register(handler)
        return lambda: spark.removeProgressHandler(handler)
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None and info.numTasks == progress.tasks:
                    progress.show(info.numCompletedTasks)

    thread = threading.Thread(target=poll, name="pulsarlab-sweep-progress", daemon=True)
    thread.start()

    def done() -> None:
        stop.set()
        thread.join(timeout=5)

    return done


# ----------------------------------------------------------------------------------------------- driver side


def _parallelism(spark) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        try:
            return max(1, int(spark.conf.get("spark.default.parallelism")))
        except Exception:
            return 2


def check_out(out: str | Path, overwrite: bool) -> list[str]:
    """The sweep folders already in ``out`` (to replace); SweepOutputExists if there are some and not ``overwrite``."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise SweepOutputExists(f"{str(path)!r} is a file, not a folder for a sweep")
    taken = [p for p in ("events", "metrics") if (path / p).exists()]
    if taken and not overwrite:
        raise SweepOutputExists(
            f"{str(path)!r} already holds a sweep ({', '.join(p + '/' for p in taken)}); pass "
            f"overwrite=True (--overwrite) or choose another folder"
        )
    return taken


def _prepare_out(out: str | Path, overwrite: bool) -> Path:
    path = Path(out)
    taken = check_out(path, overwrite)
    for p in taken:
        shutil.rmtree(path / p)
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_specs(specs: Any) -> list[ScenarioSpec]:
    """One spec or a list of them, each checked (`load_spec`); scenario names must differ."""
    items = list(specs) if isinstance(specs, (list, tuple)) else [specs]
    if not items:
        raise ValueError("no scenario spec given")
    loaded = [load_spec(s) for s in items]
    names = [s.name for s in loaded]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names must differ within one sweep (they name its partitions): {names}")
    return loaded


def grid_frame(specs: Any) -> pd.DataFrame:
    """The grid rows of one or more specs as a pandas frame (one column per `GridRow` field; broker_config as
    JSON text)."""
    return pd.DataFrame([r.as_dict() for spec in load_specs(specs) for r in spec.rows()], columns=ROW_FIELDS)


def run_events(spark, specs: Any, events_dir: str | Path, partitions: int | None = None):
    """The Spark job that runs the specs' grids and writes ``events_dir`` (lazy: `write_events` runs it), and
    its task count. Each row of the job's result is one run: scenario, version, run, rows written."""
    rows = [r for spec in load_specs(specs) for r in spec.rows()]
    tasks = partitions if partitions is not None else min(len(rows), 4 * _parallelism(spark))
    if not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1:
        raise ValueError(f"partitions must be an int >= 1, got {partitions!r}")
    grid = pd.DataFrame({"run": [r.run for r in rows], "row": [json.dumps(r.as_dict()) for r in rows]})
    source = spark.createDataFrame(grid, GRID_SCHEMA).repartition(tasks)
    return source.mapInArrow(_write_grid(str(Path(events_dir).resolve())), RUNS_SCHEMA), tasks


def sweep(
    spark, specs: Any, out: str | Path, *, overwrite: bool = False, partitions: int | None = None, progress: bool = True
) -> pd.DataFrame:
    """Run every grid row of ``specs`` on Spark; write ``out/events/`` and ``out/metrics/``; return the metrics.

    ``specs`` is one spec or a list of them (scenarios with different names, run in one Spark job, metrics in one
    query); each a `ScenarioSpec`, a mapping or a .json/.yaml file, all checked before any Spark job.
    ``partitions`` sets the number of tasks the runs are spread over (default: 4 per core of the session).
    ``progress`` prints a text progress bar of the tasks to stderr. The metrics frame has one row per run: the grid
    row's fields (`pulsarlab.scenarios.spec.ROW_FIELDS`) then `pulsarlab.scenarios.sweep_metrics.METRIC_COLUMNS`,
    in scenario then run order.
    """
    specs = load_specs(specs)
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1):
        raise ValueError(f"partitions must be an int >= 1, got {partitions!r}")
    path = _prepare_out(out, overwrite)
    job, tasks = run_events(spark, specs, path / "events", partitions)
    bar = _Progress(sum(len(s) for s in specs), tasks, progress)
    bar.show(0)
    stop = _watch(spark, bar)
    try:
        written = write_events(job)
    finally:
        stop()
    if len(written) != bar.total_runs or written.duplicated(["scenario", "run"]).any():
        raise RuntimeError(f"the sweep wrote {len(written)} runs for {bar.total_runs} grid rows")
    drop_unlisted(path / "events", written.file)
    bar.show(tasks, final=True)
    metrics = compute_metrics(spark, path / "events", specs)
    spark.createDataFrame(metrics).coalesce(1).write.mode("overwrite").options(**PARQUET_OPTIONS).parquet(
        str(path / "metrics")
    )
    return metrics


def write_events(job) -> pd.DataFrame:
    """Run a `run_events` job: every task writes its runs' Parquet files; returns one row per run written (its
    scenario, version, run, rows and file)."""
    return job.toPandas()


def drop_unlisted(events_dir: str | Path, files: Any) -> list[Path]:
    """Delete the part files in ``events_dir`` that ``files`` does not list (written by task attempts whose results
    Spark discarded); returns them."""
    kept = {Path(f).resolve() for f in files}
    dropped = [p for p in Path(events_dir).rglob("*.parquet") if p.resolve() not in kept]
    for part in dropped:
        part.unlink()
    return dropped


def read_events(spark, events_dir: str | Path):
    """The event dataset of a sweep as a DataFrame (`EVENTS_SCHEMA`: scenario and version are strings, never
    inferred from the folder names as numbers)."""
    return spark.read.schema(EVENTS_SCHEMA).parquet(str(events_dir))


def read_metrics(out: str | Path) -> pd.DataFrame:
    """The metrics table a sweep wrote to ``out/metrics/`` (read with pyarrow; no Spark needed)."""
    import pyarrow.parquet as pq

    return pq.read_table(str(Path(out) / "metrics")).to_pandas()


def compute_metrics(spark, events_dir: str | Path, specs: Any = None) -> pd.DataFrame:
    """`METRIC_COLUMNS` per run with Spark SQL over an event dataset; with ``specs``, joined to their grid rows."""
    from pyspark.sql import functions as F

    view = f"pulsarlab_sweep_events_{int(time.time() * 1000)}"
    # the query reads the events about fifteen times: keep the kinds it needs in memory, decoded once
    events = read_events(spark, events_dir).where(F.col("kind").isin(*METRIC_KINDS)).cache()
    events.createOrReplaceTempView(view)
    read_events(spark, events_dir).createOrReplaceTempView(f"{view}_all")
    try:
        result = spark.sql(metrics_sql(view, f"{view}_all")).toPandas()
    finally:
        spark.catalog.dropTempView(view)
        spark.catalog.dropTempView(f"{view}_all")
        events.unpersist()
    result = result.astype({c: "Int64" for c in METRIC_COLUMNS})
    if specs is None:
        return result.sort_values(list(RUN_KEYS)).reset_index(drop=True)
    grid = grid_frame(specs)
    merged = grid.merge(result.drop(columns=["version"]), on=["scenario", "run"], how="left", validate="one_to_one")
    return merged.sort_values(["scenario", "run"]).reset_index(drop=True)[ROW_FIELDS + METRIC_COLUMNS]


def events_view(spark, events_dir: str | Path, kind: str):
    """The events of one kind with their fields named (str fields decoded from the run's string rows)."""
    from pyspark.sql import functions as F

    et = get_event_type(kind)
    frame = read_events(spark, events_dir)
    strings = frame.where(F.col("kind") == STRING_KIND).select(
        *RUN_KEYS, F.col("f0").alias("_id"), F.col("text").alias("_text")
    )
    rows = frame.where(F.col("kind") == kind)
    columns = [F.col(c) for c in ("scenario", "version", "run", "seq", "time")]
    for i, (name, ftype) in enumerate(et.fields):
        column = FIELD_COLUMNS[i]
        if ftype in ("str", "json"):
            texts = strings.select(
                *(F.col(c).alias(f"_{c}{i}") for c in RUN_KEYS),
                F.col("_id").alias(f"_id{i}"),
                F.col("_text").alias(name),
            )
            match = [F.col(c) == F.col(f"_{c}{i}") for c in RUN_KEYS] + [F.col(column) == F.col(f"_id{i}")]
            rows = rows.join(texts, match[0] & match[1] & match[2] & match[3], "left")
            columns.append(F.col(name))
        elif ftype == "bool":
            columns.append((F.col(column) != 0).alias(name))
        else:
            columns.append(F.col(column).alias(name))
    return rows.select(*columns)


__all__ = [
    "EVENTS_SCHEMA",
    "EVENT_COLUMNS",
    "FIELD_COLUMNS",
    "SweepOutputExists",
    "check_out",
    "compute_metrics",
    "events_view",
    "field_columns",
    "grid_frame",
    "load_specs",
    "metrics_sql",
    "read_events",
    "read_metrics",
    "run_batches",
    "run_events",
    "sweep",
    "write_events",
]
