"""A soak run: ``pulsarlab serve`` in a process of its own, N producer/consumer pairs of real clients for a while.

Run as a program (``python tests/soak_clients.py --pairs 100 --seconds 120``) or call `soak`. Each pair has a topic
of its own (``soak-<i>``), a producer (unbatched, one thread sending synchronously) and an Exclusive consumer (one
thread receiving and acknowledging), each a ``pulsar.Client`` of its own. The server's resident memory is sampled
every second from /proc. After the producers stop, the consumers drain until every message sent arrived or 60 s
pass. Returns (and prints, as JSON) the RSS samples, the messages sent and received, the missing and the duplicated
ones. The server runs with Pulsar's defaults: 50,000 entries per ledger, consumed ledgers trimmed, entries in bookie
storage on disk behind a bounded entry cache, its default event window (``broker_config`` adds settings).
Loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pulsar

REPO = Path(__file__).resolve().parents[1]
DRAIN_S = 60.0


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


def _quiet_client(url: str) -> pulsar.Client:
    return pulsar.Client(
        url, operation_timeout_seconds=30, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull)
    )


def soak(
    pairs: int,
    seconds: float,
    broker_config: tuple[str, ...] = (),
    sample_s: float = 1.0,
    on_sample: Any = None,
) -> dict[str, Any]:
    """Run the soak; ``on_sample(t, rss_kib, sent, received)`` is called at each sample."""
    server, url, _admin_url = start_server(*(arg for item in broker_config for arg in ("--broker-config", item)))
    clients: list[pulsar.Client] = []
    stop = threading.Event()
    sent = [0] * pairs
    received: list[dict[int, int]] = [{} for _ in range(pairs)]
    errors: list[str] = []
    try:
        producers, consumers = [], []
        for i in range(pairs):
            topic = f"persistent://public/default/soak-{i}"
            c = _quiet_client(url)
            clients.append(c)
            consumers.append(c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Exclusive))
            p = _quiet_client(url)
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
            got = received[i]
            consumer = consumers[i]
            try:
                while True:
                    if drained.is_set():
                        return
                    try:
                        msg = consumer.receive(timeout_millis=200)
                    except pulsar.Timeout:
                        if stop.is_set() and len(got) >= sent[i] and not producing[i].is_alive():
                            return
                        continue
                    n = int(msg.data())
                    got[n] = got.get(n, 0) + 1
                    consumer.acknowledge(msg)
            except Exception as e:  # noqa: BLE001 - reported in the result
                errors.append(f"consumer {i}: {e}")

        producing = [threading.Thread(target=produce, args=(i,), daemon=True) for i in range(pairs)]
        consuming = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(pairs)]
        for t in consuming + producing:
            t.start()
        samples: list[tuple[float, int]] = []
        t0 = time.monotonic()
        while (now := time.monotonic() - t0) < seconds:
            rss = rss_kib(server.pid)
            samples.append((round(now, 1), rss))
            if on_sample is not None:
                on_sample(now, rss, sum(sent), sum(sum(g.values()) for g in received))
            time.sleep(sample_s)
        samples.append((round(time.monotonic() - t0, 1), rss_kib(server.pid)))
        stop.set()
        for t in producing:
            t.join(timeout=30)
        deadline = time.monotonic() + DRAIN_S
        for t in consuming:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        drained.set()
        missing = sum(1 for i in range(pairs) for n in range(sent[i]) if n not in received[i])
        duplicates = sum(c - 1 for g in received for c in g.values() if c > 1)
        unexpected = sum(1 for i in range(pairs) for n in received[i] if n >= sent[i])
        return {
            "pairs": pairs,
            "seconds": seconds,
            "rss_kib": samples,
            "sent": sum(sent),
            "received": sum(len(g) for g in received),
            "missing": missing,
            "duplicates": duplicates,
            "unexpected": unexpected,
            "errors": errors[:10],
        }
    finally:
        stop.set()
        for c in clients:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing what is left
                pass
        stop_server(server)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    print(json.dumps(soak(args.pairs, args.seconds, tuple(args.broker_config))))


if __name__ == "__main__":
    main()
