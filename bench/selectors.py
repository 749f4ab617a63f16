"""Selector throughput: keys/s for hash+select (per key and bulk) beside raw mmh3, and the Spark pipeline.

Run: ``.venv/bin/python bench/selectors.py [--keys N] [--spark-keys N]`` (``--spark-keys 0`` skips Spark).
Every figure is keys per second, best of ``--repeat`` runs, measured in this one run (the machine may be
shared and noisy: compare figures from the same run only). Each Spark master runs in a fresh
subprocess (its own JVM); only the job is timed, after a warm-up job; local[1] and local[2] take turns
for ``--spark-rounds`` rounds and the best of each is reported. Each round also times the same per-key
work in 2 plain processes vs 1, without Spark: the speed-up this machine allows at that moment. Prints
the goals and whether they were met, never asserts, and ends with one JSON line.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file's name shadows the standard library's `selectors` (which subprocess imports): run it with
# bench/ off sys.path and the project root on it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import mmh3  # noqa: E402

from pulsarlab.scenarios.distribution import (  # noqa: E402
    DistributionAccumulator,
    build_plan,
    build_selector,
    sequential_keys,
)

KINDS = ("auto_split", "consistent_hashing", "sticky")
VERSION = "4.0"
CONSUMERS = 8
SCALAR_MAX_KEYS = 200_000  # the per-key path is ~20x slower; a sample is enough for a rate
BULK_GOAL = 0.5  # bulk hash+select >= 50% of raw mmh3 speed
SPARK_GOAL = 1.7  # local[2] >= 1.7x local[1]


def best_rate(n: int, run: Callable[[], object], repeat: int) -> float:
    """Keys per second of the fastest of ``repeat`` runs over ``n`` keys."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return n / best


def bench_selectors(n_keys: int, repeat: int) -> dict:
    keys = sequential_keys(0, n_keys)
    sample = keys[: min(n_keys, SCALAR_MAX_KEYS)]
    raw = best_rate(n_keys, lambda: [mmh3.hash(k, 0, signed=False) for k in keys], repeat)
    print(f"raw mmh3 list comprehension          {raw:>14,.0f} keys/s  ({n_keys:,} keys)")
    per_selector = {}
    for kind in KINDS:
        selector = build_selector(kind, CONSUMERS, VERSION)
        bulk = best_rate(n_keys, lambda: selector.select_keys_bulk(keys), repeat)
        scalar = best_rate(len(sample), lambda: [selector.select_key(k) for k in sample], repeat)
        per_selector[kind] = {"bulk_keys_per_s": bulk, "scalar_keys_per_s": scalar, "bulk_vs_raw": bulk / raw}
        print(
            f"{kind:<19} bulk select_keys_bulk {bulk:>14,.0f} keys/s  ({bulk / raw:.0%} of raw)"
            f"   scalar select_key {scalar:>12,.0f} keys/s  ({len(sample):,} keys)"
        )
    return {"raw": raw, "selectors": per_selector}


def spark_child(master: str, n_keys: int, repeat: int) -> None:
    """In a fresh process: one session on ``master``, a warm-up job, then the timed jobs; prints JSON."""
    from pulsarlab.spark import get_session, key_distribution

    t0 = time.perf_counter()
    spark = get_session(f"bench-{master}", master=master)
    startup = time.perf_counter() - t0
    try:
        key_distribution(spark, n_keys=min(n_keys, 200_000))  # warm-up: Python workers, JIT, imports
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            result = key_distribution(spark, n_keys=n_keys)
            times.append(time.perf_counter() - start)
        assert (result.total_keys == n_keys).all()
        print(
            json.dumps(
                {
                    "master": master,
                    "keys": n_keys,
                    "seconds": min(times),
                    "all_seconds": times,
                    "keys_per_s": n_keys / min(times),
                    "session_start_s": startup,
                    "parallelism": spark.sparkContext.defaultParallelism,
                    "load": os.getloadavg()[0],
                }
            )
        )
    finally:
        spark.stop()


