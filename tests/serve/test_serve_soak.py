"""Soak: 100 producer/consumer pairs of real clients against ``pulsarlab serve`` for 2 minutes (bounded, loopback).

The server runs with Pulsar's defaults (50,000 entries per ledger; consumed ledgers trimmed; entries that every cursor
read leave the bounded entry cache for bookie storage on disk) and keeps a window of its event log, so its memory
stays flat: RSS at the end is within 1.3x of RSS after the first 30 s. Every message sent arrives, and one that
arrives again is at-least-once delivery after a reconnect the clients logged, never a fault (`DuplicateCause`).
Asserts the memory ratio and the message accounting, never rates (`tests/soak_clients.py`; `bench/soak.py` runs it
longer). How the harness tells the causes apart is checked on deliveries and client log lines made up here.
"""

from __future__ import annotations

import logging

import pytest
from soak_clients import ClientLog, DuplicateCause, PairRecord, duplicate_report, soak

pytestmark = pytest.mark.serve

PAIRS = 100
SECONDS = 120
WARM_S = 30


def test_100_pairs_for_2_minutes_in_flat_memory_lose_nothing() -> None:
    result = soak(PAIRS, SECONDS)
    assert result["errors"] == []
    assert result["sent"] > 0
    assert (result["missing"], result["duplicate_faults"], result["unexpected"]) == (0, 0, 0), result
    print(f"duplicates by cause: {result['duplicates_by_cause']}")
    assert result["received"] == result["sent"]
    samples = result["rss_kib"]
    warm = next(rss for t, rss in samples if t >= WARM_S)
    end = samples[-1][1]
    print(f"RSS after {WARM_S} s: {warm} KiB, at the end: {end} KiB; {result['sent']} messages")
    assert end <= 1.3 * warm, samples


def _log(log: ClientLog, text: str, level: int = logging.INFO) -> None:
    log.emit(logging.LogRecord("pulsar", level, __file__, 0, text, None, None))


def _created(kind: str, pair: int) -> str:
    """The C++ client's line for a consumer or producer created on the broker (pulsar-client 3.13)."""
    who = "s, 0" if kind == "consumer" else "standalone-0-3"
    return f"[persistent://public/default/soak-{pair}, {who}] Created {kind} on broker [127.0.0.1:50290 -> 127.0.0.1:6650] "


def _pos(ledger: int, entry: int) -> int:
    return (ledger << 32) | entry


def test_a_duplicate_is_counted_by_its_cause():
    records = [PairRecord(), PairRecord()]
    sent = [0, 0]
    log = ClientLog(records, sent)
    _log(log, _created("consumer", 0))  # the first subscription and producer mark nothing
    _log(log, _created("producer", 0))
    rec = records[0]
    rec.delivered(0, _pos(5, 0))
    rec.delivered(1, _pos(5, 1))
    _log(
        log, "[127.0.0.1:50290 -> 127.0.0.1:6650] Forcing connection to close after keep-alive timeout", logging.WARNING
    )
    _log(log, _created("consumer", 0))  # re-subscribed: what it had and the broker had not seen acked comes again
    rec.delivered(1, _pos(5, 1))
    rec.delivered(2, _pos(5, 2))
    rec.delivered(2, _pos(5, 2))  # the same entry again with no re-subscription between
    sent[0] = 3  # 3 sends returned; the fourth (n = 3) is in flight when the producer reconnects
    _log(log, _created("producer", 0))
    rec.delivered(3, _pos(5, 3))
    rec.delivered(3, _pos(5, 4))  # stored again: re-sent
    rec.delivered(4, _pos(5, 5))
    rec.delivered(4, _pos(5, 6))  # stored again though n = 4 was not in flight at a reconnect
    records[1].delivered(0, _pos(6, 0))

    report = duplicate_report(records)

    assert report["duplicates_by_cause"] == {
        DuplicateCause.REDELIVERED.value: 1,
        DuplicateCause.DISPATCHED_TWICE.value: 1,
        DuplicateCause.RESENT.value: 1,
        DuplicateCause.STORED_TWICE.value: 1,
    }
    assert report["duplicates"] == 4 and report["duplicate_faults"] == 2
    assert report["duplicate_examples"]["REDELIVERED"] == ["soak-0 #1: 5:1 then 5:1"]
    assert report["duplicate_examples"]["RESENT"] == ["soak-0 #3: 5:3 then 5:4"]
    assert (rec.distinct, rec.deliveries, records[1].distinct) == (5, 9, 1)
    assert log.warnings == {"Forcing connection to close after keep-alive timeout": 1}


def test_a_redelivery_needs_a_re_subscription_after_the_first_delivery():
    rec = PairRecord()
    log = ClientLog([rec], [0])
    _log(log, _created("consumer", 0))
    _log(log, _created("consumer", 0))  # re-subscribed before message 0 ever arrived
    rec.delivered(0, _pos(1, 0))
    rec.delivered(0, _pos(1, 0))
    assert duplicate_report([rec])["duplicates_by_cause"] == {DuplicateCause.DISPATCHED_TWICE.value: 1}
