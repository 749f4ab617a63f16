"""Every front door to Spark fails fast: an unreachable Spark Connect server or standalone master is reported at
once, with the address and why, and a non-zero exit, where the clients would retry in silence (Spark Connect's
default retry policy for about 15 minutes, a standalone master's registration for a minute).

Both run the real command line in a subprocess against a loopback port with nothing behind it; the subprocess
timeout only guards against a hang, it asserts no duration.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pulsarlab.spark.session import SparkUnreachableError, check_reachable

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 300


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released without listening)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sweep_cli(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    spec = tmp_path / "s.yaml"
    spec.write_text("name: unreachable\nversions: ['4.0']\nmessages: 10\nseeds: [1]\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PULSARLAB_SPARK_MASTER")}
    return subprocess.run(
        [sys.executable, "-m", "pulsarlab", "sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", *args],
        cwd=REPO,
        env={**clean, **env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )


def test_sweep_with_an_unreachable_spark_remote_says_so_and_fails(tmp_path):
    url = f"sc://127.0.0.1:{closed_port()}"
    done = sweep_cli(tmp_path, env={"SPARK_REMOTE": url})
    assert done.returncode == 1, done
    assert f"pulsarlab sweep: cannot reach Spark Connect at {url}: connection refused" in done.stderr
    assert not (tmp_path / "out").exists()


def test_sweep_with_an_unreachable_spark_master_says_so_and_fails(tmp_path):
    url = f"spark://127.0.0.1:{closed_port()}"
    done = sweep_cli(tmp_path, "--master", url, env={})
    assert done.returncode == 1, done
    assert f"pulsarlab sweep: cannot reach the Spark master at {url}: connection refused" in done.stderr


def test_a_standalone_master_list_is_reachable_if_any_master_is():
    with socket.create_server(("127.0.0.1", 0)) as listening:
        up = listening.getsockname()[1]
        down = closed_port()
        check_reachable("master", f"spark://127.0.0.1:{down},127.0.0.1:{up}")
        with pytest.raises(SparkUnreachableError, match="connection refused"):
            check_reachable("master", f"spark://127.0.0.1:{down}")
        check_reachable("remote", f"sc://127.0.0.1:{up}/;user_id=lab")
    check_reachable("master", "local[2]")  # nothing to probe
    with pytest.raises(SparkUnreachableError, match="names no host"):
        check_reachable("remote", "sc://:15002")
