"""The server around the connections: the real-time clock, the background handle, the recorder, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import pulsar
import pytest
from serve_support import RECEIVE_MS, REPO, client_for, raw_client, served_lab, wait_until

import pulsarlab as pl
from pulsarlab.clock import Scheduler
from pulsarlab.serve.commands import CommandType
from pulsarlab.serve.realtime import RealTimeDriver
from pulsarlab.snapshot.recorder import Recorder

pytestmark = pytest.mark.serve


class FakeWall:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def test_the_driver_keeps_virtual_time_on_the_wall_clock():
    sched = Scheduler(500)
    wall = FakeWall(1_700_000_000_000)
    driver = RealTimeDriver(sched, wall)
    fired = []
    sched.call_at(700, lambda: fired.append(sched.now()))
    sched.call_at(2000, lambda: fired.append(sched.now()))
    assert driver.target() == 500 and driver.next_wake() == 0.2
    wall.ms += 150
    assert driver.catch_up() == 0 and sched.now() == 650 and fired == []
    wall.ms += 100
    assert driver.catch_up() == 1 and fired == [700] and sched.now() == 750
    assert driver.next_wake() == 1.25
    assert driver.to_virtual(1_700_000_001_000) == 1500 and driver.to_wall(1500) == 1_700_000_001_000
    sched.advance(5000)  # something moved the clock ahead of the wall: the driver waits for the wall
    assert fired == [700, 2000] and driver.catch_up() == 0 and sched.now() == 5750
    wall.ms += 10
    assert driver.catch_up() == 0 and sched.now() == 5750 and driver.next_wake() is None


def test_a_served_lab_runs_its_timers_on_wall_time():
    with served_lab() as (lab, server):
        start = server.call(lab.now)
        fired = []
        server.call(lab.scheduler.call_later, 150, lambda: fired.append(lab.now()))
        wait_until(lambda: bool(fired), what="the timer to fire by itself")
        assert fired[0] >= start + 150


def test_a_recorder_and_stats_work_on_a_served_lab():
    with served_lab() as (lab, server), client_for(server) as client:
        rec = server.call(Recorder, lab, {"consumer_subscribed", "dispatched", "ack_applied", "mark_delete_moved"})
        c = client.subscribe("watched", "s", consumer_type=pulsar.ConsumerType.Shared, consumer_name="app")
        p = client.create_producer("watched")
        for i in range(3):
            p.send(f"m{i}".encode())
        for _ in range(3):
            c.acknowledge(c.receive(RECEIVE_MS))
        wait_until(
            lambda: server.call(lambda: rec[-1].snapshot.subscription("watched", "s").cursor.mark_delete == (3, 2)),
            what="the acks in the recording",
        )
        assert server.call(rec.kinds) == ["consumer_subscribed", "dispatched", "mark_delete_moved", "ack_applied"]
        assert server.call(lambda: rec[1].explanation).startswith("consumer app")
        stats = server.stats("watched")
        assert stats["subscriptions"]["s"]["consumers"][0]["consumerName"] == "app"
        assert stats["msgInCounter"] == 3
        snap = server.snapshot()
        assert snap.subscription("watched", "s").consumers[0].name == "app"
        assert [ci.consumers for ci in server.clients()] == [(("persistent://public/default/watched", "s", "app"),)]
        server.call(rec.close)


def test_in_process_clients_and_real_clients_share_one_broker():
    with served_lab() as (lab, server), client_for(server) as client:
        real = client.subscribe("shared-topic", "s", consumer_type=pulsar.ConsumerType.Shared, consumer_name="real")
        model_producer = server.call(
            lambda: lab.client().create_producer("shared-topic", batching_enabled=True, batching_max_messages=4)
        )
        for i in range(4):
            server.call(
                model_producer.send_async, f"m{i}".encode(), None, partition_key=f"k{i}", properties={"i": str(i)}
            )
        server.call(model_producer.flush)
        got = [real.receive(RECEIVE_MS) for _ in range(4)]
        assert [(m.data(), m.partition_key(), m.properties()) for m in got] == [
            (f"m{i}".encode(), f"k{i}", {"i": str(i)}) for i in range(4)
        ]
        assert {m.message_id().batch_index() for m in got} == {0, 1, 2, 3}
        in_proc = server.call(
            lambda: lab.client().subscribe("shared-topic", "model", initial_position=pl.InitialPosition.Earliest)
        )
        client.create_producer("shared-topic").send(b"from-real", partition_key="rk")
        wait_until(lambda: server.call(lambda: len(in_proc.receiver_queue)) == 5, what="the in-process consumer")
        last = server.call(lambda: [in_proc.receive(0) for _ in range(5)][-1])
        assert (last.data(), last.partition_key()) == (b"from-real", "rk")


def _start_cli(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "pulsarlab", "serve", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_serve_command_listens_until_interrupted():
    proc = _start_cli(
        "--port", "0", "--admin-port", "0", "--broker-config", "maxMessageSize=2048", "--version", "3.0",
        "--log-level", "warning",
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        assert "profile 3.0 listening on pulsar://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(" listening on ")[1].split()[0]
        with raw_client(url) as raw:
            assert raw.handshake().max_message_size == 2048
        admin_url = line.split("admin REST on ")[1].split(";")[0]
        assert admin_url.startswith("http://127.0.0.1:") and admin_url != "http://127.0.0.1:8080"
        with urllib.request.urlopen(admin_url + "/admin/v2/clusters", timeout=10) as resp:
            assert json.loads(resp.read()) == ["standalone"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_serve_command_refuses_a_public_address_and_bad_settings():
    for args, text in (
        (("--host", "0.0.0.0", "--port", "0", "--admin-port", "0"), "not a loopback address"),
        (("--port", "0", "--broker-config", "noSuchSetting=1"), "unknown broker setting"),
        (("--port", "0", "--broker-config", "oops"), "KEY=VALUE"),
        (("--port", "0", "--event-window", "-1"), "--event-window takes a number of events >= 0"),
        (("--port", "0", "--broker-config", "defaultRetentionTimeInMinutes=5"), "Invalid retention policy"),
    ):
        proc = _start_cli(*args)
        try:
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode != 0 and text in err, (args, out, err)
    assert CommandType.CONNECTED  # the handshake above is the protocol's, not a mock
