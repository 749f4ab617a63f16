"""Benchmark of the two delayed-delivery trackers: in-memory state bytes and add/release throughput.

For each message count (10^5, 10^6, 10^7 by default) one workload: a cursor reading ledgers of 50,000
entries (managedLedgerMaxEntriesPerLedger) in order at t = 0, every message delayed by a seeded uniform
1 minute .. 24 hours. Each tracker runs on broker defaults (tick 1000 ms, not strict):

* in-memory: `InMemoryDelayedDeliveryTracker` of the default profile (4.0: a TripleLongPriorityQueue),
  fed by scalar ``add_message`` calls;
* bucket: `BucketDelayedDeliveryTracker` (min 50,000 indexes per bucket, 300 s segments, at most 5,000
  indexes per segment, no merging, in-memory snapshot storage), fed by ``add_messages`` in chunks of
  ``--chunk`` (same semantics as the scalar calls); its scalar ``add_message`` rate is printed too.

"In-memory state bytes" is each tracker's ``memory_bytes()``: the JVM bytes its structures would take,
priced per item as `pulsarlab.broker.delayed.jvm_memory` documents (stored snapshots are not counted).
Releases: the clock jumps past the last deliverAt and ``get_scheduled_messages(10_000)`` drains it.
Goals are printed as met or not, never asserted: bucket state < 5% of the in-memory state at the largest
count and flat as messages grow (here: bytes ~ messages^k with k <= 0.25 between the smallest and the
largest count; the in-memory tracker's k is 1), and >= 500,000 adds/s for either tracker.

End to end through the Lab (the wired cost): ``--e2e-messages`` (20,000) messages, each delayed by a seeded
uniform 1 minute .. 1 hour, are published to a topic with one Shared consumer (event log off), held by the
subscription's tracker, released as the clock moves in 10 s steps, received and acknowledged; for each tracker
(the bucket one with 5,000 entries per ledger and 5,000 indexes per bucket, so it seals) the line gives
messages/s over the whole run and the publish part alone. The last line is one JSON object (adds/s and
releases/s at the largest count, and the end-to-end messages/s).

Usage: python bench/delayed.py [--counts 100000,1000000,10000000] [--chunk 10000] [--seed 7] [--e2e-messages N]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsarlab as pl  # noqa: E402
from pulsarlab.broker.delayed.bucket.snapshot import InMemoryBucketSnapshotStorage  # noqa: E402
from pulsarlab.broker.delayed.bucket.tracker import BUCKET_TRACKER_FACTORY, BucketDelayedDeliveryTracker  # noqa: E402
from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker  # noqa: E402
from pulsarlab.clock import Scheduler  # noqa: E402

ENTRIES_PER_LEDGER = 50_000
FIRST_LEDGER = 3
MIN_DELAY_MS = 60_000
MAX_DELAY_MS = 86_400_000
TICK_MS = 1000
RELEASE_BATCH = 10_000
ADDS_GOAL = 500_000
SHARE_GOAL = 0.05
FLAT_EXPONENT = 0.25  # "flat": bytes grow at most as messages^0.25 (100x messages -> at most ~3.2x bytes)


def workload(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    i = np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    return (
        FIRST_LEDGER + i // ENTRIES_PER_LEDGER,
        i % ENTRIES_PER_LEDGER,
        rng.integers(MIN_DELAY_MS, MAX_DELAY_MS, n, dtype=np.int64),
    )


def drain(tracker, now: list[int], n: int) -> float:
    """Releases per second when everything is due; checks every message comes out once."""
    now[0] = MAX_DELAY_MS + TICK_MS
    released = 0
    t0 = time.perf_counter()
    while True:
        batch = tracker.get_scheduled_messages(RELEASE_BATCH)
        if not batch:
            break
        released += len(batch)
    dt = time.perf_counter() - t0
    if released != n or tracker.number_of_delayed_messages() != 0:
        raise SystemExit(f"{type(tracker).__name__} released {released} of {n} messages")
    return n / dt


def run_in_memory(ledgers, entries, times) -> dict[str, float]:
    now = [0]
    tracker = InMemoryDelayedDeliveryTracker(
        Scheduler(), lambda: None, profile="4.0", tick_time_millis=TICK_MS, clock=lambda: now[0]
    )
    ls, es, ts = ledgers.tolist(), entries.tolist(), times.tolist()
    add = tracker.add_message
    t0 = time.perf_counter()
    for i in range(len(ls)):
        add(ls[i], es[i], ts[i])
    adds = len(ls) / (time.perf_counter() - t0)
    del ls, es, ts
    memory = tracker.memory_bytes()
    releases = drain(tracker, now, len(ledgers))
    return {"bytes": memory, "adds": adds, "releases": releases}


def bucket_tracker(now: list[int]) -> BucketDelayedDeliveryTracker:
    return BucketDelayedDeliveryTracker(
        Scheduler(),
        lambda: None,
        tick_time_millis=TICK_MS,
        clock=lambda: now[0],
        snapshot_storage=InMemoryBucketSnapshotStorage(),
        cursor_properties={},
    )


def run_bucket(ledgers, entries, times, chunk: int, scalar_limit: int) -> dict[str, float]:
    now = [0]
    tracker = bucket_tracker(now)
    t0 = time.perf_counter()
    for s in range(0, len(ledgers), chunk):
        tracker.add_messages(ledgers[s : s + chunk], entries[s : s + chunk], times[s : s + chunk])
    adds = len(ledgers) / (time.perf_counter() - t0)
    breakdown = tracker.memory_breakdown()
    memory = sum(breakdown.values())
    buckets = len(tracker.buckets())
    shared = tracker.shared_queue_size()
    stored = tracker.snapshot_storage.total_length()
    releases = drain(tracker, now, len(ledgers))
    del tracker
    gc.collect()
    scalar = float("nan")
    m = min(len(ledgers), scalar_limit)
    if m:
        now2 = [0]
        other = bucket_tracker(now2)
        ls, es, ts = ledgers[:m].tolist(), entries[:m].tolist(), times[:m].tolist()
        add = other.add_message
        t0 = time.perf_counter()
        for i in range(m):
            add(ls[i], es[i], ts[i])
        scalar = m / (time.perf_counter() - t0)
    return {
        "bytes": memory,
        "adds": adds,
        "releases": releases,
        "scalar_adds": scalar,
        "buckets": buckets,
        "shared": shared,
        "stored": stored,
        "breakdown": breakdown,
    }


E2E_STEP_MS = 10_000
E2E_MAX_DELAY_MS = 3_600_000
E2E_BUCKET_CONFIG = {
    "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
    "managedLedgerMaxEntriesPerLedger": 5_000,
    "delayedDeliveryMinIndexCountPerBucket": 5_000,
}


def run_end_to_end(tracker: str, n: int, seed: int) -> dict[str, float]:
    """Publish n delayed messages through a Lab, let them fall due, receive and ack them; messages/s."""
    conf = E2E_BUCKET_CONFIG if tracker == "bucket" else {"managedLedgerMaxEntriesPerLedger": 5_000}
    lab = pl.Lab(version="4.0", seed=seed, broker_config=conf, record_events=False)
    client = lab.client()
    consumer = client.subscribe("bench-delayed", "s", consumer_type=pl.ConsumerType.Shared)
    producer = client.create_producer("bench-delayed")
    delays = np.random.default_rng(seed).integers(MIN_DELAY_MS, E2E_MAX_DELAY_MS, n).tolist()
    payload = b"x" * 100
    t0 = time.perf_counter()
    for d in delays:
        producer.send_async(payload, None, deliver_after=timedelta(milliseconds=d))
    published = time.perf_counter() - t0
    received = 0
    while received < n:
        lab.advance(E2E_STEP_MS)
        while consumer.receiver_queue:
            consumer.acknowledge(consumer.receive(timeout_millis=0))
            received += 1
        if lab.now() > E2E_MAX_DELAY_MS + 10 * E2E_STEP_MS:
            raise SystemExit(f"end to end ({tracker}): {received} of {n} messages received")
    lab.run_until_idle()
    total = time.perf_counter() - t0
    backlog = lab.admin.topics.stats("bench-delayed")["subscriptions"]["s"]["msgBacklog"]
    if backlog:
        raise SystemExit(f"end to end ({tracker}): {backlog} messages left in the backlog")
    return {"msgs": n / total, "publish": n / published}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100000,1000000,10000000")
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--scalar-limit",
        type=int,
        default=1_000_000,
        help="messages fed through the bucket tracker's scalar add_message for its rate",
    )
    parser.add_argument(
        "--e2e-messages",
        type=int,
        default=20_000,
        help="delayed messages published, released and received through the Lab (0: skip)",
    )
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    in_memory_bytes: dict[int, int] = {}
    bucket_bytes: dict[int, int] = {}
    rates: dict[str, float] = {}
    for n in counts:
        ledgers, entries, times = workload(n, args.seed)
        im = run_in_memory(ledgers, entries, times)
        gc.collect()
        bk = run_bucket(ledgers, entries, times, args.chunk, args.scalar_limit)
        gc.collect()
        in_memory_bytes[n], bucket_bytes[n] = im["bytes"], bk["bytes"]
        rates = {
            "in_memory_adds": im["adds"],
            "bucket_adds": bk["adds"],
            "in_memory_releases": im["releases"],
            "bucket_releases": bk["releases"],
        }
        print(
            f"{n:>11,} messages | in-memory: {im['bytes']:>13,} B, {im['adds']:>11,.0f} adds/s, "
            f"{im['releases']:>11,.0f} releases/s"
        )
        print(
            f"{'':>11}          | bucket:    {bk['bytes']:>13,} B, {bk['adds']:>11,.0f} adds/s "
            f"(bulk, chunks of {args.chunk:,}; scalar {bk['scalar_adds']:,.0f}/s), {bk['releases']:>11,.0f} releases/s"
        )
        print(
            f"{'':>11}          | bucket state = {bk['bytes'] / im['bytes']:.2%} of in-memory; {bk['buckets']} "
            f"sealed buckets, {bk['shared']:,} indexes in the shared queue, {bk['stored']:,} B stored; "
            + ", ".join(f"{k} {v:,}" for k, v in bk["breakdown"].items())
        )
    largest, smallest = counts[-1], counts[0]
    share = bucket_bytes[largest] / in_memory_bytes[largest]
    print(
        f"goal bucket state < {SHARE_GOAL:.0%} of in-memory at {largest:,}: {share:.2%} -> "
        f"{'met' if share < SHARE_GOAL else 'NOT met'}"
    )
    if largest > smallest:
        span = math.log(largest / smallest)
        k_bucket = math.log(bucket_bytes[largest] / bucket_bytes[smallest]) / span
        k_in_memory = math.log(in_memory_bytes[largest] / in_memory_bytes[smallest]) / span
        print(
            f"goal bucket state flat as messages grow (bytes ~ messages^k, k <= {FLAT_EXPONENT}): "
            f"k = {k_bucket:.2f} (in-memory k = {k_in_memory:.2f}), x{bucket_bytes[largest] / bucket_bytes[smallest]:.1f} "
            f"bytes for x{largest / smallest:,.0f} messages -> {'met' if k_bucket <= FLAT_EXPONENT else 'NOT met'}"
        )
    for who in ("in_memory", "bucket"):
        rate = rates[f"{who}_adds"]
        print(
            f"goal >= {ADDS_GOAL:,} adds/s ({who.replace('_', '-')}, {largest:,} messages): {rate:,.0f}/s -> "
            f"{'met' if rate >= ADDS_GOAL else 'NOT met'}"
        )
    e2e: dict[str, dict[str, float]] = {}
    if args.e2e_messages > 0:
        for who in ("in-memory", "bucket"):
            e2e[who] = run_end_to_end(who, args.e2e_messages, args.seed)
            gc.collect()
        print(
            f"end to end through the Lab ({args.e2e_messages:,} delayed messages published, held, released, "
            f"received, acked; Shared, event log off): in-memory {e2e['in-memory']['msgs']:,.0f} msgs/s "
            f"(publish {e2e['in-memory']['publish']:,.0f}/s), bucket {e2e['bucket']['msgs']:,.0f} msgs/s "
            f"(publish {e2e['bucket']['publish']:,.0f}/s)"
        )
    print(
        json.dumps(
            {
                "in_memory_bytes": {str(k): v for k, v in in_memory_bytes.items()},
                "bucket_bytes": {str(k): v for k, v in bucket_bytes.items()},
                "in_memory_adds_per_s": round(rates["in_memory_adds"]),
                "bucket_adds_per_s": round(rates["bucket_adds"]),
                "in_memory_releases_per_s": round(rates["in_memory_releases"]),
                "bucket_releases_per_s": round(rates["bucket_releases"]),
                **(
                    {
                        "e2e_messages": args.e2e_messages,
                        "e2e_in_memory_msgs_per_s": round(e2e["in-memory"]["msgs"]),
                        "e2e_bucket_msgs_per_s": round(e2e["bucket"]["msgs"]),
                    }
                    if e2e
                    else {}
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
