"""Checkers for the delayed-delivery lab (labs/09-delayed-delivery.ipynb): when delayed messages arrive, which
subscription types hold them back, and what a bucket tracker keeps across a broker restart.

Models no Pulsar class; every right answer is computed by running the lab's model (docs/guide/delayed-delivery.md: the
cutoff ``now + tick`` and the timer rule; only Shared and Key_Shared track delays; sealed buckets are stored, the
mutable bucket is not). Each checker returns a `CheckResult` that says OK, or what is wrong and which rule was
missed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Sequence

from pulsarlab.broker.delayed.bucket.tracker import BUCKET_TRACKER_FACTORY
from pulsarlab.errors import Timeout
from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerType

TYPES = {
    "Exclusive": ConsumerType.Exclusive,
    "Failover": ConsumerType.Failover,
    "Shared": ConsumerType.Shared,
    "Key_Shared": ConsumerType.KeyShared,
}


def _received_at(lab: Lab, consumer: Any, count: int, until: int) -> dict[bytes, int]:
    got: dict[bytes, int] = {}
    while len(got) < count:
        try:
            msg = consumer.receive(timeout_millis=max(until - lab.now(), 0))
        except Timeout:
            break
        got.setdefault(msg.data(), lab.now())
        consumer.acknowledge(msg)
    return got


# ---------------------------------------------------------------------------------------------
# Exercise: when does each delayed message arrive?


def delivery_times_answer(
    delays_ms: Sequence[int], tick_ms: int = 1000, strict: bool = False, version: str = "4.0"
) -> list[int]:
    """The virtual time at which a Shared consumer receives each message, sent at t = 0 with ``deliver_after``."""
    lab = Lab(
        version=version,
        broker_config={"delayedDeliveryTickTimeMillis": tick_ms, "isDelayedDeliveryDeliverAtTimeStrict": strict},
    )
    client = lab.client()
    consumer = client.subscribe("delays", "sub", consumer_type=ConsumerType.Shared, lab_ack_group_time_ms=0)
    producer = client.create_producer("delays")
    for i, d in enumerate(delays_ms):
        producer.send(f"{i}".encode(), deliver_after=timedelta(milliseconds=d))
    got = _received_at(lab, consumer, len(delays_ms), max(delays_ms, default=0) + 10 * tick_ms + 1)
    return [got[f"{i}".encode()] for i in range(len(delays_ms))]


@exercise(
    todo="write the list of receive times (ms), one per message in send order",
    see=(
        'Lab 9, section 3 ("The in-memory tracker")',
        "docs/guide/delayed-delivery.md#in-memory-tracker",
    ),
)
def check_delivery_times(
    answer: Any,
    delays_ms: Sequence[int] = (500, 1500, 2200, 3000, 5000),
    tick_ms: int = 1000,
    strict: bool = False,
    version: str = "4.0",
) -> CheckResult:
    """Check ``answer`` = the receive time (ms) of each message, in send order, for messages sent at t = 0 with
    ``deliver_after`` = ``delays_ms`` on a Shared subscription (tick ``tick_ms``, strict mode ``strict``)."""
    if (
        not isinstance(answer, (list, tuple))
        or len(answer) != len(delays_ms)
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in answer)
    ):
        return failed([f"answer should be a list of {len(delays_ms)} ints: the receive time of each message (ms)"])
    want = delivery_times_answer(delays_ms, tick_ms, strict, version)
    problems = []
    for i, (got, right, delay) in enumerate(zip(answer, want, delays_ms)):
        if got == right:
            continue
        line = f"message {i} (deliver_after {delay} ms) arrives at t = {right} ms; you said {got}"
        cutoff = "now" if strict else f"now + tick = now + {tick_ms} ms"
        if right == 0:
            line += (
                f": deliverAt {delay} is within the cutoff ({cutoff}) when the dispatcher reads it, so addMessage "
                "refuses it and it goes out at once"
            )
        elif right < delay and got >= delay:
            line += (
                f": the broker holds a message only while its deliverAt is after the cutoff ({cutoff}), "
                "so it can come out up to a tick early"
            )
        elif right > got:
            line += (
                ": nothing reads the tracker before its timer fires, and the timer fires at the next deliverAt "
                "but never sooner than a tick after its last run (lastTickRun + tick)"
            )
        else:
            line += ": a timer read takes every message due by the cutoff, not only the one it was armed for"
        problems.append(line)
    if problems:
        return failed(problems, "The rules: getCutoffTime, addMessage and updateTimer of the delayed-delivery tracker.")
    return passed(
        f"{list(want)}: a message is held while its deliverAt is after the cutoff (now + tick, or now when strict) "
        "and released by the next timer read, which takes every message due by then."
    )


# ---------------------------------------------------------------------------------------------
# Exercise: which subscription types hold a delayed message back?


def subscription_delay_answer(delay_ms: int = 30_000, version: str = "4.0") -> dict[str, int]:
    """Subscription type -> how long after it was sent its consumer receives a message with ``deliver_after``."""
    out = {}
    for name, ctype in TYPES.items():
        lab = Lab(version=version)
        client = lab.client()
        consumer = client.subscribe("delays", "sub", consumer_type=ctype, lab_ack_group_time_ms=0)
        producer = client.create_producer("delays")
        lab.advance(2000)  # past the Failover delay before the first read
        sent = lab.now()
        producer.send(b"late", deliver_after=timedelta(milliseconds=delay_ms))
        got = _received_at(lab, consumer, 1, sent + delay_ms + 10_000)
        out[name] = got[b"late"] - sent
    return out


@exercise(
    todo="write {subscription type: ms between send and receive}",
    see=(
        'Lab 9, section 2 ("Only Shared and Key_Shared hold messages back")',
        "docs/guide/delayed-delivery.md#hold-back",
    ),
)
def check_subscription_delays(answer: Any, delay_ms: int = 30_000, version: str = "4.0") -> CheckResult:
    """Check ``answer`` = {subscription type: ms between send and receive} for ``deliver_after=delay_ms``."""
    if not isinstance(answer, dict) or set(answer) != set(TYPES):
        return failed([f"answer should be a dict with the keys {sorted(TYPES)}: ms between send and receive"])
    want = subscription_delay_answer(delay_ms, version)
    problems = []
    for name, right in want.items():
        got = answer[name]
        if got != right:
            why = (
                (
                    "only PersistentDispatcherMultipleConsumers (Shared and Key_Shared) tracks delayed delivery; "
                    "Exclusive and Failover send every entry as they read it"
                )
                if right == 0
                else (
                    "a Shared or Key_Shared dispatcher hands the entry to its delayed-delivery tracker until it is due"
                )
            )
            problems.append(f"{name}: received {right} ms after sending; you said {got!r}: {why}")
    if problems:
        return failed(problems, "trackDelayedDelivery exists only in the multi-consumer dispatcher.")
    return passed(
        f"{want}: only the multi-consumer dispatcher (Shared, Key_Shared) has a delayed-delivery tracker; "
        "Exclusive and Failover deliver at once."
    )


# ---------------------------------------------------------------------------------------------
# Exercise: what does a bucket tracker keep across a broker restart?


def restart_answer(
    messages: int = 10,
    entries_per_ledger: int = 3,
    min_index_count: int = 3,
    delay_ms: int = 60_000,
    version: str = "4.0",
) -> dict[str, int]:
    """{"recovered": indexes the new tracker rebuilds from stored bucket snapshots, "read_again": indexes lost with
    the mutable bucket and shared queue, which the cursor reads again} for a restart right after publishing."""
    lab = Lab(
        version=version,
        broker_config={
            "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
            "delayedDeliveryMinIndexCountPerBucket": min_index_count,
            "managedLedgerMaxEntriesPerLedger": entries_per_ledger,
        },
    )
    client = lab.client()
    client.subscribe("delays", "sub", consumer_type=ConsumerType.Shared)
    producer = client.create_producer("delays")
    for i in range(messages):
        producer.send(f"{i}".encode(), deliver_after=timedelta(milliseconds=delay_ms))
    loss = lab.restart_broker().subscription("sub")
    return {"recovered": loss.delayed_kept, "read_again": loss.delayed_lost}


@exercise(
    todo='write {"recovered": n, "read_again": m}',
    see=(
        'Lab 9, section 5 ("A broker restart")',
        "docs/guide/delayed-delivery.md#bucket-snapshots",
        "docs/guide/broker-restart.md#restart",
    ),
)
def check_restart_recovery(
    answer: Any,
    messages: int = 10,
    entries_per_ledger: int = 3,
    min_index_count: int = 3,
    delay_ms: int = 60_000,
    version: str = "4.0",
) -> CheckResult:
    """Check ``answer`` = {"recovered": n, "read_again": m} for ``messages`` delayed messages published
    ``entries_per_ledger`` to a ledger with ``delayedDeliveryMinIndexCountPerBucket = min_index_count``, then a
    broker restart."""
    if not isinstance(answer, dict) or set(answer) != {"recovered", "read_again"}:
        return failed(['answer should be a dict {"recovered": n, "read_again": m}'])
    want = restart_answer(messages, entries_per_ledger, min_index_count, delay_ms, version)
    problems = []
    if answer["recovered"] != want["recovered"]:
        hint = (
            ("only sealed buckets have a snapshot ledger; the mutable bucket (the newest ledgers) lives only in memory")
            if answer["recovered"] == messages
            else (
                "a bucket is sealed (and stored) when a message of a later ledger arrives and the mutable bucket holds "
                f"at least delayedDeliveryMinIndexCountPerBucket = {min_index_count} indexes"
            )
        )
        problems.append(
            f"the new tracker recovers {want['recovered']} indexes from snapshots; you said "
            f"{answer['recovered']!r}: {hint}"
        )
    if answer["read_again"] != want["read_again"]:
        problems.append(
            f"{want['read_again']} indexes were only in memory; you said {answer['read_again']!r}: the "
            "cursor reads them again from the ledger and the new tracker holds them anew"
        )
    if problems:
        return failed(
            problems, "BucketDelayedDeliveryTracker (PIP-195): sealing, recovery, what is lost and why that is safe."
        )
    return passed(
        f"{want}: sealed buckets come back from their stored snapshots; the mutable bucket lived only in memory, "
        "so the cursor reads those messages again from the ledger."
    )


__all__ = [
    "check_delivery_times",
    "check_restart_recovery",
    "check_subscription_delays",
    "delivery_times_answer",
    "restart_answer",
    "subscription_delay_answer",
]
