"""PIP-379 draining hashes (4.x Key_Shared) and the per-consumer pending-acks map.

Models `DrainingHashesTracker` (with its per-consumer stats) and `PendingAcksMap` of branch-4.0
(reference §3.2). `PendingAcksMap` is also the model's pending-acks store for Shared and 3.x Key_Shared
consumers (Pulsar: `ConcurrentLongLongPairHashMap`), where no handlers are installed. Simplifies: no locks;
entries are keyed by ``(ledger, entry)`` in insertion order (Pulsar sorts by ledger then entry; only
iteration order differs, and every user of it feeds a sorted set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from pulsarlab.errors import IllegalArgumentException, IllegalStateException

STICKY_KEY_HASH_NOT_SET = 0


@dataclass
class DrainingHashEntry:
    """One draining hash: the consumer that still holds unacked messages of it, and counters."""

    consumer: Any
    ref_count: int = 0
    blocked_count: int = 0


class _ConsumerDrainingStats:
    __slots__ = ("hashes", "cleared_total")

    def __init__(self) -> None:
        self.hashes: set[int] = set()
        self.cleared_total = 0


class DrainingHashesTracker:
    """``DrainingHashesTracker``: hashes that moved to another consumer while the old one still had them unacked.

    ``unblocking_handler(hash)`` is called when a hash that blocked someone is fully drained (``-1`` once at
    the end of a batch when that happened inside ``start_batch``/``end_batch``).
    """

    def __init__(self, dispatcher_name: str, unblocking_handler: Callable[[int], Any],
                 on_change: Callable[[Any, int, int, bool], Any] | None = None) -> None:
        self.dispatcher_name = dispatcher_name
        self._handler = unblocking_handler
        self._on_change = on_change  # (consumer, hash, ref_count, added) for the event log
        self.draining_hashes: dict[int, DrainingHashEntry] = {}
        self.batch_level = 0
        self.unblocked_while_batching = False
        self._stats: dict[int, _ConsumerDrainingStats] = {}  # by consumer id

    def __len__(self) -> int:
        return len(self.draining_hashes)

    def get_entry(self, sticky_hash: int) -> DrainingHashEntry | None:
        return self.draining_hashes.get(sticky_hash)

    def _conflict(self, entry: DrainingHashEntry, sticky_hash: int, consumer: Any) -> IllegalStateException:
        return IllegalStateException(
            f"Consumer {entry.consumer} is already draining hash {sticky_hash} in dispatcher "
            f"{self.dispatcher_name}. Same hash being used for consumer {consumer}."
        )

    def add_entry(self, consumer: Any, sticky_hash: int) -> None:
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

    def pending_ack_removed(self, consumer: Any, ledger: int, entry: int, sticky_hash: int, closing: bool) -> None:
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

    def reduce_ref_count(self, consumer: Any, sticky_hash: int, closing: bool) -> None:
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

    def should_block_sticky_key_hash(self, consumer: Any, sticky_hash: int) -> bool:
        if sticky_hash == STICKY_KEY_HASH_NOT_SET:
            return False
        entry = self.draining_hashes.get(sticky_hash)
        if entry is None:
            return False
        if entry.consumer is consumer:
            # the hash came back to its original consumer: stop draining it
            self._remove_entry(sticky_hash, entry)
            return False
        entry.blocked_count += 1
        return True

    def _remove_entry(self, sticky_hash: int, entry: DrainingHashEntry) -> None:
        del self.draining_hashes[sticky_hash]
        stats = self._stats.get(entry.consumer.id)
        if stats is not None:
            stats.hashes.discard(sticky_hash)
            stats.cleared_total += 1
        if self._on_change is not None:
            self._on_change(entry.consumer, sticky_hash, 0, False)

    def consumer_removed(self, consumer: Any) -> None:
        self._stats.pop(consumer.id, None)

    def clear(self) -> None:
        self.draining_hashes.clear()
        self._stats.clear()

    def consumer_stats(self, consumer: Any) -> dict[str, Any]:
        """``drainingHashesCount``, ``drainingHashesClearedTotal``, ``drainingHashesUnackedMessages``, ``drainingHashes``."""
        stats = self._stats.get(consumer.id)
        hashes = []
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


class PendingAcksMap:
    """A consumer's pending acks: ``(ledger, entry) -> (batch_size, sticky_hash)``.

    4.x Key_Shared installs ``add_handler(consumer, ledger, entry, hash) -> bool`` (may refuse: the entry then
    goes to replay) and ``remove_handler(consumer, ledger, entry, hash, closing)`` plus batch hooks. When
    ``add_handler_hashes`` is set, the add handler is asked only about hashes in it (it accepts every other one).
    """

    __slots__ = ("consumer", "_map", "add_handler", "add_handler_hashes", "remove_handler", "start_batch",
                 "end_batch", "closed")

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self._map: dict[tuple[int, int], tuple[int, int]] = {}
        self.add_handler: Callable[..., bool] | None = None
        self.add_handler_hashes: Any = None
        self.remove_handler: Callable[..., Any] | None = None
        self.start_batch: Callable[[], Any] | None = None
        self.end_batch: Callable[[], Any] | None = None
        self.closed = False

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, pos: tuple[int, int]) -> bool:
        return pos in self._map

    def get(self, ledger: int, entry: int) -> tuple[int, int] | None:
        return self._map.get((ledger, entry))

    def add_pending_ack_if_allowed(self, ledger: int, entry: int, batch_size: int, sticky_hash: int) -> bool:
        if self.closed:
            return False
        handler = self.add_handler
        if handler is not None and (self.add_handler_hashes is None or sticky_hash in self.add_handler_hashes) \
                and not handler(self.consumer, ledger, entry, sticky_hash):
            return False
        self._map[(ledger, entry)] = (batch_size, sticky_hash)
        return True

    def remove(self, ledger: int, entry: int) -> tuple[int, int] | None:
        value = self._map.pop((ledger, entry), None)
        if value is not None and self.remove_handler is not None:
            self.remove_handler(self.consumer, ledger, entry, value[1], False)
        return value

    def remove_all_up_to(self, ledger: int, entry: int) -> int:
        """Drop every pending ack at or before (ledger, entry); returns how many messages they held."""
        doomed = [p for p in self._map if p <= (ledger, entry)]
        if not doomed:
            return 0
        total = 0
        if self.start_batch is not None:
            self.start_batch()
        try:
            for p in doomed:
                total += self.remove(*p)[0]
        finally:
            if self.end_batch is not None:
                self.end_batch()
        return total

    def items(self) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
        return iter(list(self._map.items()))

    def for_each_and_close(self, processor: Callable[[int, int, int, int], Any]) -> None:
        """``forEachAndClose``: hand every pending ack to ``processor`` and empty the map (consumer closing)."""
        self.closed = True
        items = sorted(self._map.items())
        self._map.clear()
        if self.start_batch is not None:
            self.start_batch()
        try:
            for (ledger, entry), (batch_size, sticky_hash) in items:
                processor(ledger, entry, batch_size, sticky_hash)
                if self.remove_handler is not None:
                    self.remove_handler(self.consumer, ledger, entry, sticky_hash, True)
        finally:
            if self.end_batch is not None:
                self.end_batch()
