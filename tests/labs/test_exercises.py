"""The exercise checkers of labs 02, 05 and 06: each accepts the right answer and rejects the typical wrong ones
with a message that names the mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exercise_support import rejected, unanswered, where_to_look

import pulsarlab as pl
from pulsarlab.exercises import debugging as dbg
from pulsarlab.exercises import key_shared_ordering as kso
from pulsarlab.exercises import subscriptions as subs

DATA = Path(__file__).resolve().parents[2] / "data" / "broker-json"
JAVADOC = [("C1", 0, 2), ("C2", 0, 1), ("C3", 0, 1), ("C4", 1, 2), ("C5", 1, 1)]


# --- lab 02: Shared round robin ------------------------------------------------------------------


@pytest.mark.parametrize("version", ["3.0", "4.0"])
def test_shared_dispatch_answer_is_the_javadoc_sequence(version: str) -> None:
    """Reference §5.1: C1 p0 2 permits, C2 p0 1, C3 p0 1, C4 p1 2, C5 p1 1 -> C1, C2, C3, C1, C4, C5, C4."""
    assert subs.shared_dispatch_answer(JAVADOC, 8, version) == ["C1", "C2", "C3", "C1", "C4", "C5", "C4", None]


def test_shared_dispatch_accepts_the_right_answer() -> None:
    result = subs.check_shared_dispatch(["C1", "C2", "C3", "C1", "C4", "C5", "C4", None], JAVADOC, 8)
    assert result.ok and result.message.startswith("OK")


def test_shared_dispatch_rejects_priority_blind_round_robin() -> None:
    rejected(
        subs.check_shared_dispatch(["C1", "C2", "C3", "C4", "C5", "C1", "C4", None], JAVADOC, 8),
        "m3 goes to C1; you said C4",
        "LOWER number is a HIGHER priority",
    )


def test_shared_dispatch_rejects_filling_one_consumer_first() -> None:
    rejected(
        subs.check_shared_dispatch(["C1", "C1", "C2", "C3", "C4", "C4", "C5", None], JAVADOC, 8),
        "m1 goes to C2; you said C1",
        "round robin continues",
        "2 more message(s) differ",
    )


def test_shared_dispatch_rejects_a_consumer_without_permits() -> None:
    rejected(
        subs.check_shared_dispatch(["C1", "C2", "C3", "C1", "C4", "C5", "C4", "C1"], JAVADOC, 8),
        "m7 goes to nobody",
        "every consumer has used all its permits",
    )
    rejected(
        subs.check_shared_dispatch(["C1", "C2", "C2", "C1", "C4", "C5", "C4", None], JAVADOC, 8),
        "C2 has no permits left",
        "receiver_queue_size is 1",
    )


def test_shared_dispatch_rejects_malformed_answers() -> None:
    rejected(subs.check_shared_dispatch(["C1"] * 3, JAVADOC, 8), "one entry per message: 8 entries")
    rejected(subs.check_shared_dispatch("C1 C2", JAVADOC, 8), "should be a list")
    rejected(subs.check_shared_dispatch(["C9"] + [None] * 7, JAVADOC, 8), "'C9' is not one of the consumers")


# --- lab 02: FLOW ----------------------------------------------------------------------------------


def test_flow_answer_facts() -> None:
    """Reference §6: FLOW(queue) at subscribe, FLOW(queue // 2) per half queue taken, FLOW(1) per zero-queue receive."""
    assert subs.flow_answer(10, 30, 17) == [10, 5, 5, 5]
    assert subs.flow_answer(5, 20, 9) == [5, 2, 2, 2, 2]
    assert subs.flow_answer(0, 5, 3) == [1, 1, 1]


def test_flow_accepts_the_right_answer() -> None:
    assert subs.check_flow_commands([10, 5, 5, 5], 10, 30, 17).ok
    assert subs.check_flow_commands([1, 1, 1], 0, 5, 3).ok


@pytest.mark.parametrize(
    "answer, needles",
    [
        ([5, 5, 5], ["first FLOW is sent when the consumer subscribes", "FLOW(10)"]),
        ([10] + [1] * 17, ["does not hand permits back one by one", "10 // 2 = 5"]),
        ([10, 10], ["does not wait for the queue to empty", "FLOW(5), not FLOW(10)"]),
        ([10, 5, 5, 5, 5], ["3 refill(s) of 5", "the last 2 permit(s) wait in the client"]),
        ("10, 5", ["list of ints"]),
    ],
)
def test_flow_rejects_typical_mistakes(answer, needles) -> None:
    rejected(subs.check_flow_commands(answer, 10, 30, 17), *needles)


def test_flow_rejects_zero_queue_mistakes() -> None:
    rejected(subs.check_flow_commands([0, 1, 1, 1], 0, 5, 3), "sends no FLOW when it subscribes")
    rejected(subs.check_flow_commands([1], 0, 5, 3), "3 FLOW(1) commands")


# --- lab 02: disconnect ----------------------------------------------------------------------------


def test_disconnect_answer_facts() -> None:
    out = subs.disconnect_answer()
    assert out.first_queue == ("m0", "m2", "m4")
    assert out.comes_back == ("m2", "m4")
    assert out.redelivery_counts == {"m2": 0, "m4": 0}  # reference §5.2, §13.12


def test_disconnect_accepts_and_rejects() -> None:
    assert subs.check_disconnect({"messages": ["m2", "m4"], "redelivery_count": 0}).ok
    rejected(subs.check_disconnect({"messages": ["m0", "m2", "m4"], "redelivery_count": 0}), "m0 was acknowledged")
    rejected(subs.check_disconnect({"messages": ["m2"], "redelivery_count": 0}), "m4 comes back too", "receiver queue")
    rejected(subs.check_disconnect({"messages": ["m2", "m4"], "redelivery_count": 1}), "WITHOUT counting a redelivery")
    rejected(subs.check_disconnect({"messages": ["m1", "m2", "m4"], "redelivery_count": 0}), "m1 was never c1's")
    rejected(subs.check_disconnect(["m2", "m4"]), "should be a dict")


# --- lab 05: Key_Shared ordering -------------------------------------------------------------------


def test_join_scenario_3_0_gates_every_key_and_4_0_only_draining_hashes() -> None:
    run3 = kso.run_join("3.0")
    assert run3.queued(run3.c2) == []
    assert run3.stats()["consumersAfterMarkDeletePosition"] == {"c2": "3:8"}
    run4 = kso.run_join("4.0")
    assert run4.queued(run4.c2) == ["m13"]
    moved = {k for k in set(kso.KEYS_BEFORE) if run4.owner(k) == "c2"}
    assert set(run4.draining()) == {run4.key_hash(k) for k in moved}
    assert all(n == 2 for n in run4.draining().values())  # two unacked messages per key before the join


def test_after_join_accepts_the_right_answer() -> None:
    result = kso.check_after_join({"3.0": [], "4.0": ["m13"]})
    assert result.ok, result.message


def test_after_join_rejects_4_0_thinking_on_3_0() -> None:
    rejected(
        kso.check_after_join({"3.0": ["m13"], "4.0": ["m13"]}),
        "3.0: c2 cannot receive m13",
        "for ALL its keys",
        "readPositionWhenJoining",
    )


def test_after_join_rejects_draining_hashes_as_free() -> None:
    message = rejected(kso.check_after_join({"3.0": [], "4.0": ["m8", "m13"]}), "4.0: c2 cannot receive m8")
    assert "drainingHashes" in message


def test_after_join_rejects_3_0_thinking_on_4_0() -> None:
    rejected(kso.check_after_join({"3.0": [], "4.0": []}), "4.0: c2 does receive m13", "nothing to drain")


def test_after_join_rejects_a_key_of_the_other_consumer() -> None:
    run4 = kso.run_join("4.0")
    c1_label = next(l for l in run4.after if run4.owner(run4.keys[l]) == "c1")
    rejected(kso.check_after_join({"3.0": [], "4.0": ["m13", c1_label]}), "belongs to c1")


def test_after_acks_3_0_waits_for_the_mark_delete_4_0_releases_the_hash() -> None:
    result = kso.check_after_acks({"3.0": [], "4.0": ["m11", "m13"]}, acked_keys=["order-4"])
    assert result.ok, result.message
    rejected(
        kso.check_after_acks({"3.0": ["m11"], "4.0": ["m11", "m13"]}, acked_keys=["order-4"]),
        "the mark-delete stays at 3:-1 because m0 (order-1) is not acknowledged",
    )
    rejected(
        kso.check_after_acks({"3.0": [], "4.0": ["m13"]}, acked_keys=["order-4"]),
        "4.0: c2 does receive m11",
        "draining entry is gone",
    )


def test_after_all_acks_3_0_releases_the_recently_joined_consumer() -> None:
    keys = sorted(set(kso.KEYS_BEFORE))
    run3 = kso.run_join("3.0")
    run3.ack_keys(keys)
    assert run3.stats()["consumersAfterMarkDeletePosition"] == {}
    assert run3.queued(run3.c2) == [l for l in run3.after if run3.owner(run3.keys[l]) == "c2"]
    rejected(
        kso.check_after_acks({"3.0": [], "4.0": ["m8", "m9", "m11", "m13"]}, acked_keys=keys),
        "3.0: c2 does receive",
        "past c2's join position",
    )


def test_ordering_checker_rejects_malformed_answers() -> None:
    rejected(kso.check_after_join(["m13"]), 'should be a dict {"3.0"')
    rejected(kso.check_after_join({"3.0": "m13", "4.0": []}), "give a list of message labels")
    rejected(kso.check_after_join({"3.0": ["m99"], "4.0": ["m13"]}), "there is no message m99")


# --- lab 06: debugging ----------------------------------------------------------------------------


def test_pinning_entry_of_the_ack_holes_sample_with_unicode_ellipsis_and_trailing_commas() -> None:
    path = DATA / "ack-holes.stats-internal.json"
    assert "\u2025" in path.read_text(encoding="utf-8")
    assert dbg.pinning_entry(path, "settlement-writer") == "2371:5"
    assert dbg.pinning_entry(path, "settlement-audit") is None
    assert dbg.check_pinning_entry("2371:5", path, "settlement-writer").ok
    assert dbg.check_pinning_entry("2371:5", str(path), "settlement-writer").ok  # a file name works too
    rejected(dbg.check_pinning_entry("2398:119", path, "settlement-audit"), "nothing pins this mark-delete")


@pytest.mark.parametrize(
    "answer, needle",
    [
        ("2371:4", "markDeletePosition itself"),
        ("2371:6", "open at its start"),
        ("2371:10", "not the first such entry: 2371:5 comes before it"),
        ("2398:120", "is the readPosition"),
        ("2398:500", "there is no entry 2398:500"),
        ("2371:5:-1", "'ledger:entry'"),
        (23715, "'ledger:entry'"),
    ],
)
def test_pinning_entry_rejects_typical_mistakes(answer, needle) -> None:
    rejected(dbg.check_pinning_entry(answer, DATA / "ack-holes.stats-internal.json", "settlement-writer"), needle)


def test_pinning_entry_of_a_lab_hole_across_a_ledger_boundary() -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    client = lab.client()
    consumer = client.subscribe("t", "s", lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(7):
        producer.send(b"%d" % i)
    msgs = [consumer.receive(0) for _ in range(7)]
    for m in msgs[:3] + msgs[4:]:
        consumer.acknowledge(m)
    internal = lab.admin.topics.stats_internal("t")
    assert internal["cursors"]["s"]["markDeletePosition"] == "3:2"
    assert dbg.pinning_entry(internal, "s") == "4:0"  # the entry after a ledger's last one is the next ledger's 0
    assert dbg.check_pinning_entry("4:0", json.dumps(internal), "s").ok
    rejected(dbg.check_pinning_entry("3:3", internal, "s"), "ledger 3 has 3 entries", "next ledger's entry 0")


def test_blocked_consumer_sample() -> None:
    path = DATA / "shared-blocked-consumer.stats.json"
    assert [(b.who, b.setting) for b in dbg.blocked_on_unacked(path, "email-sender")] == [
        ("sender-0", dbg.PER_CONSUMER)
    ]
    assert dbg.check_blocked_consumer({"blocked": "sender-0", "setting": dbg.PER_CONSUMER}, path, "email-sender").ok
    assert dbg.check_blocked_consumer(
        {"blocked": "email-audit", "setting": dbg.PER_SUBSCRIPTION}, path, "email-audit"
    ).ok
    rejected(
        dbg.check_blocked_consumer({"blocked": "sender-1", "setting": dbg.PER_CONSUMER}, path, "email-sender"),
        "availablePermits 0 but blockedConsumerOnUnackedMsgs is false",
        "receiver queue is full",
    )
    rejected(
        dbg.check_blocked_consumer({"blocked": "sender-0", "setting": dbg.PER_SUBSCRIPTION}, path, "email-sender"),
        "blocked by its own count",
    )
    rejected(
        dbg.check_blocked_consumer({"blocked": "sender-0", "setting": "receiverQueueSize"}, path, "email-sender"),
        "'receiverQueueSize' is not the setting",
    )
    rejected(
        dbg.check_blocked_consumer({"blocked": "auditor-1", "setting": dbg.PER_CONSUMER}, path, "email-audit"),
        "auditor-1 has availablePermits 0",
    )
    rejected(dbg.check_blocked_consumer("sender-0", path, "email-sender"), "should be a dict")


def test_blocked_consumer_in_the_lab() -> None:
    lab = pl.Lab(version="3.0", broker_config={"maxUnackedMessagesPerConsumer": 20})
    client = lab.client()
    slow = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="slow")
    fast = client.subscribe(
        "t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="fast", lab_ack_group_time_ms=0
    )
    producer = client.create_producer("t")
    for i in range(60):
        producer.send(b"%d" % i)
        while fast.receiver_queue:
            fast.acknowledge(fast.receive(0))
    stats = lab.admin.topics.stats("t")
    assert dbg.check_blocked_consumer({"blocked": "slow", "setting": dbg.PER_CONSUMER}, stats, "s").ok
    rejected(
        dbg.check_blocked_consumer({"blocked": "fast", "setting": dbg.PER_CONSUMER}, stats, "s"), "fast is not blocked"
    )
    assert slow.receiver_queue  # it holds messages: it is the application that does not ack


def test_draining_sample_and_lab() -> None:
    path = DATA / "key-shared-4x-draining.stats.json"
    right = {"holder": "fulfilment-a", "waiting": "fulfilment-b", "messages_to_ack": 10}
    assert dbg.check_draining(right, path, "fulfilment").ok
    rejected(
        dbg.check_draining({**right, "holder": "fulfilment-b", "waiting": "fulfilment-a"}, path, "fulfilment"),
        "fulfilment-b is the one that WAITS",
    )
    rejected(dbg.check_draining({**right, "messages_to_ack": 5}, path, "fulfilment"), "number of hashes")
    rejected(dbg.check_draining({**right, "messages_to_ack": 30}, path, "fulfilment"), "30 unacked messages in all")

    run = kso.run_join("4.0")
    stats = run.lab.admin.topics.stats(kso.TOPIC)
    summary = dbg.draining_summary(stats, kso.SUBSCRIPTION)
    assert [(d.holder, d.waiting, d.messages) for d in summary] == [("c1", ("c2",), sum(run.draining().values()))]
    assert dbg.check_draining(
        {"holder": "c1", "waiting": "c2", "messages_to_ack": summary[0].messages}, stats, kso.SUBSCRIPTION
    ).ok
    rejected(
        dbg.check_draining(right, DATA / "shared-healthy.stats.json", "invoice-writer"),
        "no consumer of invoice-writer drains a hash",
    )


# --- exercises as shipped: answer_N = ... ------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        subs.check_shared_dispatch,
        subs.check_flow_commands,
        subs.check_disconnect,
        kso.check_after_join,
        kso.check_after_acks,
        dbg.check_pinning_entry,
        dbg.check_blocked_consumer,
        dbg.check_draining,
    ],
    ids=lambda c: c.__name__,
)
def test_checker_on_ellipsis_says_not_answered_yet(check) -> None:
    """The shipped ``answer_N = ...`` is not a wrong answer: no model run, no problems, just what to write."""
    message = unanswered(check(...))
    assert message.endswith(check.todo)


def test_wrong_answers_say_where_to_look() -> None:
    where = where_to_look(subs.check_flow_commands([8, 1], receiver_queue_size=8, published=40, received=13), 2)
    assert "flow-control.md#flow-permits" in where
    where = where_to_look(subs.check_shared_dispatch("A", consumers=[("A", 0, 1)], messages=1), 2)
    assert "Shared: round robin" in where
    where = where_to_look(kso.check_after_join({"3.0": ["m8"], "4.0": []}), 5)
    assert "key-shared-ordering.md#" in where
    where = where_to_look(
        dbg.check_pinning_entry("1:1", DATA / "ack-holes.stats-internal.json", "settlement-writer"), 6
    )
    assert "cursor.md#holes" in where


def test_right_answers_say_why_and_not_where_to_look() -> None:
    result = subs.check_flow_commands([8, 4, 4, 4], receiver_queue_size=8, published=40, received=13)
    assert result.ok and result.answered
    assert "hand 4 permit(s) back" in result.message and "Where to look" not in result.message
