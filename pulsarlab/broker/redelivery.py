"""The replay set of a multi-consumer dispatcher, the broker's redelivery counter and its redelivery rate.

Models `MessageRedeliveryController` (a sorted set of (ledger, entry) positions, plus, when ordering
matters, position -> sticky hash and hash -> reference count maps), `InMemoryRedeliveryTracker` /
`RedeliveryTrackerDisabled` (docs/guide/subscription-types.md#entries-per-turn,
docs/guide/key-shared-ordering.md#recently-joined-consumers, #out-of-order, docs/guide/redelivery.md#redelivery-count)
and the `Rate` behind a consumer's
``msgRateRedeliver`` (`TopicStatsImpl` / `PersistentTopicInternalStats`). Simplifies: positions are plain ``(ledger,
entry)`` tuples, the set is a
`SortedList` (Pulsar: `ConcurrentBitmapSortedLongPairSet`) with the same iteration order, and the counts are a
`SortedDict` so a mark-delete move drops the counts behind it without a scan.
"""

from __future__ import annotations

from typing import Callable, Iterable

from sortedcontainers import SortedDict, SortedList

Pos = tuple[int, int]


class MessageRedeliveryController:
    """``redeliveryMessages``: what a Shared / Key_Shared dispatcher must send again, in position order.

    ``allow_out_of_order_delivery=True`` keeps no hash maps, so the set never blocks a hash
    (docs/guide/key-shared-ordering.md#out-of-order).
    ``_hashes`` (position -> sticky hash) holds exactly the positions of ``_positions`` in both modes: it answers
    membership and size without a sorted-list call; the hash counts are kept only when hashes are tracked. A
    position added without a hash (`add_unhashed`, a due delayed message) maps to None and blocks no hash.
    """

    __slots__ = ("_positions", "_hashes", "_hash_counts", "_track_hashes")

    def __init__(self, allow_out_of_order_delivery: bool = True) -> None:
        self._positions: SortedList = SortedList()
        self._track_hashes = not allow_out_of_order_delivery
        self._hashes: dict[Pos, int] = {}
        self._hash_counts: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._hashes)

    def position_hashes(self) -> dict[Pos, int]:
        """The live position -> sticky hash map of the set (read-only for callers): its size and truth are the
        set's, for hot checks that cannot afford a method call."""
        return self._hashes

    def is_empty(self) -> bool:
        return not self._hashes

    def __contains__(self, pos: Pos) -> bool:
        return pos in self._hashes

    def add(self, ledger: int, entry: int, sticky_hash: int = 0) -> bool:
        """Add a position (with its sticky hash when hashes are tracked); False if it was already there (a
        position held without a hash takes this one)."""
        pos = (ledger, entry)
        hashes = self._hashes
        if pos in hashes:
            if hashes[pos] is None and self._track_hashes:
                hashes[pos] = sticky_hash
                self._hash_counts[sticky_hash] = self._hash_counts.get(sticky_hash, 0) + 1
            return False
        hashes[pos] = sticky_hash
        if self._track_hashes:
            self._hash_counts[sticky_hash] = self._hash_counts.get(sticky_hash, 0) + 1
        self._positions.add(pos)
        return True

    def add_unhashed(self, ledger: int, entry: int) -> bool:
        """``add(ledgerId, entryId)``: a position without a sticky hash (a due delayed message), which blocks no
        hash; False (and no change) if the position is already there."""
        pos = (ledger, entry)
        if pos in self._hashes:
            return False
        self._hashes[pos] = None  # type: ignore[assignment]
        self._positions.add(pos)
        return True

    def remove(self, ledger: int, entry: int) -> bool:
        pos = (ledger, entry)
        hashes = self._hashes
        if pos not in hashes:
            return False
        h = hashes.pop(pos)
        if self._track_hashes and h is not None:
            self._dec(h)
        self._positions.remove(pos)
        return True

    def _dec(self, h: int) -> None:
        n = self._hash_counts[h] - 1
        if n:
            self._hash_counts[h] = n
        else:
            del self._hash_counts[h]

    def remove_all_up_to(self, ledger: int, entry: int) -> None:
        """Drop every position at or before (ledger, entry) (``removeAllUpTo``)."""
        positions = self._positions
        while positions and positions[0] <= (ledger, entry):
            pos = positions.pop(0)
            h = self._hashes.pop(pos)
            if self._track_hashes and h is not None:
                self._dec(h)

    def contains_sticky_key_hash(self, sticky_hash: int) -> bool:
        """``containsStickyKeyHash``: False when hashes are not tracked (out-of-order delivery allowed)."""
        return sticky_hash in self._hash_counts

    def hash_of(self, ledger: int, entry: int) -> int | None:
        """The position's sticky hash; None when it has none (not tracked, or a due delayed message)."""
        return self._hashes.get((ledger, entry)) if self._track_hashes else None

    def first(self) -> Pos | None:
        return self._positions[0] if self._positions else None

    def messages_to_replay_now(self, max_messages: int, accept: Callable[[Pos], bool] | None = None) -> list[Pos]:
        """``getMessagesToReplayNow``: up to ``max_messages`` positions, oldest first, that ``accept`` lets through."""
        out: list[Pos] = []
        if max_messages <= 0 or not self._positions:
            return out
        for pos in self._positions:
            if accept is None or accept(pos):
                out.append(pos)
                if len(out) >= max_messages:
                    break
        return out

    def clear(self) -> None:
        self._positions.clear()
        self._hashes.clear()
        self._hash_counts.clear()

    def positions(self) -> list[Pos]:
        return list(self._positions)


