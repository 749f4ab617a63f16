"""A second, independent client: pulsar-flex (npm; plain JavaScript with its own protocol code) against serve.

`tests/pulsar_flex_app.js` produces N messages, consumes them on a Shared subscription with two consumers and on
an Exclusive one, acknowledging each, and negatively acknowledges one message on a third subscription until it
comes back with its redelivery count raised. pulsar-flex is installed from the npm registry into a folder of
the test session (once per session, version pinned); if npm cannot install it the test fails and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from serve_support import served_lab

pytestmark = pytest.mark.serve

PULSAR_FLEX = "pulsar-flex@1.1.1"
APP = Path(__file__).resolve().parents[1] / "pulsar_flex_app.js"
MESSAGES = 10
HANG_GUARD_S = 180  # npm install and the app's run; nothing here is timed


@pytest.fixture(scope="session")
def pulsar_flex(tmp_path_factory) -> Path:
    """A folder whose node_modules holds pulsar-flex (installed once per test session)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed to install pulsar-flex (node 20 and npm are on the CI machines)")
    folder = tmp_path_factory.mktemp("pulsar-flex")
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(folder), PULSAR_FLEX],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"npm install {PULSAR_FLEX} did not finish within {HANG_GUARD_S} s (is the npm registry reachable?)"
        )
    if done.returncode != 0 or not (folder / "node_modules" / "pulsar-flex").is_dir():
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        pytest.fail(f"npm could not install {PULSAR_FLEX} (is the npm registry reachable?):\n" + "\n".join(tail))
    return folder


def test_pulsar_flex_produces_consumes_acks_and_gets_a_redelivery(pulsar_flex):
    topic = "persistent://public/default/flex"
    with served_lab() as (lab, server):
        app = subprocess.Popen(
            ["node", str(APP), f"127.0.0.1:{server.port}", "flex", str(MESSAGES)],
            cwd=pulsar_flex,
            env={**os.environ, "NODE_PATH": str(pulsar_flex / "node_modules")},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = app.stdout.readline()  # the app's JSON, printed with its consumers still connected
            stats = server.stats(topic)["subscriptions"]
            app.stdin.close()
            app.wait(timeout=HANG_GUARD_S)
            err = app.stderr.read()
        finally:
            if app.poll() is None:
                app.kill()
                app.wait()
        assert app.returncode == 0 and line, err
        got = json.loads(line)
    sent = [f"m{i}" for i in range(MESSAGES)]
    # Shared: every message once, over the two consumers
    assert sorted(e["payload"] for e in got["shared"]) == sorted(sent)
    assert {e["consumer"] for e in got["shared"]} <= {"s1", "s2"}
    # Exclusive: every message once, in order
    assert [e["payload"] for e in got["exclusive"]] == sent
    assert all(e["redeliveryCount"] == 0 for e in got["shared"] + got["exclusive"])
    # the negative ack: m0 came back with its redelivery count raised, the rest once
    redo = got["redo"]
    assert [e["redeliveryCount"] for e in redo if e["payload"] == "m0"] == [0, 1]
    assert sorted(e["payload"] for e in redo if e["payload"] != "m0") == sent[1:]
    # the broker's side: every delivery acknowledged, nothing dispatched more than the app saw
    assert {name: (s["msgOutCounter"], s["msgBacklog"], s["unackedMessages"]) for name, s in stats.items()} == {
        "shared": (MESSAGES, 0, 0),
        "exclusive": (MESSAGES, 0, 0),
        "redo": (MESSAGES + 1, 0, 0),
    }
