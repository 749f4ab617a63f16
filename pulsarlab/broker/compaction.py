"""Topic compaction: the latest message per key up to a horizon, read by ``read_compacted`` consumers.

Models `TwoPhaseCompactor` and `CompactedTopicImpl` (reference: Pulsar's topic compaction):

* Phase one walks the topic up to its last entry (the compaction horizon) and keeps, per key, the id of the
  latest message; a message with an empty payload (or a null value) removes its key. Phase two keeps the
  messages still latest for their key: a whole entry, or a batch with only those messages (Pulsar re-batches
  and marks the others ``compacted_out``; the lab keeps the batch and delivers it with an ack set of the kept
  indexes, which the client honours the same way). Messages without a key are dropped unless
  ``topicCompactionRetainNullKey``; a batch the lab cannot read (compressed or encrypted) is kept whole, as
  Pulsar keeps a batch it fails to decode.
* A consumer that reads compacted (Exclusive or Failover only) and whose read position is at or before the
  horizon reads the compacted entries from there on (its cursor then moves past the last one read), then the
  topic after the horizon as usual.

The compacted ledger keeps its own copies of the kept entries (Pulsar writes them to a ledger of their own), so
compacted reads still work after the topic trimmed the ledgers they came from. The compactor's durable
``__compaction`` cursor is modelled as a hold on the managed ledger at the horizon (`ManagedLedger.hold`): like any
durable cursor it keeps the entries after the horizon from being trimmed until the next compaction reads them.

Simplifies: compaction runs at once when asked (``pulsar-admin topics compact`` and its status, which is
``SUCCESS`` as soon as it returns); the ``__compaction`` cursor does not show in the topic's stats.
"""

from __future__ import annotations

import enum
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pulsarlab.managed_ledger.position import Position

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.topic import PersistentTopic
    from pulsarlab.messages import EntryData


COMPACTION_SUBSCRIPTION = "__compaction"  # the compactor's durable cursor (`Compactor.COMPACTION_SUBSCRIPTION`)


class CompactionStatus(enum.Enum):
    """`LongRunningProcessStatus.Status`."""

    NOT_RUN = "NOT_RUN"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"


@dataclass(frozen=True)
class CompactedTopic:
    """The result of one compaction: the horizon and the kept entries in order, each with the batch indexes
    kept (an ack-set mask, bit set = delivered) or None for the whole entry."""

    horizon: Position
    positions: tuple[Position, ...]
    masks: tuple[int | None, ...]
    removed: int  # messages left out (stats' lastCompactionRemovedEventCount)
    # the compacted ledger's copies of the kept entries, by position
    entries: dict[Position, "EntryData"] = field(default_factory=dict, compare=False, repr=False)

    def entry(self, position: Position) -> "EntryData":
        """The compacted ledger's copy of the kept entry at ``position``."""
        return self.entries[position]

    def read(self, read_position: Position, max_entries: int) -> tuple[list[tuple[Position, int | None]], Position]:
        """The kept entries at or after ``read_position`` (up to ``max_entries``) and where the cursor reads
        next: after the last one returned, or after the horizon when none is left."""
        i = bisect_left(self.positions, read_position)
        chosen = list(zip(self.positions[i : i + max_entries], self.masks[i : i + max_entries]))
        if not chosen:
            return [], self.horizon.next()
        return chosen, chosen[-1][0].next()


def _messages(entry: "EntryData") -> list[tuple[str | None, bool]] | None:
    """``(key, deletes)`` per message of an entry, or None for a batch the lab cannot read."""
    meta = entry.metadata
    if meta.num_messages_in_batch is None:
        size = len(entry.payloads[0])
        if not getattr(entry, "plain", True) and meta.uncompressed_size:
            size = meta.uncompressed_size
        return [(meta.partition_key, size == 0)]
    try:
        rows = entry.rows
    except Exception:  # NotSplittable: compressed or encrypted
        return None
    # a row: (payload_size, properties, partition_key, b64, ordering_key, event_time, sequence_id, null_value)
    return [(row[2], row[0] == 0 or bool(row[7])) for row in rows if row is not None]  # a batch: every row set


def compact(topic: "PersistentTopic", retain_null_key: bool = False) -> CompactedTopic:
    """Compact ``topic`` up to its last entry (`TwoPhaseCompactor.compact`). Like the compactor's reader, which reads
    the compacted view, it reads the previous compaction's kept messages, then the topic after that horizon (the
    entries before it may have been trimmed); ``removed`` counts the messages this round leaves out."""
    ml = topic.ledger
    horizon = ml.last_confirmed_entry
    # (position, its messages' (key, deletes) or None when unreadable, the mask of messages present or None: all)
    scanned: list[tuple[Position, list[tuple[str | None, bool]] | None, int | None]] = []
    sources: dict[Position, EntryData] = {}
    previous = topic.compacted
    after = Position(-1, -1)
    if previous is not None:
        after = previous.horizon
        for pos, mask in zip(previous.positions, previous.masks):
            sources[pos] = entry = previous.entry(pos)
            scanned.append((pos, _messages(entry), mask))
    for info in list(ml.ledgers):
        for e, entry in enumerate(ml.entries_of(info.ledger_id)):
            pos = Position(info.ledger_id, e)
            if pos > horizon:
                break
            if pos > after:
                sources[pos] = entry
                scanned.append((pos, _messages(entry), None))
    latest: dict[str, tuple[Position, int]] = {}
    for pos, msgs, present in scanned:
        for i, (key, deletes) in enumerate(msgs or ()):
            if key is None or (present is not None and not present >> i & 1):
                continue
            if deletes:
                latest.pop(key, None)
            else:
                latest[key] = (pos, i)
    kept = set(latest.values())
    positions: list[Position] = []
    masks: list[int | None] = []
    removed = 0
    for pos, msgs, present in scanned:
        if msgs is None:
            positions.append(pos)
            masks.append(None)
            continue
        mask = 0
        for i, (key, _) in enumerate(msgs):
            if present is not None and not present >> i & 1:
                continue
            if (key is None and retain_null_key) or (pos, i) in kept:
                mask |= 1 << i
            else:
                removed += 1
        if mask:
            positions.append(pos)
            masks.append(None if mask == (1 << len(msgs)) - 1 else mask)
    return CompactedTopic(horizon, tuple(positions), tuple(masks), removed, {pos: sources[pos] for pos in positions})


def combine_masks(a: int | None, b: int | None) -> int | None:
    """Two ack-set masks (bit set = deliver) over one batch: the indexes both deliver."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def compaction_stats(result: CompactedTopic | None, succeeded_at: int) -> dict[str, Any]:
    """The ``compaction`` block of topic stats (`CompactionRecord`)."""
    return {
        "lastCompactionRemovedEventCount": 0 if result is None else result.removed,
        "lastCompactionSucceedTimestamp": succeeded_at,
        "lastCompactionFailedTimestamp": 0,
        "lastCompactionDurationTimeInMills": 0,
    }


__all__ = [
    "COMPACTION_SUBSCRIPTION",
    "CompactedTopic",
    "CompactionStatus",
    "combine_masks",
    "compact",
    "compaction_stats",
]
