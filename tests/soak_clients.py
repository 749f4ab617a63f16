"""A soak run: ``pulsarlab serve`` in a process of its own, N producer/consumer pairs of real clients for a while.

Run as a program (``python tests/soak_clients.py --pairs 100 --seconds 120``) or call `soak`. Each pair has a topic
of its own (``soak-<i>``), a producer (unbatched, one thread sending synchronously) and an Exclusive consumer (one
thread receiving and acknowledging), each a ``pulsar.Client`` of its own; the clients run in a process of their own
(`run_clients`). The server's resident memory is sampled every second from /proc. After the producers stop, the
consumers drain until every message sent arrived or 60 s pass. Returns (and prints, as JSON) the RSS samples, the
messages sent and received, the missing and the duplicated ones. The server runs with Pulsar's defaults: 50,000
entries per ledger, consumed ledgers trimmed, entries in bookie storage on disk behind a bounded entry cache, its
default event window (``broker_config`` adds settings). Loopback only.

A message received twice is counted by its cause, found from the message ids and the clients' own log
(`DuplicateCause`). Pulsar delivers at least once: a consumer that re-subscribes gets again what it had received
but the broker had not seen acknowledged (``PersistentDispatcherSingleActiveConsumer`` rewinds to the mark-delete
position; acks still in the client's grouping window, or unread when the connection closed, are gone), and a
producer that reconnects re-sends the message it had no receipt for, which the broker stores again
(``ProducerImpl.resendMessages``; deduplication is off by default). Connections close on a starved machine: the
broker closes one whose client did not answer its PING within the keepalive interval (30 s,
``ServerCnx.handleKeepAliveTimeout``), a client one whose broker did not. A duplicate neither explains is a fault.
"""

from __future__ import annotations

import argparse
import enum
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import IO, Any

import pulsar

REPO = Path(__file__).resolve().parents[1]
DRAIN_S = 60.0
EXAMPLES = 10  # duplicates listed per cause in the result
ROW = "soak-clients: "  # the start of each line the clients' process writes for `soak`


class DuplicateCause(str, enum.Enum):
    """Why a consumer received a message again."""

    REDELIVERED = "redelivered: the consumer re-subscribed before the broker had its ack (at-least-once)"
    RESENT = "stored twice: the producer re-sent it on a new connection without a receipt (no deduplication)"
    DISPATCHED_TWICE = "fault: the same entry delivered again with no re-subscription between"
    STORED_TWICE = "fault: stored twice though the producer did not reconnect while it was in flight"

    @property
    def fault(self) -> bool:
        return self in (DuplicateCause.DISPATCHED_TWICE, DuplicateCause.STORED_TWICE)


def _packed(msg: Any) -> int:
    mid = msg.message_id()
    return (mid.ledger_id() << 32) | mid.entry_id()


def _position(packed: int) -> str:
    return f"{packed >> 32}:{packed & 0xFFFFFFFF}"


class PairRecord:
    """What one pair's consumer received (message ``n`` is the producer's n-th send) and when its clients
    reconnected: the position and delivery index of each message's first delivery, every delivery after that,
    the consumer's delivery count at each re-subscription, the message in flight at each producer reconnect."""

    def __init__(self) -> None:
        self.first = array("q")  # n -> (ledger << 32 | entry) of its first delivery, -1 before
        self.first_at = array("q")  # n -> the consumer's delivery count when it first arrived
        self.deliveries = 0
        self.distinct = 0
        self.again: list[tuple[int, int, int]] = []  # (n, packed position, delivery count) of each later delivery
        self.resubscribed: list[int] = []
        self.in_flight_at_reconnect: set[int] = set()
        self.consumers_created = 0
        self.producers_created = 0

    def delivered(self, n: int, packed: int) -> None:
        if n >= len(self.first):
            grow = n + 1 - len(self.first)
            self.first.extend([-1] * grow)
            self.first_at.extend([-1] * grow)
        if self.first[n] < 0:
            self.first[n] = packed
            self.first_at[n] = self.deliveries
            self.distinct += 1
        else:
            self.again.append((n, packed, self.deliveries))
        self.deliveries += 1

    def holds(self, n: int) -> bool:
        return n < len(self.first) and self.first[n] >= 0

    def cause(self, n: int, packed: int, at: int) -> DuplicateCause:
        if packed == self.first[n]:
            first_at = self.first_at[n]
            if any(first_at < mark <= at for mark in self.resubscribed):
                return DuplicateCause.REDELIVERED
            return DuplicateCause.DISPATCHED_TWICE
        return DuplicateCause.RESENT if n in self.in_flight_at_reconnect else DuplicateCause.STORED_TWICE


