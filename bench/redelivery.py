"""What redelivery costs: end-to-end messages/s with 10% negative acks, with the ack timeout on, and with a DLQ,
beside the plain path (same workload otherwise).

Run: ``.venv/bin/python bench/redelivery.py [--messages N] [--repeat R] [--batching] [--log-off]``.

Workload of one case (one `pulsarlab.Lab`, profile 4.0, seed 1): one non-partitioned topic, one Shared
subscription with 4 consumers (``receiver_queue_size`` 1000, default ack grouping 100 ms / 1000 acks), one
producer sending N messages of 100 bytes with ``send_async`` in rounds of 1000 (batching off unless
``--batching``). After each round every consumer takes what its queue holds: it acknowledges a message, except
that in the "nack" cases it negatively acknowledges every 10th message on its first delivery (10% of the
messages come back once, after ``negative_ack_redelivery_delay_ms`` = 100 ms, and are then acked); virtual time
advances 10 ms per round, and at the end until every message is acknowledged. Cases:

* ``plain``: no ack timeout, no negative acks, no dead-letter policy - the hot path;
* ``nack10``: 10% negative acks;
* ``ack_timeout``: ``unacked_messages_timeout_ms`` 10 s (every message is tracked, none times out);
* ``nack10_ack_timeout``: both;
* ``dlq``: a ``ConsumerDeadLetterPolicy(max_redeliver_count=1)`` and the 10% negatively acknowledged on every
  delivery, so they go to the dead-letter topic after their second delivery.

messages/s = N / wall time of the case (setup excluded); every figure is the best of ``--repeat`` runs in this
one run (the machine may be shared: compare the figures of one run). Each case checks its outcome (backlog 0,
the expected number of redeliveries and dead letters). Prints one line per case, the cost of each beside
``plain``, and ends with one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import pulsarlab as pl  # noqa: E402

TOPIC = "bench-redelivery"
CONSUMERS = 4
PAYLOAD = b"x" * 100
ROUND = 1000
ROUND_ADVANCE_MS = 10
NACK_EVERY = 10
NACK_DELAY_MS = 100
CASES = {
    "plain": dict(nack=False, ack_timeout=None, dlq=False),
    "nack10": dict(nack=True, ack_timeout=None, dlq=False),
    "ack_timeout": dict(nack=False, ack_timeout=10_000, dlq=False),
    "nack10_ack_timeout": dict(nack=True, ack_timeout=10_000, dlq=False),
    "dlq": dict(nack=True, ack_timeout=None, dlq=True),
}


def run_case(messages: int, *, nack: bool, ack_timeout: int | None, dlq: bool, batching: bool, log: bool) -> dict:
    lab = pl.Lab(version="4.0", seed=1, record_events=log)
    client = lab.client()
    options = dict(
        consumer_type=pl.ConsumerType.Shared,
        receiver_queue_size=1000,
        unacked_messages_timeout_ms=ack_timeout,
        negative_ack_redelivery_delay_ms=NACK_DELAY_MS,
    )
    if dlq:
        options["dead_letter_policy"] = pl.ConsumerDeadLetterPolicy(max_redeliver_count=1)
    consumers = [client.subscribe(TOPIC, "sub", consumer_name=f"c{i}", **options) for i in range(CONSUMERS)]
    producer = client.create_producer(TOPIC, batching_enabled=batching, batching_max_messages=100)
    received = nacked = 0
    gc.collect()
    start = time.perf_counter()
    sent = 0

    def consume() -> None:
        nonlocal received, nacked
        busy = True
        while busy:
            busy = False
            for c in consumers:
                queue = c._queue
                while queue:
                    msg = c.receive(0)
                    received += 1
                    busy = True
                    if nack and msg._data[0] == 0x6E and (dlq or msg._redelivery_count == 0):  # b"n...": the 10%
                        c.negative_acknowledge(msg)
                        nacked += 1
                    else:
                        c.acknowledge(msg)

    while sent < messages:
        for _ in range(min(ROUND, messages - sent)):
            producer.send_async((b"n" if nack and sent % NACK_EVERY == 0 else b"a") + PAYLOAD, None)
            sent += 1
        producer.flush()
        consume()
        lab.advance(ROUND_ADVANCE_MS)
    for _ in range(100_000):
        consume()
        if lab.scheduler.next_deadline() is None:
            break
        lab.advance(ROUND_ADVANCE_MS)
    consume()
    elapsed = time.perf_counter() - start
    stats = lab.admin.topics.stats(TOPIC)["subscriptions"]["sub"]
    expected_nacked = 0
    if nack:
        expected_nacked = -(-messages // NACK_EVERY) * (2 if dlq else 1)
    dead = 0
    dlq_topic = f"persistent://public/default/{TOPIC}-sub-DLQ"
    if dlq_topic in lab.service.topics:
        dead = lab.admin.topics.stats(dlq_topic)["msgInCounter"]
    ok = (
        stats["msgBacklog"] == 0
        and nacked == expected_nacked
        and (not dlq or dead == -(-messages // NACK_EVERY))
        and received == messages + (nacked - (dead if dlq else 0))
    )
    return {
        "seconds": elapsed,
        "msgs_per_s": messages / elapsed,
        "received": received,
        "nacked": nacked,
        "dead_lettered": dead,
        "events": len(lab.events),
        "ok": ok,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batching", action="store_true", help="producer batching on (100 messages)")
    parser.add_argument("--log-off", action="store_true", help="Lab(record_events=False)")
    args = parser.parse_args(argv)
    if args.messages < NACK_EVERY or args.repeat < 1:
        parser.error("--messages must be >= 10 and --repeat >= 1")
    results: dict[str, dict] = {}
    print(
        f"redelivery cost: {args.messages:,} messages of {len(PAYLOAD)} B, {CONSUMERS} Shared consumers, "
        f"batching {'on' if args.batching else 'off'}, event log {'off' if args.log_off else 'on'}, "
        f"best of {args.repeat}"
    )
    for name, case in CASES.items():
        best = None
        for _ in range(args.repeat):
            r = run_case(args.messages, batching=args.batching, log=not args.log_off, **case)
            if best is None or r["seconds"] < best["seconds"]:
                best = r
        assert best is not None
        results[name] = best
        plain = results["plain"]["msgs_per_s"]
        print(
            f"  {name:20} {best['msgs_per_s']:>10,.0f} msgs/s  {best['seconds']:6.2f} s  "
            f"x{best['msgs_per_s'] / plain:4.2f} of plain   received {best['received']:>7,}  "
            f"nacked {best['nacked']:>6,}  dead-lettered {best['dead_lettered']:>5,}  "
            f"{'ok' if best['ok'] else 'OUTCOME WRONG'}"
        )
    summary = {f"{name}_msgs_per_s": round(r["msgs_per_s"]) for name, r in results.items()}
    summary.update(
        {
            f"{name}_vs_plain": round(r["msgs_per_s"] / results["plain"]["msgs_per_s"], 3)
            for name, r in results.items()
            if name != "plain"
        }
    )
    summary.update(
        messages=args.messages,
        batching=args.batching,
        event_log=not args.log_off,
        all_ok=all(r["ok"] for r in results.values()),
    )
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