class InMemoryRedeliveryTracker:
    """``InMemoryRedeliveryTracker``: how many times each position was explicitly redelivered
    (docs/guide/redelivery.md#redelivery-count).

    Counted only on a client's redeliver request (`increment_and_get`); a consumer leaving only registers its
    pending acks with count 0 (`add_if_absent`). An ack forgets the position; a mark-delete move forgets every
    position at or before it.
    """

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: SortedDict = SortedDict()

    def increment_and_get(self, ledger: int, entry: int) -> int:
        n: int = self._counts.get((ledger, entry), 0) + 1
        self._counts[(ledger, entry)] = n
        return n

    def add_if_absent(self, ledger: int, entry: int) -> None:
        self._counts.setdefault((ledger, entry), 0)

    def get(self, ledger: int, entry: int) -> int:
        counts = self._counts
        return counts.get((ledger, entry), 0) if counts else 0

    def remove(self, ledger: int, entry: int) -> None:
        self._counts.pop((ledger, entry), None)

    def remove_batch(self, positions: Iterable[Pos]) -> None:
        counts = self._counts
        if counts:
            for pos in positions:
                if pos in counts:
                    del counts[pos]

    def remove_up_to(self, ledger: int, entry: int) -> None:
        counts = self._counts
        if counts:
            cut = counts.bisect_right((ledger, entry))
            for _ in range(cut):
                counts.popitem(0)

    def clear(self) -> None:
        self._counts.clear()

    def items(self) -> list[tuple[Pos, int]]:
        """``[((ledger, entry), count), ...]`` in position order (for snapshots and tests)."""
        return list(self._counts.items())

    def __len__(self) -> int:
        return len(self._counts)


class RedeliveryTrackerDisabled:
    """``RedeliveryTrackerDisabled``: Exclusive and Failover never count redeliveries
    (docs/guide/redelivery.md#redelivery-count)."""

    __slots__ = ()

    def increment_and_get(self, ledger: int, entry: int) -> int:
        return 0

    def add_if_absent(self, ledger: int, entry: int) -> None:
        pass

    def get(self, ledger: int, entry: int) -> int:
        return 0

    def remove(self, ledger: int, entry: int) -> None:
        pass

    def remove_batch(self, positions: Iterable[Pos]) -> None:
        pass

    def remove_up_to(self, ledger: int, entry: int) -> None:
        pass

    def clear(self) -> None:
        pass

    def items(self) -> list[tuple[Pos, int]]:
        return []

    def __len__(self) -> int:
        return 0


RedeliveryTracker = InMemoryRedeliveryTracker | RedeliveryTrackerDisabled  # `RedeliveryTracker` of a dispatcher

STATS_UPDATE_FREQUENCY_MS = 60_000  # broker.conf statsUpdateFrequencyInSecs (60)


class MessageRate:
    """A broker `Rate` (``msgRedeliver``) as pulsar-admin shows it: messages per second over the last stats period.

    The broker's stats task runs every ``statsUpdateFrequencyInSecs`` from its start (here: lab time 0) and
    computes ``count / period`` for the period that just ended; `rate` is that figure at ``now`` (0.0 until the
    first period is over). ``total`` counts every recorded message (the model's extra, not a stats field).
    """

    __slots__ = ("period_ms", "total", "_counts")

    def __init__(self, period_ms: int = STATS_UPDATE_FREQUENCY_MS) -> None:
        if not isinstance(period_ms, int) or isinstance(period_ms, bool) or period_ms <= 0:
            raise ValueError(f"the stats period must be a positive int of ms, got {period_ms!r}")
        self.period_ms = period_ms
        self.total = 0
        self._counts: dict[int, int] = {}  # period index -> messages recorded in it

    def record(self, now: int, n: int) -> None:
        if n <= 0:
            return
        self.total += n
        k = now // self.period_ms
        counts = self._counts
        counts[k] = counts.get(k, 0) + n
        if len(counts) > 2:
            for old in [i for i in counts if i < k - 1]:
                del counts[old]

    def rate(self, now: int) -> float:
        """Messages per second of the last complete period before ``now``."""
        last = now // self.period_ms - 1
        if last < 0:
            return 0.0
        return self._counts.get(last, 0) / (self.period_ms / 1000)
