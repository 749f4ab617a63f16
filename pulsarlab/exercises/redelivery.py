"""Checkers for the redelivery lab (labs/07-redelivery-and-dead-letters.ipynb): when an ack timeout fires, when
3.0 and 4.0 redeliver a negative ack, what a dead-letter policy lets the application see, and what a retry copy
carries.

Models no Pulsar class; every right answer is computed by running the lab's model (docs/guide/redelivery.md:
ack-timeout ring, negative-ack trackers, broker redelivery count; docs/guide/retry-and-dead-letters.md). Each checker
returns a `CheckResult` that says OK, or what is wrong and which rule was missed.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.errors import Timeout
from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerType


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dispatches(lab: Lab, ledger: int, entry: int) -> list[int]:
    return [e.time for e in lab.events.of_kind("dispatched") if (e.ledger, e.entry) == (ledger, entry)]


# ---------------------------------------------------------------------------------------------
# Exercise: when does the ack timeout redeliver?


def ack_timeout_answer(ack_timeout_ms: int, tick_ms: int, received_at: int, version: str = "4.0") -> int:
    """The virtual time at which the broker sends a message again that a Shared consumer (created at t = 0)
    received at ``received_at`` and never acknowledged."""
    lab = Lab(version=version, seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "jobs",
        "workers",
        consumer_type=ConsumerType.Shared,
        unacked_messages_timeout_ms=ack_timeout_ms,
        lab_tick_duration_ms=tick_ms,
    )
    producer = client.create_producer("jobs")
    mid = producer.send(b"job")
    lab.run_until(received_at)
    consumer.receive(0)
    consumer.receive(timeout_millis=10 * (ack_timeout_ms + tick_ms))
    return _dispatches(lab, mid.ledger, mid.entry)[1]


@exercise(
    todo="write the time (ms, an int) at which the unacknowledged message is redelivered",
    see=(
        'Lab 7, section 1 ("Ack timeout: the ring that turns")',
        "docs/guide/redelivery.md#ack-timeout",
    ),
)
def check_ack_timeout_redelivery(
    answer: Any, ack_timeout_ms: int = 3000, tick_ms: int = 2000, received_at: int = 500
) -> CheckResult:
    """Check ``answer`` = the time (ms) at which a message received at ``received_at`` and never acknowledged is
    redelivered, for ``unacked_messages_timeout_ms=ack_timeout_ms`` and ``lab_tick_duration_ms=tick_ms``."""
    want = ack_timeout_answer(ack_timeout_ms, tick_ms, received_at)
    got = _int_or_none(answer)
    if got is None:
        return failed([f"answer should be one time in ms (an int), not {answer!r}"])
    if got == want:
        return passed(f"redelivered at t = {want} ms: {want - received_at} ms after it was received.")
    sets = math.ceil(ack_timeout_ms / min(tick_ms, ack_timeout_ms))
    line = f"it is redelivered at t = {want} ms; you said {got}"
    if got == received_at + ack_timeout_ms:
        line += (
            ": the timeout is not timed per message. The UnAckedMessageTracker is a ring of "
            f"ceil({ack_timeout_ms}/{tick_ms}) + 1 = {sets + 1} sets; a received message joins the newest set "
            f"and every {tick_ms} ms tick redelivers the oldest"
        )
    elif got % tick_ms == received_at % tick_ms:
        line += (
            f": the ticks do not start at the receive - they run every {tick_ms} ms from the consumer's "
            "creation (t = 0)"
        )
    elif got < received_at + ack_timeout_ms:
        line += ": a message is never redelivered before its ack timeout"
    else:
        line += (
            f": count the ticks - the message's set is redelivered at the {sets + 1}th tick after it joined "
            f"(so it waits more than {sets} x {tick_ms} ms and at most one tick more)"
        )
    return failed([line], hint="Step through the trackers view: watch the id move towards the head of the ring.")


# ---------------------------------------------------------------------------------------------
# Exercise: negative-ack timing, 3.0 vs 4.0


def nack_answer(nack_at: Sequence[int], delay_ms: int = 1000, version: str = "4.0") -> list[int]:
    """When the broker sends each message again after a Shared consumer nacked message i at ``nack_at[i]``."""
    times = sorted(nack_at)
    if list(nack_at) != times:
        raise ValueError(f"nack times must ascend, got {list(nack_at)}")
    lab = Lab(version=version, seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "jobs", "workers", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=delay_ms
    )
    producer = client.create_producer("jobs")
    ids = [producer.send(f"job-{i}".encode()) for i in range(len(times))]
    msgs = [consumer.receive(0) for _ in ids]
    for msg, at in zip(msgs, times):
        lab.run_until(at)
        consumer.negative_acknowledge(msg)
    lab.run_until_idle()
    return [_dispatches(lab, m.ledger, m.entry)[1] for m in ids]


@exercise(
    todo='write {"3.0": [the redelivery time of each message, ms], "4.0": [...]}',
    see=(
        'Lab 7, section 2 ("Negative acks: 3.0 and 4.0 keep them differently")',
        "docs/guide/redelivery.md#negative-acks",
    ),
)
def check_nack_redelivery_times(
    answer: Any, nack_at: Sequence[int] = (0, 200), delay_ms: int = 1000, versions: Sequence[str] = ("3.0", "4.0")
) -> CheckResult:
    """Check ``answer`` = ``{"3.0": [times], "4.0": [times]}``: when each negatively acknowledged message is
    redelivered (message i nacked at ``nack_at[i]``, ``negative_ack_redelivery_delay_ms=delay_ms``)."""
    if not isinstance(answer, dict) or set(answer) != set(versions):
        return failed([f"answer should be a dict with one list of times per version: { {v: [] for v in versions} }"])
    problems = []
    for version in versions:
        want = nack_answer(nack_at, delay_ms, version)
        got = answer[version]
        if not isinstance(got, (list, tuple)) or len(got) != len(want) or any(_int_or_none(x) is None for x in got):
            problems.append(f"{version}: give {len(want)} times in ms, one per message, not {got!r}")
            continue
        if list(got) == want:
            continue
        line = f"{version} redelivers at {want}; you said {list(got)}"
        naive = [at + delay_ms for at in nack_at]
        if version == "3.0" and list(got) == naive:
            line += (
                f": the 3.x tracker keeps each deadline, but checks them only when its timer runs - every "
                f"delay/3 from the first nack ({delay_ms / 3:.1f} ms; the client's wheel timer runs on whole ms, "
                f"so {-(-delay_ms // 3)} ms here) - and redelivers what is strictly past its deadline, so up to "
                "delay/3 late"
            )
        elif version != "3.0" and list(got) == naive:
            line += (
                "; the 4.0.2+ tracker (PIP-393) puts each id in a 256 ms bucket, rounded down, and its timer "
                "goes to the first bucket: a nack that arrives while the timer is armed can come back up to "
                "255 ms early"
            )
        elif any(g < a + delay_ms - (0 if version == "3.0" else 255) for g, a in zip(got, nack_at)):
            line += ": 3.0 is never early; 4.0 at most 255 ms early (its bucket)"
        problems.append(line)
    if problems:
        return failed(problems, hint="Compare the nack panels of the trackers view on both versions.")
    return passed("; ".join(f"{v} redelivers at {nack_answer(nack_at, delay_ms, v)}" for v in versions) + ".")


# ---------------------------------------------------------------------------------------------
# Exercise: what a dead-letter policy lets the application see


def dead_letter_answer(max_redeliver_count: int, version: str = "4.0") -> tuple[list[int], int]:
    """``(redelivery counts the application sees, messages in the DLQ)`` when it nacks every delivery of one
    message on a Shared subscription with ``ConsumerDeadLetterPolicy(max_redeliver_count)``."""
    lab = Lab(version=version, seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "payments",
        "billing",
        consumer_type=ConsumerType.Shared,
        negative_ack_redelivery_delay_ms=1000,
        dead_letter_policy=ConsumerDeadLetterPolicy(max_redeliver_count),
    )
    client.create_producer("payments").send(b"payment")
    counts = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=5000)
        except Timeout:
            break
        counts.append(msg.redelivery_count())
        consumer.negative_acknowledge(msg)
    dlq = "persistent://public/default/payments-billing-DLQ"
    in_dlq = lab.admin.topics.stats(dlq)["msgInCounter"] if dlq in lab.admin.topics.list() else 0
    return counts, in_dlq


@exercise(
    todo="write the list of redelivery_count() values the application sees, one per delivery",
    see=(
        'Lab 7, section 4 ("The dead-letter topic: a safety net")',
        "docs/guide/retry-and-dead-letters.md#dead-letter-topic",
    ),
)
def check_dead_letter_deliveries(answer: Any, max_redeliver_count: int = 3) -> CheckResult:
    """Check ``answer`` = the list of ``redelivery_count()`` values the application sees when it negatively
    acknowledges every delivery of one message, with ``max_redeliver_count``."""
    want, in_dlq = dead_letter_answer(max_redeliver_count)
    if not isinstance(answer, (list, tuple)) or any(_int_or_none(x) is None for x in answer):
        return failed([f"answer should be a list of redelivery counts (ints), not {answer!r}"])
    if list(answer) == want:
        return passed(
            f"the application sees it {len(want)} times (counts {want}); then it is written to "
            f"payments-billing-DLQ ({in_dlq} message there) and acknowledged."
        )
    line = f"the application sees counts {want}; you said {list(answer)}"
    if list(answer) == want[:-1]:
        line += (
            f": a message that arrives with redeliveryCount >= maxRedeliverCount ({max_redeliver_count}) is still "
            "shown; only its NEXT redelivery goes to the DLQ - so it is seen maxRedeliverCount + 1 times "
            "(DeadLetterTopicTest)"
        )
    elif list(answer) == want + [max_redeliver_count + 1]:
        line += ": the client sends it to the DLQ instead of asking for another redelivery"
    elif answer and answer[0] != 0:
        line += ": the first delivery carries redelivery count 0; the broker counts client redeliver requests"
    return failed([line], hint="The redelivery timeline view shows each delivery with its count.")


__all__ = [
    "ack_timeout_answer",
    "check_ack_timeout_redelivery",
    "check_dead_letter_deliveries",
    "check_nack_redelivery_times",
    "dead_letter_answer",
    "nack_answer",
]
