"""The Spark pipelines on real cluster set-ups, on loopback: the Spark Connect server that ships with pyspark and
a standalone master + worker. Each runs the key distribution, the delayed sweep and a scenario sweep (in a
subprocess, tests/cluster_probe.py) and must return what the local session returns.

One module-scoped fixture starts both set-ups at once (the Connect server takes ~20 s) on free loopback ports and
stops every process it started (by process group) at the end; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import cluster_probe
import pandas as pd
import pytest

from pulsarlab.spark.delayed_sweep import delayed_sweep
from pulsarlab.spark.keydist import key_distribution
from pulsarlab.spark.sweep import read_metrics, sweep

pytestmark = pytest.mark.spark

START_TIMEOUT_S = 180
PROBE_TIMEOUT_S = 420
PROBE = Path(__file__).resolve().parents[1] / "cluster_probe.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def cluster_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SPARK_REMOTE", None)
    env.pop("PULSARLAB_SPARK_MASTER", None)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_PID_DIR=str(tmp),
        SPARK_WORKER_DIR=str(tmp / "work"),
        SPARK_IDENT_STRING=f"pulsarlab-{os.getpid()}",
    )
    return env


class Started:
    """The processes one fixture started (each in its own process group) and their logs."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, []

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")
        proc = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        self.procs.append((name, proc, log))
        return proc

    def wait_for(self, what: str, ready, deadline: float) -> None:
        while time.monotonic() < deadline:
            for name, proc, _log in self.procs:
                if proc.poll() is not None:
                    pytest.fail(f"{name} exited with {proc.returncode} while waiting for {what}:\n{self.tail(name)}")
            if ready():
                return
            time.sleep(0.5)
        pytest.fail(
            f"{what} not ready after {START_TIMEOUT_S} s:\n" + "\n".join(self.tail(n) for n, _p, _l in self.procs)
        )

    def tail(self, name: str) -> str:
        return f"--- {name}\n" + (self.tmp / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        for _name, proc, _log in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _name, proc, log in reversed(self.procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            log.close()


def _workers_alive(webui: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as reply:
            return json.load(reply).get("aliveworkers", 0) >= 1
    except OSError:
        return False


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    """``{"connect": "sc://127.0.0.1:P", "standalone": "spark://127.0.0.1:Q"}``, both up."""
    tmp = tmp_path_factory.mktemp("clusters")
    env = cluster_env(tmp)
    home = spark_home()
    started = Started(tmp)
    connect, master, master_ui, worker_ui = free_port(), free_port(), free_port(), free_port()
    try:
        started.start(
            "connect",
            [
                str(home / "sbin" / "start-connect-server.sh"),
                "--wait",
                "--master",
                "local[2]",
                "--conf",
                f"spark.connect.grpc.binding.port={connect}",
                "--conf",
                "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf",
                "spark.ui.enabled=false",
                "--conf",
                "spark.sql.shuffle.partitions=4",
                "--driver-memory",
                "768m",
            ],
            env,
        )
        started.start(
            "master",
            [
                str(home / "bin" / "spark-class"),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(master),
                "--webui-port",
                str(master_ui),
            ],
            env,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        started.wait_for("the standalone master", lambda: listening(master), deadline)
        started.start(
            "worker",
            [
                str(home / "bin" / "spark-class"),
                "org.apache.spark.deploy.worker.Worker",
                f"spark://127.0.0.1:{master}",
                "--host",
                "127.0.0.1",
                "--cores",
                "2",
                "--memory",
                "1g",
                "--webui-port",
                str(worker_ui),
                "--work-dir",
                str(tmp / "work"),
            ],
            env,
        )
        started.wait_for("a standalone worker", lambda: _workers_alive(master_ui), deadline)
        started.wait_for("the Spark Connect server", lambda: listening(connect), deadline)
        yield {
            "connect": f"sc://127.0.0.1:{connect}",
            "standalone": f"spark://127.0.0.1:{master}",
            "env": env,
            "started": started,
        }
    finally:
        started.stop()


@pytest.fixture(scope="module")
def local_results(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    sweep(spark, cluster_probe.SWEEP, out, progress=False)
    return {
        "keydist": key_distribution(spark, **cluster_probe.KEYDIST),
        "delayed": delayed_sweep(spark, **cluster_probe.DELAYED),
        "metrics": read_metrics(out),
    }


@pytest.mark.parametrize("where", ["connect", "standalone"])
def test_cluster_runs_equal_local_runs(clusters, local_results, where, tmp_path):
    out = tmp_path / where
    done = subprocess.run(
        [sys.executable, str(PROBE), clusters[where], str(out)],
        env=clusters["env"],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    module = (out / "session.txt").read_text()
    assert ("connect" in module) == (where == "connect"), module
    pd.testing.assert_frame_equal(pd.read_pickle(out / "keydist.pkl"), local_results["keydist"])
    pd.testing.assert_frame_equal(pd.read_pickle(out / "delayed.pkl"), local_results["delayed"])
    pd.testing.assert_frame_equal(read_metrics(out / "sweep"), local_results["metrics"], check_dtype=False)
