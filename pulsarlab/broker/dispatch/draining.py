"""PIP-379 draining hashes (4.x Key_Shared).

Models `DrainingHashesTracker` (with its per-consumer stats) of branch-4.0
(docs/guide/key-shared-ordering.md#draining-hashes); the per-consumer
pending acks it is fed from live in `pulsarlab.broker.dispatch.pending_acks`. Simplifies: no locks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Protocol, TypeVar

from pulsarlab.errors import IllegalArgumentException, IllegalStateException

STICKY_KEY_HASH_NOT_SET = 0


class DrainingConsumer(Protocol):
    """What the tracker reads of a consumer: its id (its stats are kept by id; errors print the consumer)."""

    @property
    def id(self) -> int: ...


DC = TypeVar("DC", bound=DrainingConsumer)  # the consumer type a tracker holds and hands back


@dataclass
class DrainingHashEntry(Generic[DC]):
    """One draining hash: the consumer that still holds unacked messages of it, and counters."""

    consumer: DC
    ref_count: int = 0
    blocked_count: int = 0


class _ConsumerDrainingStats:
    __slots__ = ("hashes", "cleared_total")

    def __init__(self) -> None:
        self.hashes: set[int] = set()
        self.cleared_total = 0


class DrainingHashesTracker(Generic[DC]):
    """``DrainingHashesTracker``: hashes that moved to another consumer while the old one still had them unacked.

    ``unblocking_handler(hash)`` is called when a hash that blocked someone is fully drained (``-1`` once at
    the end of a batch when that happened inside ``start_batch``/``end_batch``).
    """

    def __init__(
        self,
        dispatcher_name: str,
        unblocking_handler: Callable[[int], object],
        on_change: Callable[[DC, int, int, bool], object] | None = None,
    ) -> None:
        self.dispatcher_name = dispatcher_name
        self._handler = unblocking_handler
        self._on_change = on_change  # (consumer, hash, ref_count, added) for the event log
        self.draining_hashes: dict[int, DrainingHashEntry[DC]] = {}
        self.batch_level = 0
        self.unblocked_while_batching = False
        self._stats: dict[int, _ConsumerDrainingStats] = {}  # by consumer id

    def __len__(self) -> int:
        return len(self.draining_hashes)

    def get_entry(self, sticky_hash: int) -> DrainingHashEntry[DC] | None:
        return self.draining_hashes.get(sticky_hash)

    def _conflict(self, entry: DrainingHashEntry[DC], sticky_hash: int, consumer: DC) -> IllegalStateException:
        return IllegalStateException(
            f"Consumer {entry.consumer} is already draining hash {sticky_hash} in dispatcher "
            f"{self.dispatcher_name}. Same hash being used for consumer {consumer}."
        )

    def add_entry(self, consumer: DC, sticky_hash: int) -> None:
        if sticky_hash == 0:
            raise IllegalArgumentException("Sticky hash cannot be 0")
        entry = self.draining_hashes.get(sticky_hash)
        if entry is None:
            entry = self.draining_hashes[sticky_hash] = DrainingHashEntry(consumer)
            self._stats.setdefault(consumer.id, _ConsumerDrainingStats()).hashes.add(sticky_hash)
        elif entry.consumer is not consumer:
            raise self._conflict(entry, sticky_hash, consumer)
        entry.ref_count += 1
        if self._on_change is not None:
            self._on_change(consumer, sticky_hash, entry.ref_count, True)

    def pending_ack_removed(self, consumer: DC, ledger: int, entry: int, sticky_hash: int, closing: bool) -> None:
        """`PendingAcksMap` remove handler: `reduce_ref_count` of the hash (nothing to do while nothing drains)."""
        if self.draining_hashes:
            self.reduce_ref_count(consumer, sticky_hash, closing)

    def start_batch(self) -> None:
        self.batch_level += 1

    def end_batch(self) -> None:
        self.batch_level -= 1
        if self.batch_level == 0 and self.unblocked_while_batching:
            self.unblocked_while_batching = False
            self._handler(-1)

    def reduce_ref_count(self, consumer: DC, sticky_hash: int, closing: bool) -> None:
        if sticky_hash == 0:
            return
        entry = self.draining_hashes.get(sticky_hash)
        if entry is None:
            return
        if entry.consumer is not consumer:
            raise self._conflict(entry, sticky_hash, consumer)
        entry.ref_count -= 1
        if entry.ref_count:
            return
        del self.draining_hashes[sticky_hash]
        notify = False
        if not closing and entry.blocked_count > 0:
            if self.batch_level > 0:
                self.unblocked_while_batching = True
            else:
                notify = True
        stats = self._stats.get(consumer.id)
        if stats is not None:
            stats.hashes.discard(sticky_hash)
            stats.cleared_total += 1
        if self._on_change is not None:
            self._on_change(consumer, sticky_hash, 0, False)
        if notify:
            self._handler(sticky_hash)

    def blocking_entry(self, consumer: DC, sticky_hash: int) -> DrainingHashEntry[DC] | None:
        """The entry of a hash another consumer is still draining, which keeps it from ``consumer``; read-only."""
        entry = self.draining_hashes.get(sticky_hash)
        if entry is None or entry.consumer is consumer:
            return None
        return entry

    def should_block_sticky_key_hash(self, consumer: DC, sticky_hash: int) -> bool:
        """`shouldBlockStickyKeyHash`: `blocking_entry`, counting the blocked attempt; a hash that came back to
        the consumer draining it stops draining."""
        if sticky_hash == STICKY_KEY_HASH_NOT_SET:
            return False
        entry = self.blocking_entry(consumer, sticky_hash)
        if entry is not None:
            entry.blocked_count += 1
            return True
        own = self.draining_hashes.get(sticky_hash)
        if own is not None:  # the hash came back to its original consumer: stop draining it
            self._remove_entry(sticky_hash, own)
        return False

    def _remove_entry(self, sticky_hash: int, entry: DrainingHashEntry[DC]) -> None:
        del self.draining_hashes[sticky_hash]
        stats = self._stats.get(entry.consumer.id)
        if stats is not None:
            stats.hashes.discard(sticky_hash)
            stats.cleared_total += 1
        if self._on_change is not None:
            self._on_change(entry.consumer, sticky_hash, 0, False)

    def consumer_removed(self, consumer: DC) -> None:
        self._stats.pop(consumer.id, None)

    def clear(self) -> None:
        self.draining_hashes.clear()
        self._stats.clear()

    def consumer_stats(self, consumer: DC) -> dict[str, int | list[dict[str, int]]]:
        """``drainingHashesCount``, ``drainingHashesClearedTotal``, ``drainingHashesUnackedMessages``, ``drainingHashes``."""
        stats = self._stats.get(consumer.id)
        hashes: list[dict[str, int]] = []
        unacked = 0
        cleared = 0
        if stats is not None:
            cleared = stats.cleared_total
            for h in sorted(stats.hashes):
                entry = self.draining_hashes.get(h)
                if entry is None:
                    continue
                hashes.append({"hash": h, "unackMsgs": entry.ref_count, "blockedAttempts": entry.blocked_count})
                unacked += entry.ref_count
        return {
            "drainingHashesCount": len(hashes),
            "drainingHashesClearedTotal": cleared,
            "drainingHashesUnackedMessages": unacked,
            "drainingHashes": hashes,
        }
