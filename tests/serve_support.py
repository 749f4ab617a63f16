"""What the serve tests share: a served lab, quiet real clients, a raw protocol client, cursor fields to compare.

Every server binds port 0 on loopback and is stopped by the fixture that made it; every subprocess is killed
in a ``finally``. Real clients use short operation timeouts and log only to /dev/null.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pulsar

import pulsarlab as pl
from pulsarlab.serve import start
from pulsarlab.serve.codec import CodecError
from pulsarlab.serve.commands import CommandType, Connect, Connected, decode_command, encode_command
from pulsarlab.serve.frames import FrameDecoder, simple_frame

REPO = Path(__file__).resolve().parents[1]
OP_TIMEOUT_S = 5
RECEIVE_MS = 5000  # bound on one receive; never reached when the server is right


def quiet_client(url: str, **kwargs: Any) -> pulsar.Client:
    """A real pulsar-client with a short operation timeout whose log goes nowhere."""
    return pulsar.Client(
        url,
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
        **kwargs,
    )


@contextlib.contextmanager
def served_lab(
    version: str = "4.0", seed: int = 1, broker_config: dict | None = None, **options: Any
) -> Iterator[tuple[pl.Lab, Any]]:
    """A lab served on a free loopback port; stopped on exit whatever happens."""
    lab = pl.Lab(version=version, seed=seed, broker_config=broker_config)
    server = start(lab, "127.0.0.1", 0, **options)
    try:
        yield lab, server
    finally:
        server.stop()


@contextlib.contextmanager
def client_for(server: Any, **kwargs: Any) -> Iterator[pulsar.Client]:
    client = quiet_client(server.url, **kwargs)
    try:
        yield client
    finally:
        client.close()


def receive_all(consumers: dict[str, Any], n: int, timeout_s: float = 20.0) -> list[tuple[str, Any]]:
    """Receive ``n`` messages from any of ``consumers`` (name -> consumer), polling them in turn; returns
    ``(consumer name, message)`` in arrival order. Fails (bounded) if fewer arrive."""
    got: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"received {len(got)} of {n} messages")
        progressed = False
        for name, c in consumers.items():
            try:
                m = c.receive(timeout_millis=50)
            except pulsar.Timeout:
                continue
            got.append((name, m))
            progressed = True
        if not progressed:
            time.sleep(0.01)
    return got


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0, what: str = "the condition") -> None:
    """Poll ``predicate`` until it holds (bounded)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


CURSOR_FIELDS = (
    "markDeletePosition",
    "readPosition",
    "individuallyDeletedMessages",
    "messagesConsumedCounter",
    "numberOfEntriesSinceFirstNotAckedMessage",
    "totalNonContiguousDeletedMessagesRange",
)


def cursor_state(stats_internal: dict, subscription: str) -> dict[str, Any]:
    """The cursor fields of ``stats-internal`` that a scenario's acks decide."""
    cursor = stats_internal["cursors"][subscription]
    return {k: cursor[k] for k in CURSOR_FIELDS}


def batch_acks(snapshot: Any, topic: str, subscription: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """The cursor's partly acknowledged batches: (ledger, entry, acked indexes)."""
    sub = snapshot.subscription(topic, subscription)
    return [(b.ledger, b.entry, b.acked) for b in sub.cursor.batch_acks]


def sticky_selection(lab: pl.Lab, topic: str, subscription: str, key: str) -> str:
    """The consumer name the subscription's Key_Shared selector picks for ``key`` (call with the lab locked)."""
    t = lab.service.topics[lab.service.normalize(topic)]
    d = t.subscriptions[subscription].dispatcher
    h = d.selector.make_sticky_key_hash(key.encode())
    return d.selector.select(h).name


# --- a raw client: the protocol without pulsar-client ------------------------------------------------
class RawClient:
    """A socket speaking frames built with the project's codec (for protocol and robustness tests)."""

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        host, port = url.removeprefix("pulsar://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.decoder = FrameDecoder(64 * 1024 * 1024)
        self.pending: list[tuple[CommandType, Any, bytes]] = []

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, body: Any) -> None:
        self.sock.sendall(simple_frame(encode_command(body)))

    def recv(self) -> tuple[CommandType, Any, bytes]:
        """The next command from the server: (type, body, payload bytes after the command)."""
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            for f in self.decoder.feed(data):
                t, body = decode_command(f.buf, f.command_start, f.command_end)
                self.pending.append((t, body, f.buf[f.payload_start : f.end]))
        return self.pending.pop(0)

    def expect(self, kind: CommandType) -> Any:
        t, body, _ = self.recv()
        assert t is kind, f"expected {kind.name}, got {t.name}: {body}"
        return body

    def handshake(self) -> Connected:
        self.send(Connect(client_version="raw-test", protocol_version=20))
        return self.expect(CommandType.CONNECTED)

    def closed_by_server(self, timeout_s: float = 5.0) -> bool:
        """True once the server closes the connection (bytes it sends first are read and dropped)."""
        self.sock.settimeout(timeout_s)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


@contextlib.contextmanager
def raw_client(url: str) -> Iterator[RawClient]:
    c = RawClient(url)
    try:
        yield c
    finally:
        c.close()


# --- real clients in subprocesses --------------------------------------------------------------------
def run_client_script(script: str, *args: str, timeout_s: float = 60.0) -> str:
    """Run a Python program (a real pulsar-client) in its own process; returns its stdout. The process is
    killed if it outlives ``timeout_s``; a non-zero exit fails with its stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"client process timed out after {timeout_s} s\nstdout:\n{out}\nstderr:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise AssertionError(f"client process failed ({proc.returncode})\nstdout:\n{out}\nstderr:\n{err}")
    return out


__all__ = [
    "CURSOR_FIELDS",
    "CodecError",
    "OP_TIMEOUT_S",
    "RECEIVE_MS",
    "RawClient",
    "batch_acks",
    "client_for",
    "cursor_state",
    "quiet_client",
    "raw_client",
    "receive_all",
    "run_client_script",
    "served_lab",
    "sticky_selection",
    "wait_until",
]
