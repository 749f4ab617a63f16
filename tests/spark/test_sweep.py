"""Scenario sweeps on Spark: the Parquet event dataset, the SQL metrics against the in-process model, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from pulsarlab.cli import main as cli_main
from pulsarlab.scenarios.run import run_row
from pulsarlab.scenarios.spec import ROW_FIELDS, load_spec
from pulsarlab.scenarios.sweep_metrics import METRIC_COLUMNS, run_metrics
from pulsarlab.spark.sweep import (
    EVENT_COLUMNS,
    SweepOutputExists,
    drop_unlisted,
    events_view,
    field_columns,
    read_metrics,
    sweep,
)

# a few runs that exercise every metric: Key_Shared churn on both dispatchers, nacks into the DLQ, crashes,
# a partitioned topic with batching, delayed and chunked messages
SPECS = [
    {
        "name": "churn",
        "versions": ["3.0", "4.0"],
        "subscription_type": "Key_Shared",
        "seeds": [1],
        "messages": 300,
        "keys": 20,
        "consumers": 3,
        "nack_rate": 0.05,
        "consumer_churn_every_ms": 100,
        "crash_rate": 0.01,
        "consume_rate_per_s": 400,
    },
    {
        "name": "dlq",
        "versions": ["4.0"],
        "subscription_type": "Shared",
        "seeds": [2],
        "messages": 200,
        "nack_rate": [0.3],
        "max_redeliver_count": 2,
        "negative_ack_redelivery_delay_ms": 100,
        "partitions": 2,
        "batching": True,
        "batching_max_messages": 4,
    },
    {
        "name": "delayed-chunked",
        "versions": ["4.0"],
        "subscription_type": "Shared",
        "seeds": [3],
        "messages": 150,
        "delayed_fraction": 0.3,
        "delayed_spread_ms": 2000,
        "chunked_fraction": 0.2,
        "unacked_messages_timeout_ms": 1000,
        "consume_rate_per_s": 100,
    },
]


@pytest.fixture(scope="module")
def swept(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    metrics = sweep(spark, SPECS, out, progress=False)
    return out, metrics


@pytest.mark.spark
def test_sql_metrics_equal_the_in_process_model(swept):
    _out, metrics = swept
    rows = [row for spec in SPECS for row in load_spec(spec).rows()]
    assert len(metrics) == len(rows) == 4
    assert list(metrics.columns) == ROW_FIELDS + METRIC_COLUMNS
    for row in rows:
        expected = run_metrics(run_row(row).events.columns())
        got = metrics[(metrics.scenario == row.scenario) & (metrics.run == row.run)].iloc[0]
        assert got.version == row.version and got.seed == row.seed
        assert {k: (None if pd.isna(got[k]) else int(got[k])) for k in METRIC_COLUMNS} == expected, row
    # the runs did what they were set up to do
    assert metrics.dead_lettered.sum() > 0 and metrics.blocked_hash_episodes.sum() > 0
    assert metrics.out_of_order.sum() > 0 and metrics.crashed.sum() > 0 and metrics.max_ack_holes.min() > 0


@pytest.mark.spark
def test_the_event_dataset_is_plain_parquet_with_the_documented_schema(swept):
    out, metrics = swept
    dataset = ds.dataset(out / "events", format="parquet", partitioning="hive")
    schema = dataset.schema
    assert sorted(schema.names) == sorted(EVENT_COLUMNS)
    assert schema.field("run").type == pa.int32() and schema.field("seq").type == pa.int32()
    assert schema.field("time").type == pa.int64() and schema.field("f0").type == pa.int64()
    assert schema.field("kind").type == pa.string() and schema.field("text").type == pa.string()
    parts = sorted(p.relative_to(out / "events").parent.as_posix() for p in (out / "events").rglob("*.parquet"))
    assert set(parts) == {
        "scenario=churn/version=3.0",
        "scenario=churn/version=4.0",
        "scenario=dlq/version=4.0",
        "scenario=delayed-chunked/version=4.0",
    }
    # one run read back equals its in-process log, event by event
    row = next(load_spec(SPECS[0]).rows())
    cols = run_row(row).events.columns()
    table = dataset.to_table(
        filter=(ds.field("scenario") == "churn") & (ds.field("version") == row.version) & (ds.field("run") == row.run)
    ).to_pandas()
    events = table[table.kind != "string"].sort_values("seq")
    assert events.seq.tolist() == list(range(len(cols)))
    assert events.time.tolist() == cols.time.tolist()
    assert events.kind.tolist() == [cols.kind_names[c] for c in cols.kind]
    for i, column in enumerate(cols.fields):
        stored = events[f"f{i}"].to_numpy(dtype="float64", na_value=np.nan)
        missing = column == np.iinfo(np.int64).min
        assert np.array_equal(np.isnan(stored), missing)
        assert np.array_equal(stored[~missing].astype(np.int64), column[~missing])
    strings = table[table.kind == "string"].sort_values("f0")
    assert strings.text.tolist() == list(cols.strings)
    # the compact goal: at most 12 bytes per event on disk
    size = sum(p.stat().st_size for p in (out / "events").rglob("*.parquet"))
    assert size / dataset.count_rows() <= 12
    pd.testing.assert_frame_equal(read_metrics(out), metrics, check_dtype=False)


@pytest.mark.spark
def test_events_view_names_the_fields_and_decodes_strings(spark, swept):
    out, _metrics = swept
    view = events_view(spark, out / "events", "hash_blocked").toPandas()
    assert list(view.columns) == [
        "scenario",
        "version",
        "run",
        "seq",
        "time",
        "consumer",
        "hash",
        "ledger",
        "entry",
        "reason",
    ]
    assert (
        set(view.reason) <= {"hash_in_replay_set", "hash_draining", "recently_joined", "no_permits", "no_consumer"}
        and len(view) > 0
    )
    assert field_columns("app_received") == {
        "consumer": "f0",
        "msg": "f1",
        "key": "f2",
        "redelivery_count": "f3",
        "action": "f4",
    }


def test_part_files_of_discarded_task_attempts_are_dropped(tmp_path):
    folder = tmp_path / "events" / "scenario=s" / "version=4.0"
    folder.mkdir(parents=True)
    kept, stale = folder / "part-a.parquet", folder / "part-b.parquet"
    kept.write_bytes(b"x")
    stale.write_bytes(b"x")
    assert drop_unlisted(tmp_path / "events", [str(kept)]) == [stale]
    assert kept.exists() and not stale.exists()


class Untouchable:
    def __getattr__(self, name):
        raise AssertionError(f"Spark was used ({name}) before the spec was checked")


def test_bad_specs_and_taken_folders_fail_before_spark(tmp_path):
    with pytest.raises(ValueError, match="'crash_rate'"):
        sweep(Untouchable(), {"crash_rate": -1}, tmp_path / "a")
    with pytest.raises(ValueError, match="names must differ"):
        sweep(Untouchable(), [{"name": "x"}, {"name": "x"}], tmp_path / "a")
    (tmp_path / "b" / "events").mkdir(parents=True)
    with pytest.raises(SweepOutputExists, match="already holds a sweep"):
        sweep(Untouchable(), {"name": "x"}, tmp_path / "b")


def test_cli_reports_spec_errors_without_starting_spark(tmp_path, capsys):
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps({"versions": ["4.0"], "keyz": 3}))
    assert cli_main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "'keyz'" in err and "did you mean 'keys'" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_cli_sweeps_a_yaml_spec_with_a_progress_bar(spark, tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: cli\nversions: ['3.0', '4.0']\nsubscription_type: Key_Shared\nmessages: 100\nseeds: [1]\n")
    assert cli_main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--master", "local[2]"]) == 0
    captured = capsys.readouterr()
    assert "sweep [" in captured.err and "2/2 tasks" in captured.err
    assert "2 run(s) of cli" in captured.out
    metrics = read_metrics(tmp_path / "out")
    assert metrics.version.tolist() == ["3.0", "4.0"] and metrics.published.tolist() == [100, 100]
    assert cli_main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert Path(tmp_path / "out" / "metrics").is_dir()


def test_progress_bar_follows_the_spark_connect_progress_handler():
    """On Spark Connect (no SparkContext) the bar is fed by a registered progress handler: pyspark's own
    ``Progress`` calls it with the server's stage reports; the run stage (its task count) moves the bar, other
    stages do not, and stopping removes the handler."""
    import io

    from pyspark.errors import PySparkNotImplementedError
    from pyspark.sql.connect.shell.progress import Progress, StageInfo

    from pulsarlab.spark.sweep import _Progress, _watch

    class ConnectSession:  # what `_watch` uses of a pyspark.sql.connect.session.SparkSession
        def __init__(self) -> None:
            self.handlers: list = []

        @property
        def sparkContext(self):
            raise PySparkNotImplementedError(
                errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "sparkContext"}
            )

        def registerProgressHandler(self, handler) -> None:
            self.handlers.append(handler)

        def removeProgressHandler(self, handler) -> None:
            self.handlers.remove(handler)

    session, out = ConnectSession(), io.StringIO()
    bar = _Progress(total_runs=12, tasks=4, enabled=True, out=out)
    stop = _watch(session, bar)
    assert len(session.handlers) == 1
    with Progress(handlers=session.handlers, operation_id="op-1", output=io.StringIO()) as server:
        server.update_ticks([StageInfo(0, 1, 1, 0, True)], 0)  # a one-task stage (a count): not the run stage
        assert out.getvalue() == ""
        server.update_ticks([StageInfo(0, 1, 1, 0, True), StageInfo(1, 4, 1, 0, False)], 3)
        assert "1/4 tasks (12 runs)" in out.getvalue()
        server.update_ticks([StageInfo(1, 4, 3, 0, False)], 1)
    assert "3/4 tasks (12 runs)" in out.getvalue() and "4/4" not in out.getvalue()
    stop()
    assert session.handlers == []
    assert _watch(session, _Progress(1, 1, enabled=False)) is not None and session.handlers == []