def run_spark_child(master: str, n_keys: int, repeat: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--spark-child", master] + ["--spark-keys", str(n_keys), "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"Spark benchmark on {master} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def pipeline_work(key_range: tuple[int, int]) -> int:
    """One Spark task's work on its keys (generate, hash, count the 9 default configs), without Spark."""
    accumulator = DistributionAccumulator(build_plan(k, n, VERSION) for k in KINDS for n in (2, 4, 8))
    lo, hi = key_range
    for start in range(lo, hi, 1 << 18):
        accumulator.add_keys(sequential_keys(start, min(start + (1 << 18), hi)))
    return accumulator.counts()[0].total_keys


def bench_ceiling(n_keys: int) -> dict:
    """The machine's own limit: the pipeline's per-key work in 2 plain processes vs 1 (no Spark)."""
    seconds = {}
    for procs in (1, 2):
        with multiprocessing.get_context("fork").Pool(procs) as pool:
            pool.map(pipeline_work, [(0, 1000)] * procs)  # warm-up
            parts = [(i * n_keys // procs, (i + 1) * n_keys // procs) for i in range(procs)]
            start = time.perf_counter()
            pool.map(pipeline_work, parts)
            seconds[procs] = time.perf_counter() - start
    return {"one_process_s": seconds[1], "two_processes_s": seconds[2], "speedup": seconds[1] / seconds[2]}


def bench_spark(n_keys: int, repeat: int, rounds: int) -> dict:
    """Sessions on local[1] and local[2] taking turns (``rounds`` each, so load changes hit both), each
    round followed by the no-Spark ceiling."""
    runs: dict[str, list[dict]] = {"local[1]": [], "local[2]": []}
    ceilings = []
    for round_no in range(1, rounds + 1):
        for master, results in runs.items():
            figures = run_spark_child(master, n_keys, repeat)
            results.append(figures)
            jobs = ", ".join(f"{s:.2f}" for s in figures["all_seconds"])
            print(
                f"Spark key_distribution on {master:<9}{figures['keys_per_s']:>14,.0f} keys/s  "
                f"(round {round_no}: {n_keys:,} keys x 3 selectors x 3 consumer counts, "
                f"{figures['parallelism']} core(s); jobs {jobs} s; "
                f"session start {figures['session_start_s']:.1f} s; load {figures['load']:.1f})"
            )
        ceiling = bench_ceiling(n_keys)
        ceilings.append(ceiling)
        print(
            f"  ceiling without Spark, round {round_no}: same work in 1 process "
            f"{ceiling['one_process_s']:.2f} s,"
            f" in 2 processes {ceiling['two_processes_s']:.2f} s -> {ceiling['speedup']:.2f}x"
            f" (load {os.getloadavg()[0]:.1f})"
        )
    out = {
        master: max(results, key=lambda f: f["keys_per_s"]) | {"rounds": results} for master, results in runs.items()
    }
    out["ceiling_rounds"] = ceilings
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000, help="keys for the selector figures")
    parser.add_argument("--spark-keys", type=int, default=10_000_000, help="keys for Spark (0 skips Spark)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is reported")
    parser.add_argument("--spark-rounds", type=int, default=2, help="sessions per master, taking turns")
    parser.add_argument("--spark-child", metavar="MASTER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.keys < 1 or args.spark_keys < 0 or args.repeat < 1 or args.spark_rounds < 1:
        parser.error("--keys, --repeat and --spark-rounds must be at least 1, --spark-keys at least 0")
    if args.spark_child:
        spark_child(args.spark_child, args.spark_keys, args.repeat)
        return

    print(f"cores: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"Hash + select, profile {VERSION}, {CONSUMERS} consumers, keys 'key-<i>':")
    figures = bench_selectors(args.keys, args.repeat)
    raw = figures["raw"]
    bulk = min(s["bulk_keys_per_s"] for s in figures["selectors"].values())
    scalar = min(s["scalar_keys_per_s"] for s in figures["selectors"].values())

    spark = bench_spark(args.spark_keys, args.repeat, args.spark_rounds) if args.spark_keys else {}
    local1 = spark.get("local[1]", {}).get("keys_per_s")
    local2 = spark.get("local[2]", {}).get("keys_per_s")
    ceiling = max((c["speedup"] for c in spark.get("ceiling_rounds", [])), default=None)

    print("Goals (figures from this run only):")
    print(
        f"  bulk hash+select >= {BULK_GOAL:.0%} of raw mmh3 (slowest selector): {bulk / raw:.0%} -> "
        f"{'met' if bulk >= BULK_GOAL * raw else 'NOT met'}"
    )
    if local1 and local2:
        print(
            f"  Spark local[2] >= {SPARK_GOAL}x local[1] at {args.spark_keys:,} keys: "
            f"{local2 / local1:.2f}x -> "
            f"{'met' if local2 >= SPARK_GOAL * local1 else 'NOT met'}"
            f"  (this machine's best 2-process vs 1-process ceiling in the same run: {ceiling:.2f}x)"
        )
    else:
        print("  Spark speed-up: not measured (--spark-keys 0)")
    print(
        json.dumps(
            {
                "bulk_keys_per_s": bulk,
                "scalar_keys_per_s": scalar,
                "raw_mmh3_keys_per_s": raw,
                "spark_local1_keys_per_s": local1,
                "spark_local2_keys_per_s": local2,
                "spark_speedup": local2 / local1 if local1 and local2 else None,
                "ceiling_speedup_2proc": ceiling,
                "keys": args.keys,
                "spark_keys": args.spark_keys,
                "selectors": figures["selectors"],
                "spark": spark,
            }
        )
    )


if __name__ == "__main__":
    main()
