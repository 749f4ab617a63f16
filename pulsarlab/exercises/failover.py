"""Checkers for the failover lab (labs/04-failover.ipynb): who is active on each partition, and what happens
when the active consumer dies.

Models no Pulsar class; the right answers come from running the lab's model (docs/guide/subscription-types.md:
`pickAndScheduleActiveConsumer`, ``activeConsumerFailoverDelayTimeMillis`` and the rewind; docs/guide/acknowledgements.md: acks
still in the grouping tracker when a consumer crashes are lost). Each checker returns a `CheckResult`.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerType
from pulsarlab.snapshot.lab import snapshot

# ---------------------------------------------------------------------------------------------
# Exercise: the active consumer of every partition


def assignment_answer(consumers: Sequence[tuple[str, int]], partitions: int, version: str = "4.0") -> dict[int, str]:
    """Partition index -> the active consumer's name, for consumers ``(name, priority)`` subscribed in order."""
    lab = Lab(version=version)
    lab.admin.topics.create_partitioned_topic("orders", partitions)
    client = lab.client()
    for name, priority in consumers:
        client.subscribe(
            "orders", "sub", consumer_type=ConsumerType.Failover, consumer_name=name, lab_priority_level=priority
        )
    snap = snapshot(lab)
    out = {}
    for part in snap.partitions("orders"):
        sub = part.subscription("sub")
        active = sub.dispatcher.active_consumer if sub.dispatcher is not None else None
        out[part.partition_index] = sub.consumer(active).name if active is not None else None
    return out


@exercise(
    todo="write {partition index: the name of its active consumer}",
    see=(
        'Lab 4, section 2 ("Who is active on a partitioned topic")',
        "docs/guide/subscription-types.md#failover-partitioned",
    ),
)
def check_failover_assignment(
    answer: Any, consumers: Sequence[tuple[str, int]], partitions: int, version: str = "4.0"
) -> CheckResult:
    """Check ``answer`` = ``{partition index: consumer name}`` for Failover consumers ``(name, priority)``
    on a topic with ``partitions`` partitions."""
    if not isinstance(answer, dict):
        return failed([f"answer should be a dict {{partition index: consumer name}}, not {type(answer).__name__}"])
    want = assignment_answer(consumers, partitions, version)
    top = min(p for _n, p in consumers)
    level = sorted(n for n, p in consumers if p == top)
    in_order = [n for n, p in consumers if p == top]
    priority = dict(consumers)
    problems = []
    for i, name in want.items():
        if i not in answer:
            problems.append(f"you gave no consumer for partition {i}; its active consumer is {name}")
            continue
        got = answer[i]
        if got == name:
            continue
        line = f"partition {i}: the active consumer is {name}; you said {got!r}"
        if got in priority and priority[got] != top:
            line += (
                f": only the highest priority level counts (priority {top}, the lowest number): "
                f"{', '.join(level)}; {got} (priority {priority[got]}) is a standby"
            )
        elif got == in_order[i % len(in_order)] and in_order != level:
            line += (
                f": the consumers are sorted by (priority, name) before picking, so the list is {level}, "
                f"not the order they subscribed in"
            )
        else:
            line += f": partition {i} % {len(level)} consumers = {i % len(level)} -> {level[i % len(level)]} in {level}"
        problems.append(line)
    for i in answer:
        if i not in want:
            problems.append(f"there is no partition {i!r}; the partitions are 0..{partitions - 1}")
    if problems:
        return failed(problems, hint="Draw it with failover_graph_view to check.")
    return passed(", ".join(f"partition {i} -> {n}" for i, n in want.items()) + f" (i % {len(level)} over {level}).")


# ---------------------------------------------------------------------------------------------
# Exercise: the active consumer crashes


