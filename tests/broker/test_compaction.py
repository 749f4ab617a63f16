"""Topic compaction in the model (`broker.compaction`) through lab.client() and the broker's commands."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.broker.compaction import combine_masks, compact
from pulsarlab.errors import NotAllowedException
from pulsarlab.managed_ledger.position import Position

T = "persistent://public/default/t"


def _drain(consumer) -> list[tuple[str | None, bytes, str]]:
    out = []
    while True:
        try:
            m = consumer.receive(100)
        except pl.Timeout:
            return out
        out.append((m.partition_key(), m.data(), str(m.message_id())))


def _lab(**config):
    lab = pl.Lab(version="4.0", seed=1, broker_config=config or None)
    return lab, lab.client()


def test_latest_value_per_key_empty_value_deletes_keyless_dropped():
    lab, client = _lab()
    client.subscribe("t", "view", is_read_compacted=True).close()
    p = client.create_producer("t")
    for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k3", b"x"), ("k3", b""), (None, b"nokey")]:
        p.send(value, partition_key=key)
    assert lab.admin.topics.compaction_status(T)["status"] == "NOT_RUN"
    lab.admin.topics.trigger_compaction(T)
    assert lab.admin.topics.compaction_status(T) == {"status": "SUCCESS", "lastError": ""}
    result = lab.service.topics[T].compacted
    assert result.horizon == Position(3, 5)
    assert result.positions == (Position(3, 1), Position(3, 2))
    assert result.removed == 4
    p.send(b"tail", partition_key="k1")
    view = client.subscribe("t", "view", is_read_compacted=True)
    assert _drain(view) == [("k2", b"b", "3:1:-1"), ("k1", b"c", "3:2:-1"), ("k1", b"tail", "3:6:-1")]
    plain = client.subscribe("t", "plain", initial_position=pl.InitialPosition.Earliest)
    assert len(_drain(plain)) == 7  # a consumer that does not read compacted sees every message


def test_retain_null_key_keeps_keyless_messages():
    lab, client = _lab(topicCompactionRetainNullKey=True)
    p = client.create_producer("t")
    p.send(b"no key")
    p.send(b"v1", partition_key="k")
    p.send(b"v2", partition_key="k")
    lab.admin.topics.trigger_compaction(T)
    assert lab.service.topics[T].compacted.positions == (Position(3, 0), Position(3, 2))


def test_a_batch_keeps_only_its_latest_messages():
    lab, client = _lab()
    p = client.create_producer("t", batching_enabled=True, batching_max_messages=4)
    for key, value in [("a", b"1"), ("b", b"2"), ("a", b"3"), ("c", b"4")]:
        p.send_async(value, None, partition_key=key)
    p.flush()
    lab.admin.topics.trigger_compaction(T)
    assert lab.service.topics[T].compacted.masks == (0b1110,)
    view = client.subscribe("t", "view", is_read_compacted=True, initial_position=pl.InitialPosition.Earliest)
    assert [(k, v) for k, v, _ in _drain(view)] == [("b", b"2"), ("a", b"3"), ("c", b"4")]


def test_a_reader_position_after_the_horizon_reads_the_topic():
    lab, client = _lab()
    p = client.create_producer("t")
    p.send(b"old", partition_key="k")
    lab.admin.topics.trigger_compaction(T)
    c = client.subscribe("t", "late", is_read_compacted=True)  # Latest: after the horizon
    p.send(b"new", partition_key="k")
    assert _drain(c) == [("k", b"new", "3:1:-1")]


def test_read_compacted_only_on_exclusive_or_failover():
    lab, client = _lab()
    for sub_type in (pl.ConsumerType.Shared, pl.ConsumerType.KeyShared):
        with pytest.raises(NotAllowedException, match="readCompacted only allowed on failover or exclusive"):
            client.subscribe("t", f"s-{sub_type.name}", consumer_type=sub_type, is_read_compacted=True)
    client.subscribe("t", "f", consumer_type=pl.ConsumerType.Failover, is_read_compacted=True)


def test_compaction_of_an_empty_topic_and_the_masks():
    lab, client = _lab()
    client.create_producer("t")
    result = compact(lab.service.topics[T])
    assert result.positions == () and result.removed == 0
    assert combine_masks(None, 0b101) == 0b101 and combine_masks(0b110, 0b011) == 0b010
    assert combine_masks(None, None) is None


def _drain_acked(consumer) -> int:
    n = 0
    while True:
        try:
            consumer.acknowledge(consumer.receive(100))
        except pl.Timeout:
            return n
        n += 1


def test_compacted_reads_survive_trimming_and_the_compactor_holds_what_it_has_not_read():
    lab, client = _lab(managedLedgerMaxEntriesPerLedger=2, defaultRetentionTimeInMinutes=0, defaultRetentionSizeInMB=0)
    everyone = client.subscribe("t", "all", initial_position=pl.InitialPosition.Earliest)
    p = client.create_producer("t", batching_enabled=False)
    for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k2", b"d"), ("k3", b"e")]:
        p.send(value, partition_key=key)
    lab.admin.topics.trigger_compaction(T)  # horizon 5:0 (ledgers 3: a b, 4: c d, 5: e)
    assert _drain_acked(everyone) == 5
    lab.run_until_idle()
    ledgers = [led["ledgerId"] for led in lab.admin.topics.stats_internal("t")["ledgers"]]
    assert ledgers == [5]  # consumed and compacted: the ledgers before the horizon's ledger are gone
    # a compacted reader from the earliest position still gets the compacted entries of the trimmed ledgers
    view = client.create_reader("t", pl.MessageId.earliest, is_read_compacted=True)
    assert [view.read_next(100).data() for _ in range(3)] == [b"c", b"d", b"e"]
    view.close()
    # after the horizon the compactor's cursor holds the entries until the next compaction reads them
    for key, value in [("k1", b"f"), ("k3", b"g"), ("k1", b"h")]:
        p.send(value, partition_key=key)
    assert _drain_acked(everyone) == 3
    lab.run_until_idle()
    assert [led["ledgerId"] for led in lab.admin.topics.stats_internal("t")["ledgers"]] == [5, 6, 7]
    lab.admin.topics.trigger_compaction(T)  # reads the previous compacted view and the entries after it
    result = lab.service.topics[T].compacted
    assert result.removed == 3  # k1 = c, k3 = e and k1 = f, left out in this round (the first round's not again)
    late = client.create_reader("t", pl.MessageId.earliest, is_read_compacted=True)
    assert [late.read_next(100).data() for _ in range(3)] == [b"d", b"g", b"h"]
    assert [led["ledgerId"] for led in lab.admin.topics.stats_internal("t")["ledgers"]] == [7]


def test_a_trim_leaves_a_compacted_reader_where_it_is():
    lab, client = _lab(managedLedgerMaxEntriesPerLedger=2, defaultRetentionTimeInMinutes=0, defaultRetentionSizeInMB=0)
    everyone = client.subscribe("t", "all", initial_position=pl.InitialPosition.Earliest)
    p = client.create_producer("t", batching_enabled=False)
    for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c")]:  # ledger 3: a b, ledger 4: c
        p.send(value, partition_key=key)
    lab.admin.topics.trigger_compaction(T)  # horizon 4:0
    # a zero queue: the reader reads nothing before the trim below
    reader = client.create_reader("t", pl.MessageId.earliest, is_read_compacted=True, receiver_queue_size=0)
    assert _drain_acked(everyone) == 3
    lab.run_until_idle()
    assert [led["ledgerId"] for led in lab.admin.topics.stats_internal("t")["ledgers"]] == [4]
    # advanceCursorsIfNecessary skips a compacted reader: it still reads k2 = b from the trimmed ledger 3
    assert [reader.read_next().data() for _ in range(2)] == [b"b", b"c"]
