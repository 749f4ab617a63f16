"""200 real clients at once against ``pulsarlab serve`` (bounded, loopback only): a ledger of every message sent,
received and acknowledged proves nothing is lost; admin REST keeps answering during the load; the server's
memory before and after is printed.

The server is the ``pulsarlab serve`` command in a process of its own; the clients (100 producers, 100
consumers, each a ``pulsar.Client`` with its own connection, over 20 topics and all four subscription types)
run in another (`tests/many_clients.py`). Bounded: 50 messages per producer, a 60 s deadline for the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from serve_support import wait_until
from soak_clients import rss_kib as _rss_kib

pytestmark = pytest.mark.serve

REPO = Path(__file__).resolve().parents[2]
MESSAGES = 50
TOPICS = 20


def _get(url: str) -> tuple[int, object]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, json.loads(resp.read())


def test_200_clients_over_20_topics_lose_nothing() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    server = subprocess.Popen(
        [sys.executable, "-m", "pulsarlab", "serve", "--port", "0", "--admin-port", "0", "--log-level", "warning"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    driver = None
    try:
        line = server.stdout.readline()
        assert "listening on pulsar://127.0.0.1:" in line, line
        url = line.split(" listening on ")[1].split()[0]
        admin = line.split("admin REST on ")[1].split(";")[0]
        rss_before = _rss_kib(server.pid)
        driver = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "many_clients.py"), url, "--topics", str(TOPICS)]
            + ["--producers", "100", "--consumers", "100", "--messages", str(MESSAGES), "--deadline", "60"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # admin requests while the load runs: every one answered (latencies printed, not asserted)
        answers: list[tuple[int, float]] = []
        done = threading.Event()

        def poll_admin() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                try:
                    status, _ = _get(f"{admin}/admin/v2/persistent/public/default/load-2/stats")
                except urllib.error.HTTPError as e:  # 404 until the topic exists
                    status = e.code
                answers.append((status, time.perf_counter() - t0))
                time.sleep(0.01)

        poller = threading.Thread(target=poll_admin, daemon=True)
        poller.start()
        out, err = driver.communicate(timeout=120)
        done.set()
        poller.join(15)
        assert driver.returncode == 0, err
        ledger = json.loads(out.strip().splitlines()[-1])
        rss_peak = _rss_kib(server.pid)

        assert ledger["clients"] == 200
        assert ledger["sent"] == 100 * MESSAGES
        assert ledger["missing"] == {}, ledger["missing"]
        assert ledger["received"] == ledger["expected_deliveries"] == ledger["acknowledged"]
        assert ledger["unexplained_duplicates"] == []  # a duplicate only as a redelivery, as Pulsar allows
        assert ledger["order_violations"] == []
        kinds = {s.split("|")[2] for s in ledger["subscriptions"]}
        assert kinds == {"Exclusive", "Failover", "Shared", "KeyShared"}

        # the broker's side of the ledger: every message stored once, every subscription acknowledged to the end
        ns = f"{admin}/admin/v2/persistent/public/default"
        assert len(_get(ns)[1]) == TOPICS

        def all_acked() -> bool:
            for i in range(TOPICS):
                stats = _get(f"{ns}/load-{i}/stats")[1]
                if any(s["msgBacklog"] or s["unackedMessages"] for s in stats["subscriptions"].values()):
                    return False
            return True

        wait_until(all_acked, timeout_s=20, what="every subscription to be acknowledged to the end")
        for i in range(TOPICS):
            stats = _get(f"{ns}/load-{i}/stats")[1]
            assert stats["msgInCounter"] == 5 * MESSAGES
            assert stats["publishers"] == []  # every producer gone
        statuses = {s for s, _ in answers}
        assert answers and statuses <= {200, 404} and 200 in statuses
        rss_after = _rss_kib(server.pid)
        latencies = sorted(t for _, t in answers)
        print(
            f"\nload: {ledger['received']} deliveries of {ledger['sent']} messages to {len(ledger['subscriptions'])} "
            f"subscriptions by 200 clients: connect {ledger['connect_s']} s, deliver {ledger['deliver_s']} s "
            f"({ledger['msgs_per_s']:.0f} msg/s); admin stats during load: {len(answers)} requests, "
            f"median {latencies[len(latencies) // 2] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms; "
            f"server RSS before {rss_before / 1024:.1f} MiB, after the load {rss_peak / 1024:.1f} MiB, "
            f"after the clients left {rss_after / 1024:.1f} MiB"
        )
        assert rss_after < 1024 * 1024  # KiB: bounded (a leak per message or connection would show here)
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
            driver.communicate()
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            try:
                server.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()