def takeover_answer(
    messages: int = 6,
    acked: Sequence[int] = (0, 1, 2),
    ack_at: int = 1200,
    late_ack: int | None = 3,
    late_ack_at: int = 1350,
    crash_at: int = 1380,
    version: str = "4.0",
) -> dict[str, Any]:
    """The takeover after the active consumer crashes.

    Non-partitioned topic, Failover subscription: ``c1`` (priority 0) and ``c2`` (priority 1) join at t = 0,
    ``messages`` messages m0.. are sent; ``c1`` acknowledges ``acked`` at ``ack_at``, message ``late_ack`` at
    ``late_ack_at`` and crashes at ``crash_at``. Returns the new active consumer, when it gets its first
    message, which messages it gets, and the mark-delete position at the crash.
    """
    lab = Lab(version=version)
    client = lab.client()
    fo = ConsumerType.Failover
    c1 = client.subscribe("payments", "sub", consumer_type=fo, consumer_name="c1", lab_priority_level=0)
    c2 = client.subscribe("payments", "sub", consumer_type=fo, consumer_name="c2", lab_priority_level=1)
    producer = client.create_producer("payments")
    for i in range(messages):
        producer.send(f"m{i}".encode())
    first_at = min(x for x in (ack_at, late_ack_at, crash_at) if x is not None)
    lab.run_until(first_at)
    got = {}
    while c1.receiver_queue:
        msg = c1.receive(0)
        got[msg.data().decode()] = msg
    lab.run_until(ack_at)
    for i in acked:
        c1.acknowledge(got[f"m{i}"])
    if late_ack is not None:
        lab.run_until(late_ack_at)
        c1.acknowledge(got[f"m{late_ack}"])
    lab.run_until(crash_at)
    md = lab.admin.topics.stats_internal("payments")["cursors"]["sub"]["markDeletePosition"]
    c1.crash()
    seen_before = len(lab.events)
    lab.run_until_idle()
    received = []
    while c2.receiver_queue:
        received.append(c2.receive(0).data().decode())
    first = next((e.time for e in lab.events.since(seen_before) if e.kind == "dispatched"), None)
    active = snapshot(lab).subscription("payments", "sub")
    name = (
        active.consumer(active.dispatcher.active_consumer).name
        if active.dispatcher.active_consumer is not None
        else None
    )
    return {"new_active": name, "first_delivery_ms": first, "redelivered": received, "mark_delete_at_crash": md}


@exercise(
    todo='write {"new_active": consumer name, "first_delivery_ms": t, "redelivered": ["m?", ...]}',
    see=(
        'Lab 4, section 4 ("The active consumer leaves: the delay and the rewind")',
        "docs/guide/subscription-types.md#failover-switch",
        "docs/guide/acknowledgements.md#ack-grouping",
    ),
)
def check_failover_takeover(answer: Any, **scenario: Any) -> CheckResult:
    """Check ``answer`` = ``{"new_active": name, "first_delivery_ms": t, "redelivered": ["m3", ...]}`` for the
    `takeover_answer` scenario (its keyword arguments may be passed here)."""
    keys = {"new_active", "first_delivery_ms", "redelivered"}
    if not isinstance(answer, dict) or set(answer) != keys:
        return failed(
            ['answer should be a dict {"new_active": "c?", "first_delivery_ms": t, "redelivered": ["m?", ...]}']
        )
    want = takeover_answer(**scenario)
    crash_at = scenario.get("crash_at", 1380)
    late_ack, late_ack_at = scenario.get("late_ack", 3), scenario.get("late_ack_at", 1350)
    problems = []
    if answer["new_active"] != want["new_active"]:
        problems.append(
            f"the new active consumer is {want['new_active']}; you said {answer['new_active']!r}: "
            "it is the only one left, whatever its priority"
        )
    if answer["first_delivery_ms"] != want["first_delivery_ms"]:
        line = (
            f"the new active consumer gets its first message at t = {want['first_delivery_ms']}; you said "
            f"{answer['first_delivery_ms']!r}"
        )
        if answer["first_delivery_ms"] == crash_at:
            line += (
                f": with activeConsumerFailoverDelayTimeMillis (1000 ms by default) the broker waits after the "
                f"change, then rewinds the cursor, sends ACTIVE_CONSUMER_CHANGE and reads: {crash_at} + 1000"
            )
        problems.append(line)
    got = answer["redelivered"]
    want_msgs = want["redelivered"]
    if not isinstance(got, (list, tuple)) or list(got) != want_msgs:
        line = f"the new active consumer receives {want_msgs}; you said {got!r}"
        late = f"m{late_ack}" if late_ack is not None else None
        if isinstance(got, (list, tuple)) and late in want_msgs and late not in got:
            line += (
                f": c1 acked {late} at t = {late_ack_at}, but acks wait in the grouping tracker until the next "
                f"100 ms flush; c1 crashed at t = {crash_at} first, so that ack was lost and {late} comes again"
            )
        elif isinstance(got, (list, tuple)) and len(got) > len(want_msgs):
            line += (
                f": the rewind restarts reading right after the mark-delete position "
                f"({want['mark_delete_at_crash']}); everything up to it was acknowledged and flushed before the crash"
            )
        problems.append(line)
    if problems:
        return failed(
            problems,
            hint="Step through the player: watch acks_flushed, consumer_closed, "
            "active_consumer_picked and cursor_rewound.",
        )
    return passed(
        f"{want['new_active']} takes over and gets {want_msgs} from t = {want['first_delivery_ms']} "
        f"(the rewind restarts after the mark-delete position {want['mark_delete_at_crash']})."
    )


__all__ = ["assignment_answer", "check_failover_assignment", "check_failover_takeover", "takeover_answer"]
