"""The event log: typed fields, explanations, determinism, export and size."""

from __future__ import annotations

import pytest

from pulsarlab.events import EventLog, EventValueError, event_type

DEMO = event_type("test_demo_moved", "who:str n:int ok:bool detail:json", "{who} moved {n} keys", rule="a test rule")


def test_append_and_decode_round_trip():
    log = EventLog()
    seq = log.append(DEMO, 5, who="c1", n=3, ok=True, detail={"ranges": [[0, 9]]})
    log.append("test_demo_moved", 7, who="c2", n=-1, ok=False)
    assert seq == 0 and len(log) == 2
    e = log[0]
    assert (e.seq, e.time, e.kind, e.who, e.n, e.ok, e.detail) == (
        0,
        5,
        "test_demo_moved",
        "c1",
        3,
        True,
        {"ranges": [[0, 9]]},
    )
    assert log[-1].detail is None
    assert e.explain() == "c1 moved 3 keys (a test rule)"
    assert [ev.seq for ev in log.since(1)] == [1]


def test_same_events_same_digest_and_different_events_differ():
    a, b, c = EventLog(), EventLog(), EventLog()
    for log in (a, b):
        log.append(DEMO, 1, who="c1", n=1, ok=True)
    c.append(DEMO, 1, who="c1", n=2, ok=True)
    assert a.digest() == b.digest() != c.digest()


def test_fixed_size_per_event():
    log = EventLog()
    for i in range(1000):
        log.append(DEMO, i, who=f"c{i % 7}", n=i, ok=i % 2 == 0)
    assert log.nbytes / len(log) <= 64


def test_disabled_log_records_nothing():
    log = EventLog(enabled=False)
    assert log.append(DEMO, 1, who="x", n=1, ok=True) == -1
    assert len(log) == 0


def test_bad_events_fail_clearly():
    log = EventLog()
    with pytest.raises(KeyError, match="no event type 'nope'"):
        log.append("nope", 0)
    with pytest.raises(ValueError, match="has no field"):
        log.append(DEMO, 0, colour="red")
    with pytest.raises(ValueError, match="already declared"):
        event_type("test_demo_moved", "who:str")
    with pytest.raises(ValueError, match="unknown type"):
        event_type("test_demo_bad", "x:float")
    with pytest.raises(IndexError):
        log[3]


PAIR = event_type("test_demo_pair", "a:int b:int", "{a} and {b}")


@pytest.mark.parametrize("rows", [3, 200])  # a short flush (row by row) and a long one (one array pass)
def test_append_row_stores_what_append_stores(rows):
    """append_row's unset columns: None for a declared field left out, 0 for a column the type does not declare
    (what append stores), whether the rows move into the columns a few or many at a time, or with a listener."""
    fast, slow, heard = EventLog(), EventLog(), EventLog()
    seen = []
    heard.subscribe(lambda e: seen.append((e.time, e.fields)))
    for i in range(rows):
        for log in (fast, heard):
            log.append_row(PAIR, i, i, -i)
            log.append_row(PAIR, i + 1, 7)
            log.append_row(DEMO, i + 2, log.intern("c1"), i, 1)  # detail (json) left out: None
        slow.append(PAIR, i, a=i, b=-i)
        slow.append(PAIR, i + 1, a=7)
        slow.append(DEMO, i + 2, who="c1", n=i, ok=True)
    assert fast.digest() == slow.digest() == heard.digest()
    assert fast.nbytes == slow.nbytes
    assert (fast[1].a, fast[1].b) == (7, None) and fast[2].detail is None
    assert seen[:2] == [(0, {"a": 0, "b": 0}), (1, {"a": 7, "b": None})]


@pytest.mark.parametrize("bad", ["x", 2**64 - 1, 2**63, 1.5])
def test_a_value_the_columns_cannot_hold_fails_where_it_is_appended(bad):
    log = EventLog()
    log.append_row(PAIR, 0, 1)
    with pytest.raises(EventValueError, match="event test_demo_pair at t=1"):
        log.append_row(PAIR, 1, bad)  # not an int64: refused here, nothing stored
    if not isinstance(bad, float):  # append converts with int(): 1.5 is stored as 1
        with pytest.raises(EventValueError, match="event test_demo_pair at t=1"):
            log.append(PAIR, 1, a=1, b=bad)
    log.append_row(PAIR, 2, 3, 4)
    for i in range(5000):  # past a flush: the columns take every row that was stored
        log.append_row(PAIR, 3 + i, i)
    assert [(e.time, e.a, e.b) for e in log][:2] == [(0, 1, None), (2, 3, 4)]
    assert len(log) == 5002
    reference = EventLog()
    reference.append(PAIR, 0, a=1)
    reference.append(PAIR, 2, a=3, b=4)
    for i in range(5000):
        reference.append(PAIR, 3 + i, a=i)
    assert log.digest() == reference.digest()
    with pytest.raises(TypeError):
        log.append_row(PAIR, 3, 1, 2, 3, 4, 5, 6, 7)  # more values than the six columns


