"""EntryData's compact storage and the caches on the Key_Shared dispatch path give the same answers as before.

* ``EntryData(metadata, messages)`` keeps its validation, ``messages`` gives equal pairs back, equality and repr
  are the dataclass's; `EntryData.of_rows` / `EntryData.single` (the producers' paths) build equal entries.
* Stored batch rows of plain values leave the cyclic garbage collector's view after collections.
* A received batch message reads its properties, keys and event time from the stored row.
* The consistent-hashing selector's per-hash answers follow consumer changes.
"""

from __future__ import annotations

import gc

import pytest

import pulsarlab as pl
from pulsarlab.broker.key_shared import make_selector
from pulsarlab.messages import EntryData, MessageMetadata, SingleMessageMetadata


def _batch_meta(n: int) -> MessageMetadata:
    return MessageMetadata("p", 0, 5, partition_key="k", num_messages_in_batch=n)


def test_messages_round_trip_equality_and_repr() -> None:
    singles = [
        (SingleMessageMetadata(2, {"a": "1"}, "k", False, b"o", 7, 0), b"ab"),
        (SingleMessageMetadata(3, sequence_id=1), b"abc"),
    ]
    entry = EntryData(_batch_meta(2), singles)
    assert entry.messages == singles
    assert entry.size == 5
    assert entry.payloads == (b"ab", b"abc")
    assert entry == EntryData(_batch_meta(2), [(s, p) for s, p in singles])
    assert entry != EntryData(_batch_meta(2), [singles[0], (SingleMessageMetadata(3, sequence_id=2), b"abc")])
    assert repr(entry) == f"EntryData(metadata={_batch_meta(2)!r}, messages={singles!r})"
    rows = tuple(s.as_row() for s, _ in singles)
    assert EntryData.of_rows(_batch_meta(2), (b"ab", b"abc"), rows) == entry
    plain = EntryData(MessageMetadata("p", 1, 5), [(None, b"xyz")])
    assert plain == EntryData.single(MessageMetadata("p", 1, 5), b"xyz")
    assert plain.messages == [(None, b"xyz")] and plain.size == 3
    with pytest.raises(TypeError):
        hash(plain)


def test_validation_texts_are_kept() -> None:
    with pytest.raises(ValueError, match="batch entry declares 2 messages but holds 1"):
        EntryData(_batch_meta(2), [(SingleMessageMetadata(1), b"a")])
    with pytest.raises(ValueError, match=r"a non-batch entry holds exactly one \(None, payload\) message"):
        EntryData(MessageMetadata("p", 0, 0), [(SingleMessageMetadata(1), b"a")])


def test_stored_rows_leave_the_collectors_view() -> None:
    entry = EntryData(_batch_meta(2), [(SingleMessageMetadata(1, sequence_id=i), b"a") for i in range(2)])
    gc.collect()  # untracks the rows (tuples of atomic values) ...
    gc.collect()  # ... and then the tuple holding them
    assert not any(gc.is_tracked(row) for row in entry.rows)
    assert not gc.is_tracked(entry.rows) and not gc.is_tracked(entry.payloads)
    with_props = EntryData(_batch_meta(1), [(SingleMessageMetadata(1, {"a": "b"}), b"a")])
    assert with_props.messages[0][0].properties == {"a": "b"}


def test_received_batch_messages_read_their_rows() -> None:
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    consumer = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared)
    producer = client.create_producer("t", batching_enabled=True, batching_max_messages=3)
    producer.send_async(b"a", None, properties={"x": "1"}, partition_key="k1", event_timestamp=9)
    producer.send_async(b"b", None, ordering_key="ok")
    producer.send_async(b"c", None)
    got = [consumer.receive(0) for _ in range(3)]
    assert [m.data() for m in got] == [b"a", b"b", b"c"]
    assert [m.properties() for m in got] == [{"x": "1"}, {}, {}]
    assert [m.partition_key() for m in got] == ["k1", "", ""]
    assert [m.ordering_key() for m in got] == ["", "ok", ""]
    assert [m.event_timestamp() for m in got] == [9, 0, 0]
    assert [str(m.message_id()) for m in got] == [f"{got[0].message_id().ledger}:0:-1:{i}" for i in range(3)]


class _C:
    def __init__(self, cid: int, name: str) -> None:
        self.id, self.name, self.priority = cid, name, 0


@pytest.mark.parametrize("version", ["3.0.0", "3.0.3", "3.0", "4.0"])
def test_selector_answers_follow_consumer_changes(version: str) -> None:
    sel = make_selector("consistent_hashing", version, points=20)
    ref = make_selector("consistent_hashing", version, points=20)

    def uncached(h: int):
        ref._selected.clear()
        return ref.select(h)

    consumers = [_C(i, f"c{i}") for i in range(3)]
    hashes = range(1, 2**16, 97)
    for c in consumers:
        sel.add_consumer(c)
        ref.add_consumer(c)
        expected = [uncached(h) for h in hashes]
        assert [sel.select(h) for h in hashes] == expected
        assert [sel.select(h) for h in hashes] == expected  # answered from the cache
    sel.remove_consumer(consumers[1])
    ref.remove_consumer(consumers[1])
    assert [sel.select(h) for h in hashes] == [uncached(h) for h in hashes]
    assert consumers[1] not in {sel.select(h) for h in hashes}
    with pytest.raises(ValueError):
        sel.select(-1)
