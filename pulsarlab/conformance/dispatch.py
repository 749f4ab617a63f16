"""Conformance of the Shared and Failover dispatch rules with Pulsar's recordings (golden README-dispatch §1-§3).

A line's ``version`` lists the branches it holds for; the line is replayed under each listed label.
"""

from __future__ import annotations

from pulsarlab.broker.dispatch.entries_per_turn import avg_batch_size_per_msg, batch_entries
from pulsarlab.broker.dispatch.failover import ActiveConsumerPick, FailoverConsumerList, topic_hash
from pulsarlab.broker.dispatch.round_robin import DispatchConsumer, SharedConsumerList
from pulsarlab.conformance import expect, version_labels
from pulsarlab.errors import PulsarError
from pulsarlab.profiles import Profile, SharedDispatcherForm, get_profile


def profile_for_label(label: str) -> Profile:
    """The model profile a recorded branch label stands for."""
    if label == "branch-3.0":
        return get_profile("3.0")
    if label == "branch-4.0":
        return get_profile("4.0")
    if label == "branch-4.0-classic":
        return get_profile("4.0").replace(shared_dispatcher=SharedDispatcherForm.V3)
    raise ValueError(f"unknown version label {label!r}; expected branch-3.0, branch-4.0 or branch-4.0-classic")


def check_next_consumer(line: dict) -> None:
    for label in version_labels(line):
        _replay_next_consumer(line, profile_for_label(label), label)


def _replay_next_consumer(line: dict, profile: Profile, label: str) -> None:
    dispatcher = SharedConsumerList(profile)
    instances: dict[int, DispatchConsumer] = {}
    for step in line["steps"]:
        op = step["op"]
        where = f"[{label}] step {step['i']} {op}"
        if op == "add":
            spec = step["consumer"]
            consumer = DispatchConsumer(
                id=spec["id"],
                name=spec.get("name", ""),
                priority=spec["priority"],
                available_permits=spec["permits"],
                blocked=spec["blocked"],
                cnx_active=spec["cnx_active"],
            )
            instances[consumer.id] = consumer
            dispatcher.add(consumer)
        elif op == "add_again":
            dispatcher.add(instances[step["id"]])
        elif op == "remove":
            dispatcher.remove(instances[step["id"]])
        elif op == "remove_absent":
            dispatcher.remove(DispatchConsumer(id=step["id"]))
        elif op == "add_permits":
            instances[step["id"]].available_permits += step["n"]
        elif op == "set_blocked":
            instances[step["id"]].blocked = step["blocked"]
        elif op == "set_cnx_active":
            instances[step["id"]].cnx_active = step["cnx_active"]
        elif op == "next":
            chosen = dispatcher.next_consumer()
            expect(f"{where}: result", step["result"], None if chosen is None else chosen.id)
            if chosen is not None:
                chosen.available_permits -= 1  # the recording takes one permit, as the Pulsar test does
        else:
            raise ValueError(f"{where}: unknown op {op!r}")
        expect(f"{where}: list", step["list"], [c.id for c in dispatcher.consumers])
        expect(f"{where}: permits", step["permits"], [c.available_permits for c in dispatcher.consumers])
        expect(f"{where}: rr", step["rr"], dispatcher.round_robin_index)
        expect(f"{where}: set_size", step["set_size"], dispatcher.set_size)


def check_failover(line: dict) -> None:
    for label in version_labels(line):
        profile_for_label(label)  # the rules are the same on every recorded branch
        _replay_failover(line, label)


def _replay_failover(line: dict, label: str) -> None:
    expect(f"[{label}] topic_hash of {line['topic']!r}", line["topic_hash"], topic_hash(line["topic"]))
    dispatcher = FailoverConsumerList(
        line["topic"],
        line["partition_index"],
        consistent_hashing=line["active_consumer_failover_consistent_hashing"],
    )
    instances: dict[int, DispatchConsumer] = {}
    for step in line["steps"]:
        op = step["op"]
        where = f"[{label}] step {step['i']} {op}"
        error = None
        try:
            if op == "add":
                spec = step["consumer"]
                consumer = DispatchConsumer(id=spec["id"], name=spec["name"], priority=spec["priority"])
                instances[consumer.id] = consumer
                pick = dispatcher.add(consumer)
            elif op == "add_again":
                pick = dispatcher.add(instances[step["id"]])
            elif op == "remove":
                pick = dispatcher.remove(instances[step["id"]])
            elif op == "remove_absent":
                pick = dispatcher.remove(DispatchConsumer(id=step["id"]))
            else:
                raise ValueError(f"{where}: unknown op {op!r}")
        except PulsarError as exc:
            error = {"class": exc.java_class, "message": exc.message}
            pick = ActiveConsumerPick(changed=False)
        expect(f"{where}: error", step["error"], error)
        expect(f"{where}: active", step["active"], None if dispatcher.active is None else dispatcher.active.id)
        expect(f"{where}: changed", step["changed"], pick.changed)
        expect(f"{where}: list", step["list"], [c.id for c in dispatcher.consumers])
        expect(f"{where}: notifications", step["notifications"], [[n.id, a.id] for n, a in pick.notifications])


def check_batch_size(line: dict) -> None:
    for label in version_labels(line):
        form = profile_for_label(label).shared_dispatcher
        for n, case in enumerate(line["cases"]):
            where = f"[{label}] case {n}"
            if "total_messages" in case:
                expect(
                    f"{where}: avg_batch_size_per_msg of {case['total_messages']} messages in {case['entries']} entries",
                    case["avg_batch_size_per_msg"],
                    avg_batch_size_per_msg(case["total_messages"], case["entries"]),
                )
            expect(
                f"{where}: batch_entries {case}",
                case["batch_entries"],
                batch_entries(
                    form,
                    remaining_messages=case["remaining_messages"],
                    available_permits=case["available_permits"],
                    avg_batch_size_per_msg=case["avg_batch_size_per_msg"],
                    writable=case["writable"],
                    max_unacked=case["max_unacked"],
                    unacked=case["unacked"],
                    max_round_robin_batch_size=case["max_round_robin_batch_size"],
                ),
            )
