"""``pulsarlab serve --record FILE`` and ``start(lab, record=FILE)``: a real pulsar-client's run over loopback
becomes a timeline file that `pulsarlab.load_timeline` reads back frame for frame."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pulsar
import pytest
from serve_support import RECEIVE_MS, REPO, client_for, served_lab

import pulsarlab as pl
from pulsarlab.serve import start
from pulsarlab_widgets.player import Player
from pulsarlab_widgets.views.cursor import cursor_view

pytestmark = pytest.mark.serve


def produce_and_consume(client: pulsar.Client, n: int = 6) -> None:
    consumer = client.subscribe("rec", "s", consumer_type=pulsar.ConsumerType.Shared, consumer_name="real-c")
    producer = client.create_producer("rec")
    for i in range(n):
        producer.send(f"m{i}".encode(), partition_key=f"k{i % 2}")
    for _ in range(n):
        consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    consumer.close()
    producer.close()


def test_a_served_run_with_a_real_client_is_recorded_on_stop(tmp_path: Path) -> None:
    path = tmp_path / "served.plt.jsonl.gz"
    with served_lab(version="4.0", record=path) as (lab, server):
        with client_for(server) as client:
            produce_and_consume(client)
        assert not path.exists(), "written on stop, not before"
    recorder = server.server.recorder
    assert not recorder.recording and recorder.errors == []
    loaded = pl.load_timeline(path)
    assert len(loaded) == len(recorder) > 10
    for a, b in zip(recorder, loaded):
        assert (b.snapshot.to_json(), b.explanation) == (a.snapshot.to_json(), a.explanation)
    kinds = loaded.kinds()
    assert {"consumer_subscribed", "dispatched", "ack_applied", "consumer_closed"} <= set(kinds), kinds
    assert loaded.inputs["source"] == "pulsarlab serve" and loaded.inputs["url"] == server.url
    assert loaded.profile == "4.0"
    last = loaded[-1].snapshot.subscription("rec", "s")
    assert last.cursor.backlog == 0 and last.cursor.messages_consumed >= 6
    player = Player(loaded, [cursor_view])
    player.press("End")
    assert player.explanation == recorder[-1].explanation


def test_a_record_path_that_cannot_be_written_is_refused_before_serving(tmp_path: Path) -> None:
    lab = pl.Lab()
    with pytest.raises(ValueError, match="folder .*missing does not exist"):
        start(lab, "127.0.0.1", 0, record=tmp_path / "missing" / "x.plt.jsonl.gz")
    with pytest.raises(ValueError, match="is a directory"):
        start(lab, "127.0.0.1", 0, record=tmp_path)


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


def test_the_serve_command_records_a_real_clients_run_to_a_file(tmp_path: Path) -> None:
    path = tmp_path / "cli.plt.jsonl.gz"
    proc = _start_cli("--port", "0", "--version", "3.0", "--seed", "7", "--log-level", "warning", "--record", str(path))
    try:
        line = proc.stdout.readline()
        assert "listening on pulsar://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(" listening on ")[1].split()[0]
        client = pulsar.Client(
            url, operation_timeout_seconds=5, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull)
        )
        try:
            produce_and_consume(client, 4)
        finally:
            client.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert f"recorded the run to {path}" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    loaded = pl.load_timeline(path)
    assert loaded.profile == "3.0" and loaded.inputs["seed"] == 7
    assert "dispatched" in loaded.kinds() and "consumer_closed" in loaded.kinds()
    assert loaded[-1].snapshot.subscription("rec", "s").cursor.backlog == 0


def test_the_serve_command_refuses_an_unwritable_record_path(tmp_path: Path) -> None:
    proc = _start_cli("--port", "0", "--record", str(tmp_path / "nope" / "x.plt.jsonl.gz"))
    try:
        _out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0 and "folder" in err and "does not exist" in err, err
