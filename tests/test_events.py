"""The event log: typed fields, explanations, determinism, export and size."""

from __future__ import annotations

import pytest

from pulsarlab.events import EventLog, event_type

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
