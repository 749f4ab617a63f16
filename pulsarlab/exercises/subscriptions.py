"""Checkers for the subscription-types lab (labs/02-subscription-types.ipynb).

Models no Pulsar class. Every right answer is computed by running the scenario on a `pulsarlab.Lab` and
reading its event log; the explanations restate the broker and client rules the learner may have missed:

* `check_shared_dispatch`: which consumer gets each message of a Shared subscription, given priorities and
  receiver queues (`getNextConsumer`; docs/guide/subscription-types.md#shared-round-robin);
* `check_flow_commands`: the FLOW commands a consumer sends (initial FLOW, refill at half the receiver
  queue, zero-queue consumer; docs/guide/flow-control.md#flow-permits);
* `check_disconnect`: what another consumer gets when a Shared consumer disconnects, and with which
  redelivery count (docs/guide/subscription-types.md#shared-consumer-leaves: pending messages go to the replay
  set, the count does not move).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pulsarlab.errors import Timeout
from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerType

MAX_PROBLEMS = 3  # a wrong early answer shifts everything after it: show the first few, then a count

SharedSpec = tuple[str, int, int]  # (consumer name, lab_priority_level, receiver_queue_size)


# ---------------------------------------------------------------------------------------------------
# Shared round robin


def _names_by_id(lab: Lab) -> dict[int, str]:
    return {e.consumer: e.name for e in lab.events.of_kind("consumer_subscribed")}


def shared_dispatch_answer(consumers: Sequence[SharedSpec], messages: int, version: str = "4.0") -> list[str | None]:
    """Run it: the consumers subscribe to a Shared subscription in order, then a producer sends ``messages``
    messages one by one (no batching) and nobody receives. Returns the consumer of each message (None:
    it stays in the backlog)."""
    lab = Lab(version=version)
    client = lab.client()
    for name, priority, queue in consumers:
        client.subscribe(
            "orders",
            "shared-sub",
            consumer_type=ConsumerType.Shared,
            consumer_name=name,
            lab_priority_level=priority,
            receiver_queue_size=queue,
        )
    producer = client.create_producer("orders")
    ids = [producer.send(b"m%d" % i) for i in range(messages)]
    names = _names_by_id(lab)
    got = {(e.ledger, e.entry): names[e.consumer] for e in lab.events.of_kind("dispatched")}
    return [got.get((i.ledger, i.entry)) for i in ids]


def _round_robin_order(consumers: Sequence[SharedSpec]) -> list[str]:
    """The dispatcher's consumer list: arrival order, stably sorted by priority level (0 first)."""
    return [name for name, _, _ in sorted(consumers, key=lambda c: c[1])]


@exercise(
    todo="write a list with the consumer of each message in publish order (None for a message that stays in the backlog)",
    see=(
        'Lab 2, section 3 ("Shared: round robin, priorities, permits")',
        "docs/guide/subscription-types.md#shared-round-robin",
    ),
)
def check_shared_dispatch(
    answer: Any, consumers: Sequence[SharedSpec], messages: int, version: str = "4.0"
) -> CheckResult:
    """Check ``answer`` = one consumer name (or None) per message, in publish order."""
    expected = shared_dispatch_answer(consumers, messages, version)
    spec = {name: (priority, queue) for name, priority, queue in consumers}
    if isinstance(answer, (str, bytes)) or not isinstance(answer, Sequence):
        return failed(
            [
                f"answer should be a list of {messages} consumer names (None for a message nobody gets), "
                f"not {type(answer).__name__}"
            ]
        )
    answer = list(answer)
    if len(answer) != messages:
        return failed(
            [
                f"give one entry per message: {messages} entries, you gave {len(answer)} "
                "(use None for a message that stays in the backlog)"
            ]
        )
    unknown = [a for a in answer if a is not None and a not in spec]
    if unknown:
        return failed([f"{unknown[0]!r} is not one of the consumers {', '.join(spec)} (or None)"])
    order = _round_robin_order(consumers)
    problems: list[str] = []
    wrong = 0
    sent: dict[str, int] = {name: 0 for name in spec}
    for i, (want, got) in enumerate(zip(expected, answer)):
        if got != want:
            wrong += 1
            if len(problems) < MAX_PROBLEMS:
                problems.append(_why_not(i, want, got, sent, spec, order, expected[i - 1] if i else None))
        if want is not None:
            sent[want] += 1
    if problems:
        hint = ""
        if wrong > len(problems):
            hint = (
                f"... and {wrong - len(problems)} more message(s) differ (fix the first one first: one wrong "
                "pick shifts the round robin after it).\n"
            )
        return failed(
            problems,
            hint=hint
            + "The dispatcher's list is "
            + " → ".join(order)
            + " (stable by priority); each message costs its consumer one permit.",
        )
    shown = ", ".join(f"m{i}→{c or 'backlog'}" for i, c in enumerate(expected))
    return passed(f"{shown}. Highest priority first, round robin within a priority, and only against permits.")