def test_java_longs_at_the_edges_are_stored_and_minus_two_to_the_63_is_refused_as_a_value():
    log = EventLog()
    log.append(PAIR, 0, a=2**63 - 1, b=-(2**63) + 1)
    log.append_row(PAIR, 1, -1, 2**63 - 1)
    assert [(e.a, e.b) for e in log] == [(2**63 - 1, -(2**63) + 1), (-1, 2**63 - 1)]
    with pytest.raises(EventValueError, match="stands for None"):
        log.append(PAIR, 2, a=-(2**63))
    with pytest.raises(EventValueError, match="time"):
        log.append(PAIR, 2**63, a=1)


def test_listeners_see_each_event_and_can_unsubscribe():
    log, seen = EventLog(), []
    off = log.subscribe(lambda e: seen.append(e.seq))
    log.append(DEMO, 0, who="a", n=0, ok=True)
    off()
    log.append(DEMO, 1, who="a", n=0, ok=True)
    assert seen == [0]


def test_export_to_pandas_and_parquet(tmp_path):
    log = EventLog()
    log.append(DEMO, 3, who="c1", n=2, ok=True)
    df = log.to_pandas()
    assert list(df.columns[:3]) == ["seq", "time", "kind"]
    assert df.loc[0, "who"] == "c1" and df.loc[0, "n"] == 2
    path = tmp_path / "events.parquet"
    log.to_parquet(str(path))
    import pyarrow.parquet as pq

    assert pq.read_table(path).num_rows == 1


def test_a_window_keeps_the_newest_events_and_numbers_go_on() -> None:
    import pulsarlab.event_catalogue  # noqa: F401  (declares entry_written)
    from pulsarlab.events import _FLUSH_EVENTS

    log = EventLog(window=2 * _FLUSH_EVENTS)
    seen = []
    log.subscribe(seen.append)  # a listener (as --record's recorder) still gets every event
    n = 5 * _FLUSH_EVENTS + 7
    for i in range(n):
        log.append("entry_written", i, topic="t", ledger=3, entry=i, messages=1, size=10)
    assert len(log) == n and len(seen) == n
    first = log.first_seq
    assert n - first >= 2 * _FLUSH_EVENTS and n - first < 3 * _FLUSH_EVENTS + 7
    assert log[first].entry == first and log[-1].entry == n - 1
    with pytest.raises(IndexError, match="older than the log's window"):
        log[first - 1]
    assert [e.seq for e in log][:1] == [first] and len(list(log)) == n - first
    assert log.since(0)[0].seq == first
    assert len(log.of_kind("entry_written")) == n - first
    assert log.nbytes == (n - first) * 58
    assert len(log.columns()) == n - first
    log.set_window(None)
    log.append("entry_written", n, topic="t", ledger=3, entry=n, messages=1, size=10)
    assert log.first_seq == first
    with pytest.raises(ValueError):
        log.set_window(0)


def test_a_window_drops_the_strings_only_dropped_events_used() -> None:
    # a served run interns per-message texts (a chunked message's uuid, a redelivery request's ids): the window
    # bounded the rows but every text stayed in the string table, one per message for the run's life
    from pulsarlab.event_catalogue.chunk_assignment import CHUNK_PINNED
    from pulsarlab.events import _FLUSH_EVENTS

    log = EventLog(window=_FLUSH_EVENTS)
    subscription = log.intern("sub-1")  # an id a caller keeps: it stays
    n = 40 * _FLUSH_EVENTS
    for i in range(n):
        log.append_row(CHUNK_PINNED, i, 1, 2, log.text_id(f"uuid-{i}"), 3, i)
        if i % 1000 == 0:
            log.append("consumer_closed", i, consumer=i, reason=f"gone {i}", pending_acks=0)
    assert len(log._string_ids) < 4 * _FLUSH_EVENTS  # was n + the reasons: every text ever appended
    kept = list(log)
    assert all(e.uuid == f"uuid-{e.entry}" for e in kept if e.kind == "chunk_pinned")
    assert all(e.reason == f"gone {e.consumer}" for e in kept if e.kind == "consumer_closed")
    assert log.intern("sub-1") == subscription and log._strings[subscription] == "sub-1"
