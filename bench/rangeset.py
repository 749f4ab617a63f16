"""Benchmark of the cursor's individual-ack set (`pulsarlab.managed_ledger.rangeset.OpenLongPairRangeSet`).

Prints single-entry acks per second for these workloads, random / naive, and ends with one JSON line:
* in-order: `add_open_closed(L, e-1, L, e)` for e = 0, 1, 2, ... (the cursor's ack of an in-order
  consumer), ledgers of 50,000 entries (managedLedgerMaxEntriesPerLedger);
* random: the same entries acked in a seeded random order (worst case for the number of ranges);
* cursor in-order: per ack what `ManagedCursorImpl.asyncDelete` asks of the set when the mark-delete
  position follows the acks (`add_open_closed`, `first_range`, `remove_at_most`);
* cursor random: per ack what `ManagedCursorImpl.asyncDelete` asks of the set when each call carries one
  ack (ack grouping off), in the random order: `contains`, `ack`, `first_range`, and `remove_at_most` when
  the mark-delete position moves (the worst case for the set's pending buffer: a read after every ack);
* cursor window: the same with the entries shuffled only within windows of 1,000 (the mark-delete
  position follows closely, as with a few consumers acking out of order);
* naive: the random order into a Python set of (ledger, entry), the baseline a dict-of-sets model
  would give, plus one final sort into ranges (what printing the set costs it).

Usage: python bench/rangeset.py [--entries N] [--repeat R]

Figures (``--entries 500000``, as ``bench/broker.py`` runs it; acks/s, best of 3; the 2-core machine shared
with other sessions, 1-minute load 3.9-4.9, no quiet window; before = main f64584a, after = branch rangeset2
1a6001c, this file as of 1a6001c for both, runs interleaved before/after/before/...):

==================  ============================================  ============================================
figure              before (runs 1-5)                             after (runs 1-5)
==================  ============================================  ============================================
random / naive      1.04  1.16  0.91  1.32  0.82                  1.95  2.04  1.77  1.87  1.82
random              641k  498k  377k  676k  512k                  1,169k  751k  1,166k  1,316k  1,383k
naive               619k  431k  412k  510k  628k                  599k  368k  657k  705k  760k
in-order            6.51M  4.31M  3.50M  6.74M  6.39M             6.61M  2.46M  6.59M  6.63M  6.67M
cursor in-order     1.15M  0.80M  1.07M  1.15M  1.11M             0.79M  0.71M  1.21M  1.20M  1.17M
cursor random       444k  292k  481k  457k  486k                  307k  507k  827k  884k  877k
cursor window       897k  606k  792k  909k  877k                  360k  799k  922k  932k  917k
==================  ============================================  ============================================

At that load wall-clock rates move by up to 2.5x from run to run (random and naive alternate, so their
ratio suffers less; runs 1-2 after were hit). CPU time (``time.process_time``, both modules in one
process, interleaved, best of 3-5) compares more steadily: random / naive 0.98-1.08 before, 1.77-2.07
after (4 runs each); after / before: random 1.78-1.90, cursor random 1.68, cursor window 1.03, cursor
in-order 1.03-1.06, in-order 1.02; with a read every 2, 3, 5, 10 or 100 acks in the windowed order
0.96-1.02. The ratio needs the 500,000 entries: with one ledger of 50,000 the naive set's sort is cheap
and random / naive is about 0.9 in CPU time (100,000: 1.2; 200,000: 1.9). Random single acks now go to a
per-ledger pending set (O(1)) merged into the runs by the next read that needs runs; when that merge goes
one by one (reads every few acks, as in the cursor figures) the next acks are set in place as before. In
the whole model (``bench/broker.py``'s Shared without batching, log on; ``valgrind --tool=callgrind`` over
10,000 messages after a 1,000-message warm-up) main runs 154,900 instructions per message, the branch
149,800 (-3.3%): there the acks reach the cursor in batches of up to 1,000 per `asyncDelete`.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet

ENTRIES_PER_LEDGER = 50_000
WINDOW = 1_000


def positions(n: int) -> list[tuple[int, int]]:
    return [(3 + i // ENTRIES_PER_LEDGER, i % ENTRIES_PER_LEDGER) for i in range(n)]


def best_rate(run, n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return n / best


def rangeset_run(pos: list[tuple[int, int]]):
    """`add_open_closed(L, e-1, L, e)` over ``pos`` in the given order."""

    def run():
        rs = OpenLongPairRangeSet()
        add = rs.add_open_closed
        for ledger, entry in pos:
            add(ledger, entry - 1, ledger, entry)
        assert rs.size() == len({p[0] for p in pos})  # every ledger ends as one range

    return run


def bench_rangeset(pos: list[tuple[int, int]], repeat: int) -> float:
    """Acks per second of `add_open_closed(L, e-1, L, e)` over ``pos`` in the given order."""
    return best_rate(rangeset_run(pos), len(pos), repeat)


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


def bench_cursor_random(pos: list[tuple[int, int]], repeat: int) -> float:
    """Acks per second of what `ManagedCursorImpl.asyncDelete` asks per ack, one ack per call, acks in the order of
    ``pos``: `contains`, `ack` (the cursor's single-entry add), `first_range`, and while the first range reaches the mark-delete
    position (the next ledger's entry 0 reaches a complete ledger's end) the position moves to its end,
    `remove_at_most` and `first_range` again."""
    last = max(pos)

    def run():
        rs = OpenLongPairRangeSet()
        contains, ack, first, remove = rs.contains, rs.ack, rs.first_range, rs.remove_at_most
        md_l, md_e = min(pos)[0], -1
        for ledger, entry in pos:
            if contains(ledger, entry):
                continue
            ack(ledger, entry)
            range_ = first()
            while range_ is not None:
                lk, lv, uk, uv = range_
                if (lk, lv) > (md_l, md_e) and (lv != -1 or lk != md_l + 1 or md_e != ENTRIES_PER_LEDGER - 1):
                    break
                md_l, md_e = uk, uv
                remove(md_l, md_e)
                range_ = first()
        assert rs.is_empty() and (md_l, md_e) == last

    return best_rate(run, len(pos), repeat)


def windowed(pos: list[tuple[int, int]], window: int) -> list[tuple[int, int]]:
    """``pos`` shuffled (seeded) within consecutive windows: acks out of order by at most ``window`` entries."""
    rng = random.Random(42)
    out: list[tuple[int, int]] = []
    for i in range(0, len(pos), window):
        chunk = pos[i : i + window]
        rng.shuffle(chunk)
        out += chunk
    return out


def naive_run(pos: list[tuple[int, int]]):
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

    return run


def bench_random_and_naive(pos: list[tuple[int, int]], repeat: int) -> tuple[float, float]:
    """Acks per second of the range set and of the naive set over ``pos``, best of ``repeat`` each, their runs
    alternated so that a change of load on a shared machine hits both alike."""
    runs = (rangeset_run(pos), naive_run(pos))
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, run in enumerate(runs):
            t0 = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - t0)
    return len(pos) / best[0], len(pos) / best[1]


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
    rnd, naive = bench_random_and_naive(shuffled, args.repeat)
    print(f"random acks:   {rnd:,.0f}/s")
    print(
        f"naive set:     {naive:,.0f}/s (random order, plus one final sort into ranges; runs alternated with the above)"
    )
    print(f"random / naive: {rnd / naive:.2f}")
    cursor = bench_cursor_inorder(pos, args.repeat)
    print(f"cursor in-order acks: {cursor:,.0f}/s (add, first_range, remove_at_most per ack)")
    cursor_random = bench_cursor_random(shuffled, args.repeat)
    print(f"cursor random acks: {cursor_random:,.0f}/s (contains, ack, first_range, remove_at_most per ack)")
    cursor_window = bench_cursor_random(windowed(pos, WINDOW), args.repeat)
    print(f"cursor window acks: {cursor_window:,.0f}/s (the same, random order within windows of {WINDOW:,})")
    print(
        json.dumps(
            {
                "rangeset_inorder_acks_per_s": round(inorder),
                "rangeset_random_acks_per_s": round(rnd),
                "naive_random_acks_per_s": round(naive),
                "rangeset_cursor_inorder_acks_per_s": round(cursor),
                "rangeset_cursor_random_acks_per_s": round(cursor_random),
                "rangeset_cursor_window_acks_per_s": round(cursor_window),
            }
        )
    )


if __name__ == "__main__":
    main()
