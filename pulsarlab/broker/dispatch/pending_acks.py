"""A consumer's pending acks: the entries dispatched to it and not yet acknowledged.

Models `PendingAcksMap` of branch-4.0 (docs/guide/key-shared-ordering.md#draining-hashes), where 4.x Key_Shared
installs the handlers that feed
the `DrainingHashesTracker`. It is also the model's pending-acks store for Shared and 3.x Key_Shared consumers
(Pulsar: `ConcurrentLongLongPairHashMap`), where no handlers are installed. Simplifies: no locks; entries are
keyed by ``(ledger, entry)`` in insertion order (Pulsar sorts by ledger then entry; only iteration order
differs, and every user of it feeds a sorted set).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Container, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer


class PendingAcksMap:
    """A consumer's pending acks: ``(ledger, entry) -> (batch_size, sticky_hash)``.

    4.x Key_Shared installs ``add_handler(consumer, ledger, entry, hash) -> bool`` (may refuse: the entry then
    goes to replay) and ``remove_handler(consumer, ledger, entry, hash, closing)`` plus batch hooks. When
    ``add_handler_hashes`` is set, the add handler is asked only about hashes in it (it accepts every other one).
    """

    __slots__ = (
        "consumer",
        "_map",
        "add_handler",
        "add_handler_hashes",
        "remove_handler",
        "start_batch",
        "end_batch",
        "closed",
    )

    def __init__(self, consumer: "Consumer") -> None:
        self.consumer = consumer
        self._map: dict[tuple[int, int], tuple[int, int]] = {}
        self.add_handler: Callable[[Consumer, int, int, int], bool] | None = None
        self.add_handler_hashes: Container[int] | None = None
        self.remove_handler: Callable[[Consumer, int, int, int, bool], None] | None = None
        self.start_batch: Callable[[], None] | None = None
        self.end_batch: Callable[[], None] | None = None
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
        if (
            handler is not None
            and (self.add_handler_hashes is None or sticky_hash in self.add_handler_hashes)
            and not handler(self.consumer, ledger, entry, sticky_hash)
        ):
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
                removed = self.remove(*p)
                if removed is not None:  # always: ``doomed`` came from the map
                    total += removed[0]
        finally:
            if self.end_batch is not None:
                self.end_batch()
        return total

    def items(self) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
        return iter(list(self._map.items()))

    def for_each_and_close(self, processor: Callable[[int, int, int, int], object]) -> None:
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