# the C++ client's log lines that mark a (re)created consumer or producer of a soak topic
_CREATED = re.compile(r"\[persistent://public/default/soak-(\d+), ([^\]]*)\] Created (consumer|producer) on broker")
_BRACKETED = re.compile(r"\[[^\]]*\]")  # addresses, topic and consumer names
_NUMBER = re.compile(r"\d+")


def _kind(text: str) -> str:
    """A log line without its names, addresses and numbers: what kind of event it tells."""
    return " ".join(_NUMBER.sub("N", _BRACKETED.sub("", text)).split())


class ClientLog(logging.Handler):
    """The real clients' log (one per process: the C++ client's logger is global): re-subscriptions and producer
    reconnects per pair, and the warnings and errors by kind (addresses and numbers taken out)."""

    def __init__(self, records: list[PairRecord], sent: list[int]) -> None:
        super().__init__(logging.INFO)
        self.records = records
        self.sent = sent
        self.warnings: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            self.warnings[_kind(text)] += 1
        m = _CREATED.search(text)
        if m is None or int(m.group(1)) >= len(self.records):
            return
        i = int(m.group(1))
        rec = self.records[i]
        if m.group(3) == "consumer":
            rec.consumers_created += 1
            if rec.consumers_created > 1:
                rec.resubscribed.append(rec.deliveries)
        else:
            rec.producers_created += 1
            if rec.producers_created > 1:
                rec.in_flight_at_reconnect.add(self.sent[i])  # sent[i] counts the sends that returned


def rss_kib(pid: int) -> int:
    """The process's resident set size (VmRSS) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def start_server(*extra: str) -> tuple[subprocess.Popen, str, str]:
    """``python -m pulsarlab serve`` on free loopback ports; returns the process, its service URL and its admin
    REST URL."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pulsarlab",
            "serve",
            "--port",
            "0",
            "--admin-port",
            "0",
            "--log-level",
            "warning",
            *extra,
        ],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = server.stdout.readline()  # type: ignore[union-attr]
    if "listening on pulsar://127.0.0.1:" not in line:
        server.kill()
        raise RuntimeError(f"pulsarlab serve did not start: {line!r} {server.stderr.read()!r}")  # type: ignore[union-attr]
    return server, line.split(" listening on ")[1].split()[0], line.split("admin REST on ")[1].split(";")[0]


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _server_closes(stream: IO[str], closes: Counter[str], other: list[str]) -> None:
    """Read the server's log (info level) to its end: why it closed connections, and any other warning."""
    for line in stream:
        _when, sep, reason = line.partition(": ")
        if "closing connection from" in _when and sep:
            closes[_kind(reason)] += 1
        elif " connection from " not in line and len(other) < 100:
            other.append(line.rstrip())


def _soak_client(url: str, log: logging.Logger) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=30, logger=log)


def run_clients(url: str, pairs: int, seconds: float, sample_s: float, emit: Any) -> dict[str, Any]:
    """The clients' side of the soak, in a process of its own (the C++ client keeps the first logger any client of
    the process was given, and the soak needs its log): ``emit(t, sent, received)`` at each sample; returns the
    message accounting."""
    stop = threading.Event()
    sent = [0] * pairs
    records = [PairRecord() for _ in range(pairs)]
    client_log = ClientLog(records, sent)
    log = logging.getLogger("pulsarlab.soak")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(client_log)
    clients: list[pulsar.Client] = []
    errors: list[str] = []
    try:
        producers, consumers = [], []
        for i in range(pairs):
            topic = f"persistent://public/default/soak-{i}"
            c = _soak_client(url, log)
            clients.append(c)
            consumers.append(c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Exclusive))
            p = _soak_client(url, log)
            clients.append(p)
            producers.append(p.create_producer(topic, batching_enabled=False, send_timeout_millis=0))

        def produce(i: int) -> None:
            n = 0
            try:
                while not stop.is_set():
                    producers[i].send(str(n).encode())
                    n += 1
                    sent[i] = n
            except Exception as e:  # noqa: BLE001 - reported in the result
                errors.append(f"producer {i}: {e}")

        drained = threading.Event()

        def consume(i: int) -> None:
            rec = records[i]
            consumer = consumers[i]
            try:
                while True:
                    if drained.is_set():
                        return
                    try:
                        msg = consumer.receive(timeout_millis=200)
                    except pulsar.Timeout:
                        if stop.is_set() and rec.distinct >= sent[i] and not producing[i].is_alive():
                            return
                        continue
                    rec.delivered(int(msg.data()), _packed(msg))
                    consumer.acknowledge(msg)
            except Exception as e:  # noqa: BLE001 - reported in the result
                errors.append(f"consumer {i}: {e}")

        producing = [threading.Thread(target=produce, args=(i,), daemon=True) for i in range(pairs)]
        consuming = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(pairs)]
        for t in consuming + producing:
            t.start()
        t0 = time.monotonic()
        while (now := time.monotonic() - t0) < seconds:
            emit(now, sum(sent), sum(r.deliveries for r in records))
            time.sleep(sample_s)
        emit(time.monotonic() - t0, sum(sent), sum(r.deliveries for r in records))
        stop.set()
        for t in producing:
            t.join(timeout=30)
        deadline = time.monotonic() + DRAIN_S
        for t in consuming:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        drained.set()
        return {
            "sent": sum(sent),
            "received": sum(r.distinct for r in records),
            "missing": sum(1 for i, r in enumerate(records) for n in range(sent[i]) if not r.holds(n)),
            "unexpected": sum(1 for i, r in enumerate(records) for n in range(sent[i], len(r.first)) if r.holds(n)),
            "errors": errors[:10],
            **duplicate_report(records),
            "resubscriptions": sum(len(r.resubscribed) for r in records),
            "producer_reconnects": sum(max(0, r.producers_created - 1) for r in records),
            "client_warnings": dict(client_log.warnings.most_common(10)),
        }
    finally:
        stop.set()
        for c in clients:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing what is left
                pass
        log.removeHandler(client_log)