def _why_not(
    i: int,
    want: str | None,
    got: str | None,
    sent: dict[str, int],
    spec: dict[str, tuple[int, int]],
    order: list[str],
    previous: str | None,
) -> str:
    head = f"m{i} goes to {want or 'nobody (it stays in the backlog)'}; you said {got or 'nobody'}"
    total = sum(q for _, q in spec.values())
    if want is None:
        return (
            f"{head}: by then every consumer has used all its permits (the receiver queues hold {total} "
            "messages in all, and nobody has called receive()); it waits until an application takes "
            "messages and its client sends FLOW"
        )
    if got is not None:
        p_got, q_got = spec[got]
        if sent[got] >= q_got:
            return (
                f"{head}: {got} has no permits left - its receiver_queue_size is {q_got} and it already "
                f"got {sent[got]} message(s); the broker sends only against FLOW permits"
            )
        p_want = spec[want][0]
        if p_got > p_want:
            return (
                f"{head}: {want} has lab_priority_level {p_want} and still has permits; a LOWER number is a "
                f"HIGHER priority, so {got} (lab_priority_level {p_got}) gets messages only when every consumer "
                f"of a higher priority is out of permits"
            )
        if p_got < p_want:  # cannot be right: got would have been chosen; only a permits mistake reaches here
            return f"{head}: {got} has no permits left"
        if previous is None:
            return f"{head}: the round robin starts at the top of the list ({' → '.join(order)})"
        return (
            f"{head}: the round robin continues down the list from {previous}, one message each, skipping "
            f"consumers without permits and wrapping within a priority level: the next is {want}"
        )
    return (
        f"{head}: {want} still has permits (receiver_queue_size {spec[want][1]}, {sent[want]} used), "
        "so the message is dispatched at once"
    )


# ---------------------------------------------------------------------------------------------------
# FLOW permits


def flow_answer(receiver_queue_size: int, published: int, received: int, version: str = "4.0") -> list[int]:
    """Run it: a consumer subscribes with ``receiver_queue_size``, a producer sends ``published`` messages,
    the application calls receive() ``received`` times. Returns the permits of each FLOW the client sent."""
    if received > published:
        raise ValueError(f"the application cannot receive {received} of {published} messages")
    lab = Lab(version=version)
    client = lab.client()
    consumer = client.subscribe(
        "orders", "sub", consumer_type=ConsumerType.Shared, consumer_name="c1", receiver_queue_size=receiver_queue_size
    )
    producer = client.create_producer("orders")
    for i in range(published):
        producer.send(b"m%d" % i)
    for _ in range(received):
        try:
            consumer.receive(timeout_millis=0 if receiver_queue_size else None)
        except Timeout:  # pragma: no cover - the scenario always has a message ready
            raise AssertionError("the FLOW scenario ran out of messages") from None
    return [e.permits for e in lab.events.of_kind("flow")]


