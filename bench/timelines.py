"""Timeline files and forks: save, load and fork times and file sizes for one recorded scenario row.

Run: ``.venv/bin/python bench/timelines.py [--messages N ...] [--repeat R]``. Prints one JSON object per size.

Workload: a Key_Shared grid row (4 keys, 2 consumers, receiver queue 5, 200 msg/s, nack delay 100 ms, seed 3) of
N messages recorded with a frame per event (`pulsarlab.scenarios.fork.record_row`), saved
(`Recorder.save`), loaded (`pulsarlab.load_timeline`) and forked at a third of its frames with a broker.conf
change (`dispatcherMaxReadBatchSize` = 1: replay, restart, run on, compare every frame). Seconds are the best of
``--repeat`` wall-clock runs on this (shared, noisy) machine; bytes are exact. Every frame holds the whole
snapshot (its ledger entries included), so the save, load and compare times grow with frames × snapshot size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import pulsarlab as pl
from pulsarlab.scenarios.fork import Change, fork, record_row
from pulsarlab.scenarios.spec import ScenarioSpec


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def measure(messages: int, repeat: int, folder: Path) -> dict:
    spec = {
        "messages": messages,
        "keys": 4,
        "consumers": 2,
        "subscription_type": "Key_Shared",
        "seeds": 3,
        "publish_rate_per_s": 200,
        "receiver_queue_size": 5,
        "negative_ack_redelivery_delay_ms": 100,
    }
    row = next(ScenarioSpec.from_dict(spec).rows())
    record_s, (_result, rec) = best(lambda: record_row(row), repeat)
    path = folder / f"run-{messages}.plt.jsonl.gz"
    save_s, _ = best(lambda: rec.save(path), repeat)
    load_s, loaded = best(lambda: pl.load_timeline(path), repeat)
    with gzip.open(path, "rb") as f:
        json_bytes = sum(len(line) for line in f)
    change = Change("setting_changes", setting="dispatcherMaxReadBatchSize", value=1)
    fork_s, result = best(lambda: fork(loaded, len(loaded) // 3, change), repeat)
    return {
        "messages": messages,
        "frames": len(rec),
        "record_s": round(record_s, 3),
        "save_s": round(save_s, 3),
        "load_s": round(load_s, 3),
        "fork_s": round(fork_s, 3),
        "file_bytes": path.stat().st_size,
        "json_lines_bytes": json_bytes,
        "bytes_per_frame": round(path.stat().st_size / len(rec)),
        "first_divergence": result.first_divergence,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[30, 100])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for n in args.messages:
            print(json.dumps(measure(n, args.repeat, Path(d))), flush=True)


if __name__ == "__main__":
    main()
