"""Shared pytest fixtures: one quiet local[2] Spark session per test run, the golden-vector folder, and the machine a
browser test runs on (as it is, or slow and busy on purpose)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).parent
pytest_plugins = ["pytester"]  # tests/serve/test_pytest_plugin.py runs suites that use pulsarlab's pytest plugin


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """tests/golden: the committed recordings of Pulsar's own classes."""
    return TESTS_DIR / "golden"


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession shared by every test that asks for it; stopped when the run ends.

    Starting one costs 5-8 s and about 1 GB, so pyspark is imported only when a test needs it.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers must run this venv (pandas, mmh3, pulsarlab)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pulsarlab.spark import get_session

    session = get_session("pulsarlab-tests", master="local[2]")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def machine(request):
    """The machine a browser test runs on: ``as-is`` (unless the test is parametrized with
    ``@pytest.mark.parametrize("machine", MODES, indirect=True)``), or ``throttled``: `BusyProcesses` beside the
    kernel for the test's length, and the test throttles chromium's CPU on each page it opens (`throttle_cpu`)."""
    from lab_browser import BusyProcesses

    mode = getattr(request, "param", "as-is")
    if mode == "throttled":
        with BusyProcesses():
            yield mode
    else:
        yield mode
