"""``python -m pulsarlab serve`` imports only what serving needs (issue 21: the first producer within 0.25 s of
the process starting; `bench/startup.py` measures it, nothing here is timed).

The command runs in a subprocess whose stdout is watched: when it prints its ready line, the modules loaded so
far are written out and the process ends. Serving must not have loaded numpy, the client side of the model, the
view-model, the views, Spark, the Key_Shared selectors or the bucket delayed tracker, nor aiohttp and the admin
resources. Another subprocess serves real clients and writes out its modules whenever a line arrives on its stdin:
after a producer and a consumer have worked, aiohttp and the admin resources are still not loaded, with or without
the admin port; the admin port's first request loads them, and it is answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from serve_support import RECEIVE_MS, quiet_client

pytestmark = pytest.mark.serve

REPO = Path(__file__).resolve().parents[2]
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

# stdout is the command's own; each line on stdin writes the modules loaded so far as one JSON line
REPORT_ON_STDIN = r"""
import json, runpy, sys, threading

def report():
    for _line in sys.stdin:
        sys.stdout.write(json.dumps(sorted(sys.modules)) + "\n")
        sys.stdout.flush()

threading.Thread(target=report, daemon=True).start()
sys.argv = ["pulsarlab", *sys.argv[1:]]
runpy.run_module("pulsarlab", run_name="__main__", alter_sys=True)
"""

# loaded when the admin REST API is first used, never to serve the binary protocol
ADMIN_ONLY = ("aiohttp", "pulsarlab.serve.admin_http", "pulsarlab.admin", "pulsarlab.broker.admin")

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
    loaded = [name for name in (*NOT_FOR_SERVING, *ADMIN_ONLY) if _loaded(modules, name)]
    assert loaded == [], f"python -m pulsarlab serve loaded {loaded} before it was ready"


def test_serve_with_the_admin_port_binds_it_but_loads_nothing_for_it():
    modules = modules_at_ready("--admin-port", "0")
    loaded = [name for name in (*NOT_FOR_SERVING, *ADMIN_ONLY) if _loaded(modules, name)]
    assert loaded == [], f"python -m pulsarlab serve loaded {loaded} before it was ready"


class ServeReporting:
    """``python -m pulsarlab serve ARGS`` that writes its loaded modules on request (`REPORT_ON_STDIN`)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", REPORT_ON_STDIN, "serve", "--port", "0", "--log-level", "warning", *args],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.ready = self.proc.stdout.readline()
        assert " listening on " in self.ready, (self.ready, self.proc.stderr.read() if self.proc.poll() else "")
        self.url = self.ready.split(" listening on ")[1].split()[0]

    def modules(self) -> list[str]:
        self.proc.stdin.write("?\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.communicate(timeout=HANG_GUARD_S)


def produce_and_consume(url: str) -> None:
    client = quiet_client(url)
    try:
        topic = "persistent://public/default/startup-use"
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"x")
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(msg)
        assert msg.data() == b"x"
    finally:
        client.close()


@pytest.mark.parametrize("admin", [["--no-admin"], ["--admin-port", "0"]], ids=["no-admin", "admin-port"])
def test_serving_real_clients_loads_no_admin_module(admin):
    serve = ServeReporting(*admin)
    try:
        produce_and_consume(serve.url)
        modules = serve.modules()
        assert "pulsarlab.serve.connection" in modules
        loaded = [name for name in ADMIN_ONLY if _loaded(modules, name)]
        assert loaded == [], f"python -m pulsarlab serve {' '.join(admin)} loaded {loaded} to serve real clients"
    finally:
        serve.stop()


def test_the_admin_ports_first_request_loads_the_admin_rest_api():
    serve = ServeReporting("--admin-port", "0")
    try:
        admin = serve.ready.split("admin REST on ")[1].split(";")[0]
        produce_and_consume(serve.url)
        assert not _loaded(serve.modules(), "aiohttp")
        with urllib.request.urlopen(f"{admin}/admin/v2/persistent/public/default", timeout=HANG_GUARD_S) as r:
            assert "persistent://public/default/startup-use" in json.load(r)
        modules = serve.modules()
        assert [name for name in ADMIN_ONLY if not _loaded(modules, name)] == []
    finally:
        serve.stop()


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
