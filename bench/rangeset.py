"""Benchmark of the cursor's individual-ack set (`pulsarlab.managed_ledger.rangeset.OpenLongPairRangeSet`).

Prints single-entry acks per second for three workloads and ends with one JSON line:
* in-order: `add_open_closed(L, e-1, L, e)` for e = 0, 1, 2, ... (the cursor's ack of an in-order
  consumer), ledgers of 50,000 entries (managedLedgerMaxEntriesPerLedger);
* random: the same entries acked in a seeded random order (worst case for the number of ranges);
* cursor in-order: per ack what `ManagedCursorImpl.asyncDelete` asks of the set when the mark-delete
  position follows the acks (`add_open_closed`, `first_range`, `remove_at_most`);
* naive: the random order into a Python set of (ledger, entry), the baseline a dict-of-sets model
  would give, plus one final sort into ranges (what printing the set costs it).

Usage: python bench/rangeset.py [--entries N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet

ENTRIES_PER_LEDGER = 50_000


def positions(n: int) -> list[tuple[int, int]]:
    return [(3 + i // ENTRIES_PER_LEDGER, i % ENTRIES_PER_LEDGER) for i in range(n)]


def best_rate(run, n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return n / best


def bench_rangeset(pos: list[tuple[int, int]], repeat: int) -> float:
    """Acks per second of `add_open_closed(L, e-1, L, e)` over ``pos`` in the given order."""

    def run():
        rs = OpenLongPairRangeSet()
        add = rs.add_open_closed
        for ledger, entry in pos:
            add(ledger, entry - 1, ledger, entry)
        assert rs.size() == len({p[0] for p in pos})  # every ledger ends as one range

    return best_rate(run, len(pos), repeat)


def bench_cursor_inorder(pos: list[tuple[int, int]], repeat: int) -> float:
    """Acks per second of add + first_range + remove_at_most (the set stays empty between acks)."""

    def run():
        rs = OpenLongPairRangeSet()
        add, first, remove = rs.add_open_closed, rs.first_range, rs.remove_at_most
        for ledger, entry in pos:
            add(ledger, entry - 1, ledger, entry)
            first()
            remove(ledger, entry)
        assert rs.is_empty()

    return best_rate(run, len(pos), repeat)


def bench_naive(pos: list[tuple[int, int]], repeat: int) -> float:
    def run():
        acked: set[tuple[int, int]] = set()
        add = acked.add
        for p in pos:
            add(p)
        ranges = 0
        prev = None
        for p in sorted(acked):
            if prev is None or p[0] != prev[0] or p[1] != prev[1] + 1:
                ranges += 1
            prev = p
        assert ranges == len({p[0] for p in pos})

    return best_rate(run, len(pos), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pos = positions(args.entries)
    shuffled = pos[:]
    random.Random(42).shuffle(shuffled)
    inorder = bench_rangeset(pos, args.repeat)
    print(f"in-order acks: {inorder:,.0f}/s ({args.entries:,} entries)")
    rnd = bench_rangeset(shuffled, args.repeat)
    print(f"random acks:   {rnd:,.0f}/s")
    cursor = bench_cursor_inorder(pos, args.repeat)
    print(f"cursor in-order acks: {cursor:,.0f}/s (add, first_range, remove_at_most per ack)")
    naive = bench_naive(shuffled, args.repeat)
    print(f"naive set:     {naive:,.0f}/s (random order, plus one final sort into ranges)")
    print(
        json.dumps(
            {
                "rangeset_inorder_acks_per_s": round(inorder),
                "rangeset_random_acks_per_s": round(rnd),
                "naive_random_acks_per_s": round(naive),
                "rangeset_cursor_inorder_acks_per_s": round(cursor),
            }
        )
    )


if __name__ == "__main__":
    main()