def soak(
    pairs: int,
    seconds: float,
    broker_config: tuple[str, ...] = (),
    sample_s: float = 1.0,
    on_sample: Any = None,
) -> dict[str, Any]:
    """Run the soak (the server and the clients each in a process of their own); ``on_sample(t, rss_kib, sent,
    delivered)`` is called at each sample (deliveries count every copy of a message)."""
    server, url, _admin_url = start_server(
        "--log-level", "info", *(arg for item in broker_config for arg in ("--broker-config", item))
    )
    closes: Counter[str] = Counter()
    server_lines: list[str] = []
    reader = threading.Thread(target=_server_closes, args=(server.stderr, closes, server_lines), daemon=True)
    reader.start()
    clients = subprocess.Popen(
        [sys.executable, __file__, "--clients", url, "--pairs", str(pairs), "--seconds", str(seconds)]
        + ["--sample-s", str(sample_s)],
        stdout=subprocess.PIPE,
        text=True,
    )
    samples: list[tuple[float, int]] = []
    result: dict[str, Any] = {}
    try:
        for line in clients.stdout:  # type: ignore[union-attr]
            if not line.startswith(ROW):  # the C++ client logs to stdout once Python's logging is gone
                continue
            row = json.loads(line[len(ROW) :])
            if "result" in row:
                result = row["result"]
                continue
            rss = rss_kib(server.pid)
            samples.append((round(row["t"], 1), rss))
            if on_sample is not None:
                on_sample(row["t"], rss, row["sent"], row["received"])
        clients.wait(timeout=60)
    finally:
        if clients.poll() is None:
            clients.kill()
            clients.wait()
        stop_server(server)
        reader.join(timeout=10)
    if not result:
        raise RuntimeError(f"the soak's clients ended ({clients.returncode}) without a result")
    return {
        "pairs": pairs,
        "seconds": seconds,
        "rss_kib": samples,
        **result,
        "server_closes": dict(closes.most_common(10)),
        "server_log": server_lines[:10],
    }


def duplicate_report(records: list[PairRecord]) -> dict[str, Any]:
    """Every later delivery of a message, by cause (`DuplicateCause`): the count, the faults among them, and a few
    examples of each cause (pair, message n, first and later position)."""
    by_cause: Counter[DuplicateCause] = Counter()
    examples: dict[str, list[str]] = {}
    for i, rec in enumerate(records):
        for n, packed, at in rec.again:
            cause = rec.cause(n, packed, at)
            by_cause[cause] += 1
            shown = examples.setdefault(cause.name, [])
            if len(shown) < EXAMPLES:
                shown.append(f"soak-{i} #{n}: {_position(rec.first[n])} then {_position(packed)}")
    return {
        "duplicates": sum(by_cause.values()),
        "duplicates_by_cause": {cause.value: count for cause, count in by_cause.most_common()},
        "duplicate_faults": sum(count for cause, count in by_cause.items() if cause.fault),
        "duplicate_examples": examples,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--clients", metavar="URL", help="run only the clients against URL, one JSON line per sample")
    ap.add_argument("--sample-s", type=float, default=1.0)
    args = ap.parse_args()
    if args.clients:

        def emit(t: float, sent: int, received: int) -> None:
            print(ROW + json.dumps({"t": t, "sent": sent, "received": received}), flush=True)

        result = run_clients(args.clients, args.pairs, args.seconds, args.sample_s, emit)
        print(ROW + json.dumps({"result": result}), flush=True)
        return
    print(json.dumps(soak(args.pairs, args.seconds, tuple(args.broker_config), args.sample_s)))


if __name__ == "__main__":
    main()
