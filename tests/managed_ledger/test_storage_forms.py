"""The compact forms the hot paths keep give the same answers as the plain ones.

* `EntryData.stored` / `from_stored` round-trip every entry and leave the collector's view; a ledger read gives
  entries equal to what was written, whether it is the entry just written or an older one (in a stored block or
  not).
* The event log's chunked columns: the same events give the same digest, sizes and decoded events whatever reads
  (flushes) happen in between.
* `OpenLongPairRangeSet.has_any_from` agrees with a plain scan; the replay set's size and membership (both
  modes) agree with its positions.
* The Key_Shared dispatcher's per-key hash memo gives the selector's own hash of the sticky key.
"""

from __future__ import annotations

import gc
import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

import pulsarlab as pl
from pulsarlab.broker.redelivery import MessageRedeliveryController
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.events import EventLog
from pulsarlab.managed_ledger.position import Position
from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet
from pulsarlab.messages import EntryData, MessageMetadata, SingleMessageMetadata

props = st.one_of(st.just({}), st.dictionaries(st.sampled_from("abc"), st.sampled_from(["1", "2"]), max_size=2))
keys = st.one_of(st.none(), st.sampled_from(["k1", "k2", "a2V5"]))


@st.composite
def entries(draw) -> EntryData:
    n = draw(st.one_of(st.none(), st.integers(1, 4)))
    meta = MessageMetadata(
        "p",
        draw(st.integers(0, 10**6)),
        draw(st.integers(0, 10**6)),
        properties=draw(props),
        partition_key=draw(keys),
        partition_key_b64_encoded=draw(st.booleans()),
        ordering_key=draw(st.one_of(st.none(), st.just(b"ok"))),
        num_messages_in_batch=n,
        deliver_at_time=draw(st.one_of(st.none(), st.integers(0, 99))),
    )
    if n is None:
        return EntryData(meta, [(None, draw(st.binary(max_size=5)))])
    return EntryData(meta, [(SingleMessageMetadata(1, draw(props), sequence_id=i), b"x") for i in range(n)])


@settings(max_examples=80, deadline=None)
@given(entry=entries())
def test_stored_form_round_trips(entry: EntryData) -> None:
    stored = entry.stored()
    back = EntryData.from_stored(stored)
    assert back == entry and back is not entry
    assert back.metadata == entry.metadata and back.size == entry.size
    assert back.metadata.properties is not None


def test_stored_form_of_plain_entries_leaves_the_collectors_view() -> None:
    meta = MessageMetadata("p", 1, 2, partition_key="k", num_messages_in_batch=2)
    stored = EntryData(meta, [(SingleMessageMetadata(1, sequence_id=i), b"a") for i in range(2)]).stored()
    for _ in range(3):
        gc.collect()
    assert not gc.is_tracked(stored)


@settings(max_examples=40, deadline=None)
@given(
    sends=st.lists(st.tuples(st.sampled_from(["k1", "k2", None]), st.integers(1, 4)), min_size=1, max_size=12),
    max_entries=st.integers(1, 3),
)
def test_ledger_reads_give_what_was_written(sends, max_entries) -> None:
    import pulsarlab.managed_ledger.ledger as ledger_module

    saved = ledger_module._BLOCK
    ledger_module._BLOCK = 2  # entries cross block boundaries
    try:
        _check_ledger_reads(sends, max_entries)
    finally:
        ledger_module._BLOCK = saved


def _check_ledger_reads(sends, max_entries) -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": max_entries + 1})
    producer = lab.client().create_producer("t", batching_enabled=True, batching_max_messages=3)
    ml = lab.service.topics["persistent://public/default/t"].ledger
    written = []
    original_add = ml.add_entry

    def add_entry(data, size=None):
        pos = original_add(data, size)
        written.append((pos, data))
        fresh = ml.read_entry(pos)  # the entry just written
        assert fresh == data
        return pos

    ml.add_entry = add_entry
    for key, n in sends:
        for _ in range(n):
            producer.send_async(b"v", None, partition_key=key)
        producer.flush()
    for pos, data in written:  # older entries, read back from the stored form
        assert ml.read_entry(pos) == data
        (pair,) = ml.read_run(pos.ledger_id, pos.entry_id, pos.entry_id + 1)
        assert pair[0] == pos and pair[1] == data
    for info in ml.ledgers:
        view = ml.entries_of(info.ledger_id)
        assert len(view) == info.entries
        expected = [d for p, d in written if p.ledger_id == info.ledger_id]
        assert list(view) == view[:] == expected
        assert view[1:] == expected[1:] and (not expected or view[-1] == expected[-1])


