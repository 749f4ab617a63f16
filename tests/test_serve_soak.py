"""Soak: 100 producer/consumer pairs of real clients against ``pulsarlab serve`` for 2 minutes (bounded, loopback).

The server runs with Pulsar's defaults (50,000 entries per ledger; consumed ledgers trimmed; entries that every cursor
read leave the bounded entry cache for bookie storage on disk) and keeps a window of its event log, so its memory
stays flat: RSS at the end is within 1.3x of RSS after the first 30 s. Every message sent arrives once. Asserts the
memory ratio and the message accounting, never rates (`tests/soak_clients.py`; `bench/soak.py` runs it longer).
"""

from __future__ import annotations

import pytest
from soak_clients import soak

pytestmark = pytest.mark.serve

PAIRS = 100
SECONDS = 120
WARM_S = 30


def test_100_pairs_for_2_minutes_in_flat_memory_lose_nothing() -> None:
    result = soak(PAIRS, SECONDS)
    assert result["errors"] == []
    assert result["sent"] > 0
    assert (result["missing"], result["duplicates"], result["unexpected"]) == (0, 0, 0)
    assert result["received"] == result["sent"]
    samples = result["rss_kib"]
    warm = next(rss for t, rss in samples if t >= WARM_S)
    end = samples[-1][1]
    print(f"RSS after {WARM_S} s: {warm} KiB, at the end: {end} KiB; {result['sent']} messages")
    assert end <= 1.3 * warm, samples