@exercise(
    todo="write the list of permits of each FLOW command the client sends, in order",
    see=(
        'Lab 2, section 4 ("The receiver queue and FLOW permits")',
        "docs/guide/flow-control.md#flow-permits",
    ),
)
def check_flow_commands(
    answer: Any, receiver_queue_size: int, published: int, received: int, version: str = "4.0"
) -> CheckResult:
    """Check ``answer`` = the permits of each FLOW command, in order (e.g. ``[10, 5]``)."""
    expected = flow_answer(receiver_queue_size, published, received, version)
    if (
        isinstance(answer, (str, bytes))
        or not isinstance(answer, Sequence)
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in answer)
    ):
        return failed(["answer should be a list of ints: the permits of each FLOW, in order, e.g. [10, 5]"])
    answer = list(answer)
    if answer == expected:
        return passed(f"FLOWs {expected}. " + _flow_story(receiver_queue_size, received))
    q, half = receiver_queue_size, receiver_queue_size // 2
    problems: list[str] = []
    if q == 0:
        if answer and answer[0] == 0:
            problems.append("a zero-queue consumer sends no FLOW when it subscribes (there is nothing to ask for)")
        if any(a != 1 for a in answer if a != 0):
            problems.append("with receiver_queue_size=0 every receive() sends FLOW(1): one message at a time")
        if answer.count(1) != received:
            problems.append(f"the application called receive() {received} times, so {received} FLOW(1) commands")
    else:
        if not answer or answer[0] != q:
            problems.append(
                f"the first FLOW is sent when the consumer subscribes, with the whole receiver queue: FLOW({q})"
            )
        refills = answer[1:] if answer and answer[0] == q else answer
        if half > 1 and any(a == 1 for a in refills):
            problems.append(
                f"the client does not hand permits back one by one: it counts the messages the "
                f"application took and sends FLOW once that count reaches half the queue ({q} // 2 = "
                f"{half})"
            )
        elif any(a == q for a in refills) and q != half:
            problems.append(
                f"the client does not wait for the queue to empty: it refills at half the queue, "
                f"FLOW({half}), not FLOW({q})"
            )
        elif any(a != half for a in refills):
            problems.append(
                f"every refill is FLOW({half}): the permits returned so far, sent as soon as they reach "
                f"half the queue ({q} // 2)"
            )
        n_refills = len(expected) - 1
        if len(refills) != n_refills:
            rest = received - n_refills * half if half else 0
            problems.append(
                f"{received} receive() calls return {received} permits: that is {n_refills} refill(s) "
                f"of {half}"
                + (f"; the last {rest} permit(s) wait in the client until there are {half}" if rest else "")
                + f", so {len(expected)} FLOW command(s) in all"
            )
    if not problems:
        problems.append(f"the FLOWs are {expected}")
    return failed(problems, hint="Look at lab.events.of_kind('flow') of the demo above.")


def _flow_story(q: int, received: int) -> str:
    if q == 0:
        return f"A zero-queue consumer asks for exactly one message per receive(): {received} × FLOW(1)."
    half = q // 2
    return f"FLOW({q}) at subscribe; then every {half} message(s) taken by the application hand {half} permit(s) back."


# ---------------------------------------------------------------------------------------------------
# A Shared consumer disconnects


@dataclass(frozen=True)
class DisconnectOutcome:
    """What the scenario of `disconnect_answer` ends with."""

    first_queue: tuple[str, ...]  # what c1 was sent
    acked: tuple[str, ...]  # what c1 acknowledged before closing
    received_unacked: tuple[str, ...]  # what c1's application took and did not ack
    comes_back: tuple[str, ...]  # what c2 gets after c1 closes, in order
    redelivery_counts: dict[str, int]


