"""The Spark key-distribution pipeline and session helper (pulsarlab.spark).

Tests marked ``spark`` use the shared local[2] session from conftest; the Java and argument checks run
without a JVM.
"""

from __future__ import annotations

import os
import random
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pulsarlab.profiles import get_profile
from pulsarlab.scenarios.distribution import distribution_metrics, sequential_keys
from pulsarlab.spark import JavaNotFoundError, get_session, key_distribution
from pulsarlab.spark import session as session_module
from pulsarlab.spark.jvm_stderr import start_gateway, without_notice
from pulsarlab.spark.keydist import RESULT_COLUMNS, _generated_chunks, check_configs, slice_runs

KINDS = ("auto_split", "consistent_hashing", "sticky")


def assert_rows_equal_bulk_path(result: pd.DataFrame, keys: list, points: int = 100) -> None:
    for row in result.to_dict("records"):
        want = distribution_metrics(keys, row["selector"], row["consumers"], row["version"], points)
        assert {c: row[c] for c in RESULT_COLUMNS} == {c: want[c] for c in RESULT_COLUMNS}, row


@pytest.mark.spark
def test_generated_keys_equal_bulk_path_for_every_selector_and_version(spark):
    n_keys = 30_011
    result = key_distribution(spark, n_keys=n_keys, consumer_counts=(1, 3, 8), version=("3.0", "4.0"), partitions=3)
    assert list(result.columns) == RESULT_COLUMNS
    assert list(zip(result.version, result.selector, result.consumers)) == [
        (v, k, n) for v in ("3.0", "4.0") for k in KINDS for n in (1, 3, 8)
    ]
    assert (result.total_keys == n_keys).all()
    assert_rows_equal_bulk_path(result, sequential_keys(0, n_keys))


@pytest.mark.spark
def test_default_partitioning_spreads_many_slices(spark):
    n_keys = 200_003  # several slices per task, split over the session's two cores
    result = key_distribution(spark, n_keys=n_keys, selectors="sticky", consumer_counts=3, version="3.0")
    assert_rows_equal_bulk_path(result, sequential_keys(0, n_keys))


def test_generated_slices_cover_every_key_once():
    n_keys, slices = 1_000_003, 17
    chunks = _generated_chunks(n_keys, slices)
    keys = []
    for part in ([0, 1, 2, 3, 4], [5, 7, 6], [8], [12, 9, 10, 11], [13, 14, 15, 16]):  # any grouping
        for chunk in chunks(pd.DataFrame({"id": part})):
            keys.extend(chunk)
    assert sorted(keys) == sorted(sequential_keys(0, n_keys))


def test_repeated_configs_are_counted_once():
    configs, points = check_configs(("sticky", "sticky"), (2, 2, 3), ("4.0", get_profile("4.0")), 50)
    assert configs == [("4.0", "sticky", 2), ("4.0", "sticky", 3)] and points == 50


def test_slice_runs():
    assert slice_runs([9, 4, 6, 5]) == [(4, 7), (9, 10)]
    assert slice_runs([]) == []


@pytest.mark.spark
def test_keys_given_as_a_dataframe(spark):
    rng = random.Random(3)
    keys = [f"order-{rng.randrange(10**9)}-{rng.choice('αβγ漢')}" for _ in range(5000)] + ["", "NONE_KEY"]
    keys_df = spark.createDataFrame(pd.DataFrame({"id": range(len(keys)), "k": keys})).repartition(4)
    result = key_distribution(spark, keys_df=keys_df, key_column="k", consumer_counts=(2, 5), points=20)
    assert len(result) == 6
    assert_rows_equal_bulk_path(result, keys, points=20)


@pytest.mark.spark
def test_binary_keys(spark):
    rng = random.Random(5)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))) for _ in range(2000)]
    keys_df = spark.createDataFrame([(k,) for k in keys], "key binary")
    result = key_distribution(spark, keys_df=keys_df, selectors="consistent_hashing", consumer_counts=4, version="3.0")
    assert_rows_equal_bulk_path(result, keys)


@pytest.mark.spark
def test_session_is_quiet_local_and_small(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert conf.get("spark.ui.enabled") == "false"
    assert session_module.LOG4J2_CONFIG.is_file()
    assert session_module.LOG4J2_CONFIG.as_uri() in conf.get("spark.driver.extraJavaOptions")


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:toPandas attempted Arrow optimization:UserWarning")
def test_bad_key_dataframes_fail_clearly(spark):
    keys_df = spark.createDataFrame([("a", 1)], "key string, n int")
    with pytest.raises(ValueError, match="keys_df has no column 'missing'"):
        key_distribution(spark, keys_df=keys_df, key_column="missing")
    with pytest.raises(TypeError, match="key column 'n' must be string or binary, not integer"):
        key_distribution(spark, keys_df=keys_df, key_column="n")
    with pytest.raises(ValueError, match="keys_df is empty"):
        key_distribution(spark, keys_df=keys_df.limit(0), selectors="sticky", consumer_counts=2)
    with_null = spark.createDataFrame([("a",), (None,)], "key string")
    with pytest.raises(Exception, match="contains nulls"):
        key_distribution(spark, keys_df=with_null, selectors="sticky", consumer_counts=2)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(n_keys=10, selectors=("sticky", "exclusive")), ValueError, "unknown selector kind 'exclusive'"),
        (dict(n_keys=10, consumer_counts=(2, 0)), ValueError, "consumer count must be between 1"),
        (dict(n_keys=10, consumer_counts=(2.5,)), TypeError, "consumer count must be an int, not float"),
        (dict(n_keys=10, consumer_counts=()), ValueError, "consumer_counts is empty"),
        (dict(n_keys=10, version="5.5"), ValueError, "unknown Pulsar version profile '5.5'"),
        (dict(n_keys=10, points=0), ValueError, "points must be at least 1"),
        (dict(n_keys=0), ValueError, "n_keys must be at least 1"),
        (dict(), ValueError, "give exactly one of n_keys"),
        (dict(n_keys=10, keys_df=object()), ValueError, "give exactly one of n_keys"),
    ],
)
def test_bad_arguments_fail_before_any_spark_call(kwargs, error, message):
    with pytest.raises(error, match=message):
        key_distribution(None, **kwargs)  # no session: must fail before touching Spark