rows = st.lists(
    st.tuples(
        st.sampled_from([ev.FLOW, ev.RECEIVED, ev.DISPATCHED]),
        st.integers(0, 10**6),
        st.lists(st.integers(-(2**40), 2**40), min_size=0, max_size=6),
    ),
    max_size=300,
)


def _reference_digest(events: list) -> str:
    """What one array per column would hash: each column's int64 (kind: uint16) values, column by column."""
    import struct

    cols: list[list[int]] = [[] for _ in range(8)]
    for et, t, values in events:
        n = len(et.fields)
        padded = list(values[:n]) + [-(2**63)] * (n - len(values[:n])) + [0] * (6 - max(n, len(values[:n])))
        for i, v in enumerate([t, et.code, *padded]):
            cols[i].append(v)
    h = hashlib.sha256()
    for i, col in enumerate(cols):
        h.update(struct.pack(f"{len(col)}{'H' if i == 1 else 'q'}", *col))
    return h.hexdigest()


@settings(max_examples=60, deadline=None)
@given(events=rows, reads=st.sets(st.integers(0, 300), max_size=8), flush_events=st.sampled_from([3, 50, 4096]))
def test_event_log_chunks_do_not_depend_on_when_rows_are_flushed(events, reads, flush_events):
    import pulsarlab.events as E

    saved = E._FLUSH_EVENTS
    E._FLUSH_EVENTS = flush_events  # small chunks: many boundaries
    try:
        log = EventLog()
        for i, (et, t, values) in enumerate(events):
            log.append_row(et, t, *values[: len(et.fields)])
            if i in reads:
                assert log[i].time == t  # a read flushes what is pending
    finally:
        E._FLUSH_EVENTS = saved
    assert len(log) == len(events)
    assert log.nbytes == 58 * len(events)
    assert log.digest() == _reference_digest(events)
    assert [e.time for e in log] == [t for _, t, _ in events]
    assert len(log.of_kind("flow")) == sum(1 for et, _, _ in events if et is ev.FLOW)


@settings(max_examples=80, deadline=None)
@given(
    acks=st.lists(st.tuples(st.integers(3, 6), st.integers(0, 40)), max_size=30),
    probe=st.tuples(st.integers(2, 7), st.integers(0, 45)),
)
def test_has_any_from_agrees_with_a_scan(acks, probe) -> None:
    idm = OpenLongPairRangeSet()
    for ledger, entry in acks:
        idm.ack(ledger, entry)
    key, value = probe
    expected = any((ledger, entry) >= (key, value) for ledger, entry in set(acks))
    assert idm.has_any_from(key, value) == expected


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "upto", "clear"]), st.integers(0, 3), st.integers(0, 9), st.integers(0, 3)
        ),
        max_size=40,
    ),
    ooo=st.booleans(),
)
def test_replay_set_size_and_membership_follow_its_positions(ops, ooo) -> None:
    rm = MessageRedeliveryController(allow_out_of_order_delivery=ooo)
    for op, ledger, entry, h in ops:
        if op == "add":
            rm.add(ledger, entry, h)
        elif op == "remove":
            rm.remove(ledger, entry)
        elif op == "upto":
            rm.remove_all_up_to(ledger, entry)
        else:
            rm.clear()
        positions = rm.positions()
        assert len(rm) == len(positions) == len(rm.position_hashes())
        assert rm.is_empty() == (not positions)
        assert all(p in rm for p in positions)
        assert set(rm.position_hashes()) == set(positions)


@settings(max_examples=60, deadline=None)
@given(
    metas=st.lists(
        st.tuples(keys, st.booleans(), st.one_of(st.none(), st.sampled_from([b"o1", b"o2"])), st.integers(0, 50)),
        min_size=1,
        max_size=20,
    ),
    version=st.sampled_from(["3.0", "4.0"]),
)
def test_key_hash_memo_gives_the_selectors_hash(metas, version) -> None:
    lab = pl.Lab(version=version)
    lab.client().subscribe("t", "s", consumer_type=pl.ConsumerType.KeyShared)
    d = lab.service.topics["persistent://public/default/t"].subscriptions["s"].dispatcher
    for i, (pk, b64, ok, seq) in enumerate(metas):
        meta = MessageMetadata("p", seq, 0, partition_key=pk, partition_key_b64_encoded=b64, ordering_key=ok)
        data = EntryData.single(meta, b"v")
        expected = d.selector.make_sticky_key_hash(meta.sticky_key(d.profile))
        assert d.sticky_key_hash(Position(3, i), data) == expected
        assert d.sticky_key_hash(Position(3, i), data) == expected  # from the memo