def disconnect_answer(messages: int = 6, acked: int = 1, received: int = 2, version: str = "4.0") -> DisconnectOutcome:
    """Run it: c1 and c2 share a subscription (receiver queues 10), ``messages`` are published; c1's
    application receives ``received`` messages and acknowledges the first ``acked`` of them, then c1 closes.
    Returns what c2 gets afterwards and each message's redelivery count."""
    lab = Lab(version=version)
    client = lab.client()
    c1 = client.subscribe(
        "orders", "shared-sub", consumer_type=ConsumerType.Shared, consumer_name="c1", receiver_queue_size=10
    )
    c2 = client.subscribe(
        "orders", "shared-sub", consumer_type=ConsumerType.Shared, consumer_name="c2", receiver_queue_size=10
    )
    producer = client.create_producer("orders")
    for i in range(messages):
        producer.send(b"m%d" % i)
    first = tuple(m.data().decode() for m in c1.receiver_queue)
    before = len(c2.receiver_queue)
    taken = [c1.receive(timeout_millis=0) for _ in range(received)]
    for m in taken[:acked]:
        c1.acknowledge(m)
    c1.close()
    back = c2.receiver_queue[before:]
    return DisconnectOutcome(
        first_queue=first,
        acked=tuple(m.data().decode() for m in taken[:acked]),
        received_unacked=tuple(m.data().decode() for m in taken[acked:]),
        comes_back=tuple(m.data().decode() for m in back),
        redelivery_counts={m.data().decode(): m.redelivery_count() for m in back},
    )


@exercise(
    todo='write {"messages": [what c2 gets after c1 closes, in order], "redelivery_count": n}',
    see=(
        'Lab 2, section 6 ("When a Shared consumer leaves")',
        "docs/guide/subscription-types.md#shared-consumer-leaves",
        "docs/guide/redelivery.md#redelivery-count",
    ),
)
def check_disconnect(
    answer: Any, messages: int = 6, acked: int = 1, received: int = 2, version: str = "4.0"
) -> CheckResult:
    """Check ``answer`` = ``{"messages": [...], "redelivery_count": n}``: what c2 gets after c1 closes, and the
    redelivery count those messages carry."""
    out = disconnect_answer(messages, acked, received, version)
    if not isinstance(answer, dict) or set(answer) != {"messages", "redelivery_count"}:
        return failed(['answer should be a dict {"messages": ["m…", ...], "redelivery_count": n}'])
    got = answer["messages"]
    if isinstance(got, (str, bytes)) or not isinstance(got, Sequence):
        return failed(['"messages" should be a list of message names such as "m2"'])
    got = [str(m) for m in got]
    problems: list[str] = []
    want = list(out.comes_back)
    for m in got:
        if m in out.acked:
            problems.append(f"{m} was acknowledged: close() flushes the pending acks first, so it never comes back")
        elif m not in out.first_queue and m not in want:
            problems.append(f"{m} was never c1's: the round robin sent it to c2 in the first place")
    for m in want:
        if m not in got:
            if m in out.received_unacked:
                problems.append(f"{m} comes back: c1's application received it but did not acknowledge it")
            else:
                problems.append(
                    f"{m} comes back too: it was still in c1's receiver queue - dispatched, so pending "
                    "on the broker, even though the application never took it"
                )
    if not problems and got != want:
        problems.append(f"they come back oldest first, from the replay set: {want}")
    counts = set(out.redelivery_counts.values())
    count = counts.pop() if len(counts) == 1 else None
    rc = answer["redelivery_count"]
    if isinstance(rc, bool) or not isinstance(rc, int):
        problems.append('"redelivery_count" should be an int')
    elif count is not None and rc != count:
        problems.append(
            f"their redelivery count is {count}: a consumer disconnect puts its pending messages back "
            "in the replay set WITHOUT counting a redelivery; only redeliver requests (ack timeout, "
            "negative ack, redeliver_unacknowledged_messages) increase it"
        )
    if problems:
        return failed(
            problems,
            hint="A message is pending on the broker from the moment it is dispatched until it is acknowledged.",
        )
    return passed(
        f"{', '.join(want)} come back to c2 with redelivery count {count}: every message dispatched to "
        "c1 and not acknowledged, the ones still in its receiver queue included."
    )


__all__ = [
    "DisconnectOutcome",
    "check_disconnect",
    "check_flow_commands",
    "check_shared_dispatch",
    "disconnect_answer",
    "flow_answer",
    "shared_dispatch_answer",
]
