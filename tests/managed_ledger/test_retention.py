"""Retention and trimming of consumed ledgers (`ManagedLedgerImpl.internalTrimLedgers`, `RetentionPolicies`): which
ledgers go, when, what stats-internal shows after, readers, the namespace policy in ``lab.admin``, and the memory the
trimmed entries held."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.admin import BadRequestException, NotFoundException
from pulsarlab.managed_ledger.retention import RetentionPolicies, TrimCandidate, ledgers_to_delete, next_check_at

PULSAR_DEFAULTS = {"defaultRetentionTimeInMinutes": 0, "defaultRetentionSizeInMB": 0}
MB = 1024 * 1024


def lab_with(per_ledger: int = 3, **conf) -> pl.Lab:
    return pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": per_ledger, **PULSAR_DEFAULTS, **conf})


def produce(lab: pl.Lab, topic: str, n: int) -> None:
    producer = lab.client().create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(f"m{i}".encode())
    lab.run_until_idle()


def consume(consumer, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        msg = consumer.receive(timeout_millis=1000)
        consumer.acknowledge(msg)
        out.append(msg.data())
    return out


def seven_over_three_ledgers(lab: pl.Lab):
    """Subscription ``s`` from the earliest position, then 7 messages: ledgers 3 (0-2), 4 (0-2), 5 (0, current)."""
    consumer = lab.client().subscribe("t", "s", initial_position=pl.InitialPosition.Earliest)
    produce(lab, "t", 7)
    return consumer


def ledger_ids(lab: pl.Lab, topic: str) -> list[int]:
    return [led["ledgerId"] for led in lab.admin.topics.stats_internal(topic)["ledgers"]]


def test_consumed_ledgers_are_deleted_with_pulsars_defaults_and_stats_show_it() -> None:
    lab = lab_with()
    consumer = lab.client().subscribe("t", "s", initial_position=pl.InitialPosition.Earliest)
    produce(lab, "t", 7)  # ledgers 3:0-2, 4:0-2, 5:0 (current)
    before = lab.admin.topics.stats_internal("t")
    assert [led["ledgerId"] for led in before["ledgers"]] == [3, 4, 5]
    assert consume(consumer, 7) == [f"m{i}".encode() for i in range(7)]
    lab.run_until_idle()
    internal = lab.admin.topics.stats_internal("t")
    assert [led["ledgerId"] for led in internal["ledgers"]] == [5]
    assert internal["entriesAddedCounter"] == 7  # the counter stays
    assert internal["numberOfEntries"] == 1  # the current ledger's entry
    one_entry = before["totalSize"] // 7
    assert internal["totalSize"] == one_entry
    assert lab.admin.topics.stats("t")["storageSize"] == one_entry
    assert internal["cursors"]["s"]["markDeletePosition"] == "5:0"
    ml = lab.service.topics["persistent://public/default/t"].ledger
    assert sorted(ml._entries) == [5]  # the trimmed entries left memory
    # the grouped acks reach the broker in one flush: the mark-delete moves 3:-1 -> 5:0, one trim takes both ledgers
    trimmed = lab.events.of_kind("ledgers_trimmed")
    assert [(e.first, e.last, e.ledgers, e.entries) for e in trimmed] == [(3, 4, 2, 6)]


def test_the_slowest_durable_cursor_holds_ledgers_back() -> None:
    lab = lab_with()
    client = lab.client()
    fast = client.subscribe("t", "fast", initial_position=pl.InitialPosition.Earliest)
    slow = client.subscribe("t", "slow", initial_position=pl.InitialPosition.Earliest)
    produce(lab, "t", 7)
    consume(fast, 7)
    lab.run_until_idle()
    assert ledger_ids(lab, "t") == [3, 4, 5]
    consume(slow, 4)  # its mark-delete moves into ledger 4: ledger 3 goes
    lab.run_until_idle()
    assert ledger_ids(lab, "t") == [4, 5]
    assert lab.admin.topics.stats("t")["subscriptions"]["slow"]["msgBacklog"] == 3


def test_a_lab_keeps_every_ledger_unless_told() -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    consumer = seven_over_three_ledgers(lab)
    consume(consumer, 7)
    lab.run_until_idle()
    assert ledger_ids(lab, "t") == [3, 4, 5]
    assert lab.admin.namespaces.get_retention("public/default") is None


def test_without_durable_cursors_every_closed_ledger_goes() -> None:
    lab = lab_with()
    produce(lab, "t", 7)
    assert ledger_ids(lab, "t") == [5]
    assert lab.admin.topics.stats_internal("t")["entriesAddedCounter"] == 7


def test_a_reader_holds_nothing_back_and_starts_at_the_first_ledger_left() -> None:
    lab = lab_with()
    produce(lab, "t", 7)
    reader = lab.client().create_reader("t", pl.MessageId.earliest)
    msg = reader.read_next(timeout_millis=1000)
    assert msg.data() == b"m6"  # entries 0..5 were in deleted ledgers
    assert (msg.message_id().ledger_id(), msg.message_id().entry_id()) == (5, 0)


def test_time_retention_keeps_consumed_ledgers_until_the_periodic_check_after_the_limit() -> None:
    lab = lab_with(defaultRetentionTimeInMinutes=1, defaultRetentionSizeInMB=-1)
    consumer = seven_over_three_ledgers(lab)
    consume(consumer, 7)
    closed_at = lab.now()
    lab.advance(60_000)
    assert ledger_ids(lab, "t") == [3, 4, 5]
    lab.run_until_idle()  # the retention check at the first 120 s tick after the minute has passed
    assert ledger_ids(lab, "t") == [5]
    (trim,) = lab.events.of_kind("ledgers_trimmed")
    assert trim.time == 120_000 and trim.time - closed_at > 60_000


def test_size_retention_keeps_the_newest_consumed_ledgers_under_the_limit() -> None:
    lab = lab_with(per_ledger=2, defaultRetentionTimeInMinutes=-1, defaultRetentionSizeInMB=1)
    consumer = lab.client().subscribe("t", "s", initial_position=pl.InitialPosition.Earliest)
    producer = lab.client().create_producer("t", batching_enabled=False)
    for i in range(9):  # about 0.3 MB each: four full ledgers of 0.6 MB and one entry in the current ledger
        producer.send(bytes(300_000))
    consume(consumer, 9)
    lab.run_until_idle()
    internal = lab.admin.topics.stats_internal("t")
    # a ledger goes while what stays after it is still >= 1 MB: two closed ledgers and the current one stay
    assert [led["ledgerId"] for led in internal["ledgers"]] == [5, 6, 7]
    assert internal["totalSize"] >= MB


def test_trimming_follows_a_namespace_policy_set_later() -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    consumer = seven_over_three_ledgers(lab)
    consume(consumer, 6)
    lab.run_until_idle()
    lab.admin.namespaces.set_retention("public/default", 0, 0)
    assert lab.admin.namespaces.get_retention("public/default") == {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    assert ledger_ids(lab, "t") == [3, 4, 5]  # a policy change trims nothing by itself
    consume(consumer, 1)  # the mark-delete moves into ledger 5: the trim runs
    lab.run_until_idle()
    assert ledger_ids(lab, "t") == [5]
    lab.admin.namespaces.remove_retention("public/default")
    assert lab.admin.namespaces.get_retention("public/default") is None


@pytest.mark.parametrize("minutes,size", [(1, 0), (0, 1), (-1, 0), (0, -1), (-2, 1), (1, -2)])
def test_invalid_retention_policies_are_refused_with_pulsars_text(minutes: int, size: int) -> None:
    lab = pl.Lab()
    with pytest.raises(BadRequestException, match="^Invalid retention policy"):
        lab.admin.namespaces.set_retention("public/default", minutes, size)
    assert lab.admin.namespaces.get_retention("public/default") is None


def test_retention_of_an_unknown_namespace_is_not_found() -> None:
    lab = pl.Lab()
    with pytest.raises(NotFoundException):
        lab.admin.namespaces.get_retention("public/nope")
    with pytest.raises(NotFoundException):
        lab.admin.namespaces.set_retention("public/nope", -1, -1)


def test_an_invalid_broker_default_is_refused_when_the_broker_starts() -> None:
    with pytest.raises(ValueError, match="Invalid retention policy: Setting a single time"):
        pl.Lab(broker_config={"defaultRetentionTimeInMinutes": 5, "defaultRetentionSizeInMB": 0})
    with pytest.raises(ValueError, match="retentionSizeInMB must be an integer"):
        pl.Lab(broker_config={"defaultRetentionTimeInMinutes": -1, "defaultRetentionSizeInMB": "lots"})


def test_the_selection_rule() -> None:
    c = [TrimCandidate(3, 400_000, 1_000), TrimCandidate(4, 400_000, 2_000), TrimCandidate(5, 400_000, 3_000)]
    total = 1_300_000
    assert ledgers_to_delete(c, RetentionPolicies(0, 0), total, 3_000) == ([3, 4, 5], None)
    assert ledgers_to_delete(c, RetentionPolicies(-1, -1), total, 10**9) == ([], c[0])
    # size: a ledger goes while what stays is still >= the limit (1 MB = 1048576 bytes)
    assert ledgers_to_delete(c, RetentionPolicies(-1, 1), 2 * MB + 100_000, 3_000)[0] == [3, 4]
    # time: strictly older than the limit, the walk stops at the first kept ledger
    assert ledgers_to_delete(c, RetentionPolicies(1, -1), total, 62_000) == ([3], c[1])
    assert next_check_at(c[1], RetentionPolicies(1, -1), 0, 120_000) == 120_000
    assert next_check_at(c[1], RetentionPolicies(-1, 5), 0, 120_000) is None


def test_seeking_into_a_trimmed_ledger_reads_from_the_first_entry_left_and_the_last_id_stays() -> None:
    lab = lab_with()
    client = lab.client()
    consumer = client.subscribe("t", "s", initial_position=pl.InitialPosition.Earliest)
    produce(lab, "t", 6)  # ledgers 3 and 4 full, 5 current and empty
    consume(consumer, 6)
    lab.run_until_idle()
    internal = lab.admin.topics.stats_internal("t")
    assert [led["ledgerId"] for led in internal["ledgers"]] == [5]
    assert internal["lastConfirmedEntry"] == "4:2"  # on a deleted ledger: the last id outlives its ledger
    (broker_consumer,) = lab.service.topics["persistent://public/default/t"].subscriptions["s"].consumers()
    last = lab.service.get_last_message_id(broker_consumer)  # GET_LAST_MESSAGE_ID without a batch index
    assert (last.ledger_id, last.entry_id, last.batch_index) == (4, 2, -1)
    produce(lab, "t", 2)  # 5:0, 5:1
    consumer.seek(pl.MessageId.earliest)
    assert consume(consumer, 2) == [b"m0", b"m1"]  # the second producer's m0, m1 at 5:0, 5:1
    lab.admin.topics.reset_cursor("t", "s", message_id=(3, 1))
    assert lab.admin.topics.stats_internal("t")["cursors"]["s"]["readPosition"] == "5:0"
