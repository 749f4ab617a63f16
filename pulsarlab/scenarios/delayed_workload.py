"""A delayed-delivery workload run on one tracker alone: its memory, what it stores, and its scheduling work.

Models no Pulsar class; it drives `InMemoryDelayedDeliveryTracker` or `BucketDelayedDeliveryTracker` as a Shared
dispatcher does (docs/guide/delayed-delivery.md#hold-back): the cursor reads ``messages`` delayed messages at t = 0,
``entries_per_ledger``
to a ledger, each due ``min_delay_ms`` + a seeded uniform draw in [0, ``spread_ms``); then the virtual clock runs
and every timer firing takes the due messages (``getScheduledMessages`` in batches of ``release_batch``) until
none is left. The result is deterministic for a seed, so the same row comes out of a Spark worker and a test.

* ``memory_bytes``: the tracker's in-memory structures when everything has been added (`delayed_memory`'s
  JVM pricing); ``index_size_bytes``: what stats print as ``delayedMessageIndexSizeInBytes``;
  ``stored_bytes``: the bucket snapshot ledgers then.
* Scheduling work: ``timer_fires`` (timer firings that read), ``segment_loads`` (bucket segments read back),
  ``snapshot_ops`` (snapshot storage calls), ``buckets`` (sealed buckets at the peak).

Simplifies: the dispatcher always has permits (everything due is taken at once); the bucket tracker is fed
through its vectorised ``add_messages`` (same results as one call per message).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np

from pulsarlab.broker.delayed.bucket.snapshot import InMemoryBucketSnapshotStorage
from pulsarlab.broker.delayed.factory import new_delayed_delivery_tracker
from pulsarlab.broker.delayed.tracker_names import BUCKET_TRACKER_FACTORY, IN_MEMORY_TRACKER_FACTORY
from pulsarlab.clock import Scheduler
from pulsarlab.events import EventLog
from pulsarlab.profiles import get_profile

TRACKERS = ("in-memory", "bucket")
FIRST_LEDGER = 3
_FACTORIES = {"in-memory": IN_MEMORY_TRACKER_FACTORY, "bucket": BUCKET_TRACKER_FACTORY}


@dataclass(frozen=True)
class WorkloadResult:
    """One tracker on one workload (see the module docstring for the fields)."""

    tracker: str
    messages: int
    spread_ms: int
    seed: int
    memory_bytes: int
    index_size_bytes: int
    stored_bytes: int
    buckets: int
    timer_fires: int
    segment_loads: int
    snapshot_ops: int
    released: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


RESULT_FIELDS = tuple(WorkloadResult.__dataclass_fields__)


def workload(
    messages: int, spread_ms: int, seed: int, min_delay_ms: int, entries_per_ledger: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ledger ids, entry ids, deliverAt times) of the messages, in the order the cursor reads them."""
    i = np.arange(messages, dtype=np.int64)
    rng = np.random.default_rng(seed)
    delays = min_delay_ms + (
        rng.integers(0, spread_ms, messages, dtype=np.int64) if spread_ms > 0 else np.zeros(messages, dtype=np.int64)
    )
    return FIRST_LEDGER + i // entries_per_ledger, i % entries_per_ledger, delays


def run_tracker_workload(
    tracker: str,
    messages: int,
    spread_ms: int,
    seed: int = 0,
    *,
    min_delay_ms: int = 60_000,
    entries_per_ledger: int = 50_000,
    release_batch: int = 100,
    version: str = "4.0",
    broker_config: Mapping[str, Any] | None = None,
) -> WorkloadResult:
    """Run the workload on ``tracker`` ("in-memory" or "bucket") with the profile's broker defaults, overridden
    by ``broker_config`` (broker.conf names)."""
    if tracker not in _FACTORIES:
        raise ValueError(f"tracker must be one of {TRACKERS}, got {tracker!r}")
    for name, value, low in (
        ("messages", messages, 1),
        ("spread_ms", spread_ms, 0),
        ("min_delay_ms", min_delay_ms, 0),
        ("entries_per_ledger", entries_per_ledger, 1),
        ("release_batch", release_batch, 1),
    ):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    profile = get_profile(version)
    conf = profile.broker_config(
        {**(broker_config or {}), "delayedDeliveryTrackerFactoryClassName": _FACTORIES[tracker]}
    )
    scheduler = Scheduler()
    storage = InMemoryBucketSnapshotStorage()
    events = EventLog()
    released = [0]
    box: list[Any] = []

    def read_more_entries() -> None:
        t = box[0]
        while t.has_message_available():
            got = t.get_scheduled_messages(release_batch)
            if not got:
                break
            released[0] += len(got)

    box.append(
        new_delayed_delivery_tracker(
            scheduler,
            read_more_entries,
            config=conf,
            profile=profile,
            snapshot_storage=storage,
            cursor_properties={},
            events=events,
        )
    )
    t = box[0]
    ledgers, entries, times = workload(
        int(messages), int(spread_ms), int(seed), int(min_delay_ms), int(entries_per_ledger)
    )
    if hasattr(t, "add_messages"):
        t.add_messages(ledgers, entries, times)
    else:
        add = t.add_message
        for ledger, entry, at in zip(ledgers.tolist(), entries.tolist(), times.tolist()):
            add(ledger, entry, at)
    memory = t.memory_bytes()
    index_size = t.buffer_memory_usage() if hasattr(t, "buffer_memory_usage") else memory
    stored = storage.total_length()
    buckets = len(t.buckets()) if hasattr(t, "buckets") and tracker == "bucket" else 0
    read_more_entries()
    scheduler.run_until_idle()
    if released[0] != messages or t.number_of_delayed_messages():
        raise RuntimeError(f"{tracker} tracker released {released[0]} of {messages} messages")
    ops = storage.operations
    return WorkloadResult(
        tracker=tracker,
        messages=int(messages),
        spread_ms=int(spread_ms),
        seed=int(seed),
        memory_bytes=int(memory),
        index_size_bytes=int(index_size),
        stored_bytes=int(stored),
        buckets=buckets,
        timer_fires=t.read_more_entries_calls,
        segment_loads=len(events.of_kind("segment_loaded")),
        snapshot_ops=ops.create + ops.get_metadata + ops.get_segment + ops.get_length + ops.delete,
        released=released[0],
    )


def sweep(
    messages: Any = (1_000, 5_000, 20_000),
    spreads_ms: Any = (3_600_000, 86_400_000),
    trackers: Any = TRACKERS,
    seeds: Any = (0,),
    **kwargs: Any,
) -> list[WorkloadResult]:
    """`run_tracker_workload` over the grid messages x spreads x trackers x seeds, in that order, locally."""
    return [
        run_tracker_workload(t, n, s, seed, **kwargs)
        for n in messages
        for s in spreads_ms
        for t in trackers
        for seed in seeds
    ]


__all__ = ["RESULT_FIELDS", "TRACKERS", "WorkloadResult", "run_tracker_workload", "sweep", "workload"]
