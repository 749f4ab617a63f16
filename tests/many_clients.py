"""Many real pulsar-client clients against one ``pulsarlab serve``: a bounded load with a ledger of every message.

Run as a program (its own process, so the clients do not share the server's interpreter):
``python tests/many_clients.py URL [--topics 20] [--producers 100] [--consumers 100] [--messages 20]``.
Every producer and every consumer is a ``pulsar.Client`` of its own (one connection each). Topic ``i`` uses
subscription type ``TYPES[i % 4]``: Exclusive topics give each of their consumers a subscription of its own
(each gets every message); Failover, Shared and Key_Shared topics put their consumers on one subscription.
Producers send unbatched messages ``topic|producer|n`` with key ``k<n % 7>`` from one thread each; consumers
receive and acknowledge from one thread each. The run ends when every subscription has every message sent to its
topic, or at ``--deadline`` seconds. Prints one JSON object: the ledger (sent, received, acknowledged,
duplicates, missing, order violations), the wall times and the aggregate delivered messages per second.
Loopback only: the URL must be a 127.0.0.0/8 or ::1 address.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import threading
import time
from collections import Counter, defaultdict
from urllib.parse import urlparse

import pulsar

TYPES = ["Exclusive", "Failover", "Shared", "KeyShared"]
RECEIVE_MS = 200


def _loopback(url: str) -> None:
    host = urlparse(url).hostname or ""
    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        raise SystemExit(f"many_clients: {url} is not a loopback address")


def _client(url: str) -> pulsar.Client:
    return pulsar.Client(
        url, operation_timeout_seconds=30, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull)
    )


def run(url: str, topics: int, producers: int, consumers: int, messages: int, deadline_s: float) -> dict:
    _loopback(url)
    names = [f"persistent://public/default/load-{i}" for i in range(topics)]
    kinds = {t: TYPES[i % len(TYPES)] for i, t in enumerate(names)}
    lock = threading.Lock()
    received: dict[tuple[str, str], Counter] = defaultdict(Counter)  # (topic, subscription) -> payload counts
    redelivered: Counter = Counter()
    order_violations: list[str] = []
    acked = 0
    stop = threading.Event()
    clients: list[pulsar.Client] = []

    t_connect = time.perf_counter()
    subs: list[tuple[str, str, object]] = []
    for j in range(consumers):
        topic = names[j % topics]
        kind = kinds[topic]
        sub = f"s-{j}" if kind == "Exclusive" else "s"
        c = _client(url)
        clients.append(c)
        consumer = c.subscribe(
            topic,
            sub,
            consumer_type=getattr(pulsar.ConsumerType, kind),
            consumer_name=f"c-{j}",
            initial_position=pulsar.InitialPosition.Earliest,
        )
        subs.append((topic, sub, consumer))
    makers = []
    for j in range(producers):
        c = _client(url)
        clients.append(c)
        makers.append(
            (names[j % topics], j, c.create_producer(names[j % topics], producer_name=f"p-{j}", batching_enabled=False))
        )
    connected_s = time.perf_counter() - t_connect
    sent_per_topic = {t: 0 for t in names}
    for topic, _, _ in makers:
        sent_per_topic[topic] += messages
    expected = {(t, s): sent_per_topic[t] for t, s, _ in subs}

    def consume(topic: str, sub: str, consumer) -> None:
        nonlocal acked
        last_seen: dict[tuple[str, str], int] = {}
        ordered = kinds[topic] in ("Exclusive", "Failover", "KeyShared")
        while not stop.is_set():
            try:
                msg = consumer.receive(RECEIVE_MS)
            except pulsar.Timeout:
                continue
            payload = msg.data().decode()
            _, producer, n = payload.split("|")
            if ordered and msg.redelivery_count() == 0:
                key = (producer, msg.partition_key())  # per producer (and key: Key_Shared orders per key)
                if last_seen.get(key, -1) >= int(n):
                    with lock:
                        order_violations.append(f"{topic}/{sub}: {payload} after n={last_seen[key]}")
                last_seen[key] = int(n)
            consumer.acknowledge(msg)
            with lock:
                received[(topic, sub)][payload] += 1
                if msg.redelivery_count() > 0:
                    redelivered[(topic, sub, payload)] += 1
                acked += 1

    def produce(topic: str, j: int, producer) -> None:
        for n in range(messages):
            producer.send(f"{topic}|p-{j}|{n}".encode(), partition_key=f"k{n % 7}")

    consumer_threads = [threading.Thread(target=consume, args=s, daemon=True) for s in subs]
    for th in consumer_threads:
        th.start()
    t0 = time.perf_counter()
    producer_threads = [threading.Thread(target=produce, args=m, daemon=True) for m in makers]
    for th in producer_threads:
        th.start()
    for th in producer_threads:
        th.join(max(0.0, deadline_s - (time.perf_counter() - t0)))
    sent_s = time.perf_counter() - t0

    def complete() -> bool:
        with lock:
            return all(len(received[k]) >= n for k, n in expected.items())

    while not complete() and time.perf_counter() - t0 < deadline_s:
        time.sleep(0.02)
    delivered_s = time.perf_counter() - t0
    stop.set()
    for th in consumer_threads:
        th.join(5)
    for _, _, consumer in subs:
        consumer.close()  # flushes pending acks
    for _, _, producer in makers:
        producer.close()
    for c in clients:
        c.close()

    missing = {f"{t}/{s}": n - len(received[(t, s)]) for (t, s), n in expected.items() if len(received[(t, s)]) < n}
    duplicates = [(t, s, p) for (t, s), counts in received.items() for p, k in counts.items() if k > 1]
    unexplained = [f"{t}/{s}: {p}" for t, s, p in duplicates if (t, s, p) not in redelivered]
    total_received = sum(sum(c.values()) for c in received.values())
    return {
        "topics": topics,
        "producers": producers,
        "consumers": consumers,
        "clients": len(clients),
        "sent": sum(sent_per_topic.values()),
        "expected_deliveries": sum(expected.values()),
        "received": total_received,
        "acknowledged": acked,
        "missing": missing,
        "duplicates": len(duplicates),
        "unexplained_duplicates": unexplained[:10],
        "order_violations": order_violations[:10],
        "subscriptions": sorted({f"{t}|{s}|{kinds[t]}" for t, s in expected}),
        "connect_s": round(connected_s, 3),
        "send_s": round(sent_s, 3),
        "deliver_s": round(delivered_s, 3),
        "msgs_per_s": round(total_received / delivered_s, 1) if delivered_s > 0 else 0.0,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--producers", type=int, default=100)
    p.add_argument("--consumers", type=int, default=100)
    p.add_argument("--messages", type=int, default=20, help="messages per producer")
    p.add_argument("--deadline", type=float, default=60.0, help="seconds before the run gives up waiting")
    a = p.parse_args()
    print(json.dumps(run(a.url, a.topics, a.producers, a.consumers, a.messages, a.deadline)), flush=True)


if __name__ == "__main__":
    main()
