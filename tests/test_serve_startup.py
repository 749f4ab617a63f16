"""``python -m pulsarlab serve`` imports only what serving needs (issue 21: the first producer within 0.25 s of
the process starting; `bench/startup.py` measures it, nothing here is timed).

The command runs in a subprocess whose stdout is watched: when it prints its ready line, the modules loaded so
far are written out and the process ends. Serving must not have loaded numpy, the client side of the model, the
view-model, the views, Spark, the Key_Shared selectors or the bucket delayed tracker, nor aiohttp without the
admin port; with the admin port, aiohttp loads beside the running listener and the admin REST API answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from serve_support import quiet_client

pytestmark = pytest.mark.serve

REPO = Path(__file__).resolve().parents[1]
HANG_GUARD_S = 120

# stdout is watched: at the ready line, the loaded modules go to the real stdout and the process ends
WATCH = r"""
import io, json, os, runpy, sys

real = sys.stdout

class Watch(io.TextIOBase):
    def write(self, text):
        if "listening on" in text:
            real.write(json.dumps(sorted(sys.modules)) + "\n")
            real.flush()
            os._exit(0)
        return len(text)

sys.stdout = Watch()
sys.argv = ["pulsarlab", *sys.argv[1:]]
runpy.run_module("pulsarlab", run_name="__main__", alter_sys=True)
"""

NOT_FOR_SERVING = (
    "numpy",
    "pandas",
    "pyarrow",
    "pyspark",
    "plotly",
    "ipywidgets",
    "pulsarlab_widgets",
    "pulsarlab.spark",
    "pulsarlab.snapshot",
    "pulsarlab.client.client",
    "pulsarlab.client.consumer",
    "pulsarlab.client.producer",
    "pulsarlab.client.batching",
    "pulsarlab.broker.key_shared",
    "pulsarlab.broker.dispatch.key_shared",
    "pulsarlab.broker.delayed.bucket.tracker",
    "pulsarlab.scenarios",
    "pulsarlab.exercises",
    "pulsarlab.conformance",
    "pulsarlab.importers",
)


def modules_at_ready(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", WATCH, "serve", "--port", "0", *args],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0 and done.stdout, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _loaded(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_serve_without_the_admin_port_loads_only_what_serving_needs():
    modules = modules_at_ready("--no-admin")
    assert "pulsarlab.serve.connection" in modules and "pulsarlab.broker.service" in modules
    loaded = [name for name in (*NOT_FOR_SERVING, "aiohttp") if _loaded(modules, name)]
    assert loaded == [], f"python -m pulsarlab serve loaded {loaded} before it was ready"


def test_serve_with_the_admin_port_loads_aiohttp_beside_the_listener():
    modules = modules_at_ready("--admin-port", "0")
    loaded = [name for name in NOT_FOR_SERVING if _loaded(modules, name)]
    assert loaded == [], f"python -m pulsarlab serve loaded {loaded} before it was ready"


def test_the_admin_port_answers_as_soon_as_serve_says_it_is_ready():
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulsarlab", "serve", "--port", "0", "--admin-port", "0", "--log-level", "warning"],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        url = line.split(" listening on ")[1].split()[0]
        admin = line.split("admin REST on ")[1].split(";")[0]
        # asked at once: the request waits in the admin port's backlog until aiohttp has loaded
        with urllib.request.urlopen(f"{admin}/admin/v2/clusters", timeout=HANG_GUARD_S) as r:
            assert json.load(r) == ["standalone"]
        client = quiet_client(url)
        try:
            client.create_producer("persistent://public/default/startup").send(b"x")
        finally:
            client.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=HANG_GUARD_S)