@pytest.fixture
def no_jvm(monkeypatch):
    """Fail the test if anything tries to launch a JVM."""
    import pyspark.java_gateway

    def launch(*args, **kwargs):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", launch)
    monkeypatch.setattr("pyspark.core.context.launch_gateway", launch, raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("PULSARLAB_SPARK_MASTER", raising=False)


def test_missing_java_fails_before_the_jvm_starts(no_jvm, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match=r"Spark needs Java 17\+.*no `java` is on PATH.*Install"):
        get_session(master="local[1]")


def test_java_home_pointing_nowhere_fails(no_jvm, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    with pytest.raises(JavaNotFoundError, match="JAVA_HOME=.*no-such-jdk.* has no bin/java"):
        get_session(master="local[1]")


def test_too_old_java_fails(no_jvm, monkeypatch, tmp_path):
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match=r"is Java 8\..*Install a Java 17"):
        get_session(master="local[1]")


@pytest.mark.parametrize(
    "text, major",
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "21" 2023-09-19', 21),
    ],
)
def test_parse_java_major(text, major):
    assert session_module.parse_java_major(text) == major


def test_master_resolution_order(monkeypatch):
    monkeypatch.delenv("PULSARLAB_SPARK_MASTER", raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert session_module.resolve_master() == ("master", "local[*]")
    monkeypatch.setenv("SPARK_REMOTE", "sc://connect:15002")
    assert session_module.resolve_master() == ("remote", "sc://connect:15002")
    monkeypatch.setenv("PULSARLAB_SPARK_MASTER", "spark://cluster:7077")
    assert session_module.resolve_master() == ("master", "spark://cluster:7077")
    assert session_module.resolve_master("local[2]") == ("master", "local[2]")
    assert session_module.resolve_master("sc://other") == ("remote", "sc://other")
    with pytest.raises(ValueError, match="master must be a non-empty string"):
        session_module.resolve_master("")


@pytest.mark.parametrize("master, cores", [("local", 1), ("local[3]", 3), ("local[2,4]", 2), ("yarn", None)])
def test_local_cores(master, cores):
    assert session_module.local_cores(master) == cores


# -- the driver JVM's stderr: everything but the JVM's incubator-module notice ---------------------------------------
def test_only_the_incubator_notice_is_dropped_from_the_jvm_s_stderr():
    lines = [
        b"WARNING: Using incubator modules: jdk.incubator.vector\n",
        b"25/11/28 03:40:00 WARN SparkContext: something a learner should see\n",
        b"WARNING: Using incubator modules: jdk.incubator.vector, jdk.incubator.foreign\n",
        b"Traceback (most recent call last):\n",
    ]
    assert list(without_notice(lines)) == lines[1:]


def _python_stderr(script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    env.pop("SPARK_REMOTE", None)
    env.pop("PULSARLAB_SPARK_MASTER", None)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.spark
def test_a_session_s_jvm_says_nothing_about_incubator_modules_but_the_workers_stderr_shows():
    done = _python_stderr(
        "import sys\n"
        "from pulsarlab.spark import get_session\n"
        "def noisy(x):\n"
        "    sys.stderr.write(f'worker says {x}\\n'); sys.stderr.flush()\n"
        "    return x\n"
        "s = get_session('stderr', master='local[1]')\n"
        "print(s.sparkContext.parallelize([1, 2], 1).map(noisy).collect())\n"
        "s.stop()\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1, 2]"
    assert "incubator" not in done.stderr
    assert "worker says 1" in done.stderr and "worker says 2" in done.stderr


def test_a_driver_that_cannot_start_still_says_why_before_the_error(monkeypatch, capfd):
    import pyspark.java_gateway

    def jvm_that_fails(conf, popen_kwargs):
        said = "import sys; sys.stderr.write('WARNING: Using incubator modules: jdk.incubator.vector\\nbad option\\n')"
        subprocess.run([sys.executable, "-c", said], stderr=popen_kwargs["stderr"], check=True)
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", jvm_that_fails)
    with pytest.raises(RuntimeError, match="JAVA_GATEWAY_EXITED"):
        start_gateway(None)
    assert capfd.readouterr().err == "bad option\n"
