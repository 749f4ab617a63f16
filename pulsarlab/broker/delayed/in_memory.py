"""The broker's default delayed-delivery tracker: holds delayed positions until due, then wakes the dispatcher.

Models `org.apache.pulsar.broker.delayed.InMemoryDelayedDeliveryTracker` with its base
`AbstractDelayedDeliveryTracker` (docs/guide/delayed-delivery.md#hold-back, #in-memory-tracker; golden README §7), in
the profile's
``delayed_tracker`` form:

* PRIORITY_QUEUE (3.x, 4.0): a heap of (deliverAt, ledger, entry), popped in that order.
* TIME_BITMAP (4.1): deliverAt trimmed down to 2^floor(log2(tick)) ms (fixed at construction) ->
  ledger -> entry set; ledgers within a bucket are visited in fastutil `Long2ObjectOpenHashMap` order,
  which decides a partial take.

The timer follows the recorded 4.1 `updateTimer`: keep it if the next delivery time is its target,
else cancel, and arm ``max(next - now, lastTickRun + tick - now)`` only when ``next - now > 0``; a
firing records ``lastTickRun`` and calls ``read_more_entries`` (``dispatcher.readMoreEntriesAsync``).
Simplifies: one timer rule for both forms (releases before #25996 also arm when the next time is
exactly now, and keep a stale target after a due-now call); no dispatcher lock, no memory accounting.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from sortedcontainers import SortedDict, SortedSet

from pulsarlab.broker.delayed import jvm_memory as delayed_memory
from pulsarlab.broker.delayed.long_hash_map import LongOpenHashMap, LongOpenHashSet
from pulsarlab.clock import Scheduler, Timer
from pulsarlab.profiles import DelayedTrackerForm, Profile, get_profile

if TYPE_CHECKING:  # numpy loads with the first tracker that needs it
    import numpy as np

Position = tuple[int, int]  # (ledgerId, entryId)

DEFAULT_TICK_TIME_MILLIS = 1000  # delayedDeliveryTickTimeMillis
DEFAULT_FIXED_DELAY_DETECTION_LOOKAHEAD = 50_000  # delayedDeliveryFixedDelayDetectionLookahead
_TIME_BUCKET_NODE_BYTES = 40  # memory_bytes: a sorted map's node for one time bucket (key, value, links)


@dataclass(frozen=True)
class TimerState:
    """The live timeout: when it fires and the delay it was armed with."""

    deadline: int
    delay: int


def timestamp_precision_bit_cnt(tick_time_millis: int) -> int:
    """floor(log2(tick)), 0 for tick 0: the low bits 4.1 trims from deliverAt."""
    return max(tick_time_millis.bit_length() - 1, 0) if tick_time_millis > 0 else 0


class InMemoryDelayedDeliveryTracker:
    """One dispatcher's delayed-delivery tracker; ``InMemoryDelayedDeliveryTracker(...)`` builds the profile's form.

    ``read_more_entries`` is called each time the timer fires. Times are ms; the tracker reads
    ``clock()`` (Pulsar's injected ``Clock.millis()``), by default the scheduler's time, and arms its
    timeouts on the scheduler.
    """

    form: DelayedTrackerForm

    def __new__(cls, *args: object, **kwargs: object) -> "InMemoryDelayedDeliveryTracker":
        if cls is InMemoryDelayedDeliveryTracker:
            profile = get_profile(kwargs.get("profile"))  # type: ignore[arg-type]
            cls = _FORMS[profile.delayed_tracker]
        return super().__new__(cls)

    def __init__(
        self,
        scheduler: Scheduler,
        read_more_entries: Callable[[], object],
        *,
        profile: str | Profile | None = None,
        tick_time_millis: int = DEFAULT_TICK_TIME_MILLIS,
        is_delayed_delivery_deliver_at_time_strict: bool = False,
        fixed_delay_detection_lookahead: int = DEFAULT_FIXED_DELAY_DETECTION_LOOKAHEAD,
        clock: Callable[[], int] | None = None,
    ) -> None:
        _check_millis("tickTimeMillis", tick_time_millis)
        if not isinstance(fixed_delay_detection_lookahead, int) or isinstance(fixed_delay_detection_lookahead, bool):
            raise TypeError(f"fixedDelayDetectionLookahead must be an int, got {fixed_delay_detection_lookahead!r}")
        self.profile = get_profile(profile)
        self._scheduler = scheduler
        self._clock = clock if clock is not None else scheduler.now
        self._read_more_entries = read_more_entries
        self.tick_time_millis = tick_time_millis
        self.is_delayed_delivery_deliver_at_time_strict = bool(is_delayed_delivery_deliver_at_time_strict)
        self.fixed_delay_detection_lookahead = fixed_delay_detection_lookahead
        # AbstractDelayedDeliveryTracker's timer state; Java's long fields start at 0
        self._timeout: Timer | None = None
        self._timeout_delay = 0
        self._current_timeout_target = 0
        self._last_tick_run = 0
        # InMemoryDelayedDeliveryTracker's fixed-delay detection
        self._highest_delivery_time_tracked = 0
        self._messages_have_fixed_delay = True
        self.timeouts_created = 0
        self.read_more_entries_calls = 0

    # --- DelayedDeliveryTracker API -----------------------------------------------------------

    def add_message(self, ledger_id: int, entry_id: int, deliver_at: int) -> bool:
        """Hold a position until ``deliver_at``; False means "deliver it now" (not tracked)."""
        if deliver_at < 0 or deliver_at <= self.cutoff_time():
            self._messages_have_fixed_delay = False
            return False
        self._store(ledger_id, entry_id, deliver_at)
        self._update_timer()
        if deliver_at < self._highest_delivery_time_tracked - self.tick_time_millis:
            self._messages_have_fixed_delay = False
        self._highest_delivery_time_tracked = max(self._highest_delivery_time_tracked, deliver_at)
        return True

    def message_due(self) -> bool:
        """Something is due by the cutoff; read-only (`has_message_available` without the timer)."""
        return self.number_of_delayed_messages() > 0 and self._next_delivery_time() <= self.cutoff_time()

    def has_message_available(self) -> bool:
        """True if something is due by the cutoff; otherwise re-evaluates the timer."""
        available = self.message_due()
        if not available:
            self._update_timer()
        return available

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        """Take up to ``max_messages`` due positions, returned sorted (Java's TreeSet)."""
        positions = self._take(max_messages, self.cutoff_time())
        if self.number_of_delayed_messages() == 0:
            self._highest_delivery_time_tracked = 0
            self._messages_have_fixed_delay = True
        self._update_timer()
        return sorted(positions)

    def _fixed_delay_backlog(self) -> bool:
        """Enough fixed-delay messages wait for the look-ahead to pause reads (if none of them is due)."""
        return (
            self.fixed_delay_detection_lookahead > 0
            and self._messages_have_fixed_delay
            and self.number_of_delayed_messages() >= self.fixed_delay_detection_lookahead
        )

    def should_pause_all_deliveries(self) -> bool:
        """Fixed-delay look-ahead: pause reads while enough fixed-delay messages wait and none is due."""
        return self._fixed_delay_backlog() and not self.has_message_available()

    def would_pause_all_deliveries(self) -> bool:
        """`should_pause_all_deliveries` without its side effect (re-evaluating the timer); for snapshots."""
        return self._fixed_delay_backlog() and not self.message_due()

    def clear(self) -> None:
        """Drop every held position; the timer and the fixed-delay state are left alone."""
        self._clear_store()

    def reset_tick_time(self, tick_time_millis: int) -> None:
        """``resetTickTime``: a new tick for the cutoff and the timer (not for 4.1's bucket precision)."""
        _check_millis("tickTimeMillis", tick_time_millis)
        self.tick_time_millis = tick_time_millis

    def close(self) -> None:
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        self._current_timeout_target = -1

    def number_of_delayed_messages(self) -> int:
        raise NotImplementedError

    def next_delivery_time(self) -> int | None:
        """The earliest held delivery time (4.1: its time bucket), None when nothing is held; for views."""
        return self._next_delivery_time() if self.number_of_delayed_messages() else None

    def cutoff_time(self) -> int:
        """``getCutoffTime``: now when strict, otherwise now + tick (up to a tick early)."""
        now = self._clock()
        return now if self.is_delayed_delivery_deliver_at_time_strict else now + self.tick_time_millis

    @property
    def timer(self) -> TimerState | None:
        """The armed timeout, or None."""
        if self._timeout is None or self._timeout.cancelled:
            return None
        return TimerState(self._timeout.deadline, self._timeout_delay)

    @property
    def messages_have_fixed_delay(self) -> bool:
        return self._messages_have_fixed_delay

    # --- AbstractDelayedDeliveryTracker's timer -----------------------------------------------

    def _update_timer(self) -> None:
        if self.number_of_delayed_messages() == 0:
            if self._timeout is not None:
                self._current_timeout_target = -1
                self._timeout.cancel()
                self._timeout = None
            return
        timestamp = self._next_delivery_time()
        if timestamp == self._current_timeout_target:
            return
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        self._current_timeout_target = -1
        now = self._clock()
        delay = timestamp - now
        if delay <= 0:
            return  # already due: the dispatcher's next read takes it
        delay = max(delay, self._last_tick_run + self.tick_time_millis - now)
        self._current_timeout_target = timestamp
        self._timeout_delay = delay
        self._timeout = self._scheduler.call_later(delay, self._run, "InMemoryDelayedDeliveryTracker")
        self.timeouts_created += 1

    def _run(self) -> None:
        self._last_tick_run = self._clock()
        self._current_timeout_target = -1
        self._timeout = None
        self.read_more_entries_calls += 1
        self._read_more_entries()

    # --- storage, per form --------------------------------------------------------------------

    def _store(self, ledger_id: int, entry_id: int, deliver_at: int) -> None:
        raise NotImplementedError

    def _take(self, max_messages: int, cutoff: int) -> set[Position]:
        raise NotImplementedError

    def _next_delivery_time(self) -> int:
        raise NotImplementedError

    def _clear_store(self) -> None:
        raise NotImplementedError


class PriorityQueueDelayedDeliveryTracker(InMemoryDelayedDeliveryTracker):
    """3.x / 4.0: a ``TripleLongPriorityQueue`` of (deliverAt, ledgerId, entryId)."""

    form = DelayedTrackerForm.PRIORITY_QUEUE

    def __init__(self, scheduler: Scheduler, read_more_entries: Callable[[], object], **conf: object) -> None:
        super().__init__(scheduler, read_more_entries, **conf)  # type: ignore[arg-type]
        self._queue: list[tuple[int, int, int]] = []

    def number_of_delayed_messages(self) -> int:
        return len(self._queue)

    def queue(self, limit: int | None = None) -> list[tuple[int, int, int]]:
        """The held (deliverAt, ledger, entry) triples in delivery order (the first ``limit``), for views."""
        if limit is not None:
            return heapq.nsmallest(limit, self._queue)
        return sorted(self._queue)

    def memory_bytes(self) -> int:
        """Estimated JVM bytes: the ``TripleLongPriorityQueue``'s ``bytesCapacity`` (`delayed_memory`)."""
        return delayed_memory.bytes_capacity(len(self._queue))

    def _store(self, ledger_id: int, entry_id: int, deliver_at: int) -> None:
        heapq.heappush(self._queue, (deliver_at, ledger_id, entry_id))

    def _take(self, max_messages: int, cutoff: int) -> set[Position]:
        positions: set[Position] = set()
        queue = self._queue
        n = max_messages
        while n > 0 and queue and queue[0][0] <= cutoff:
            _, ledger_id, entry_id = heapq.heappop(queue)
            positions.add((ledger_id, entry_id))
            n -= 1
        return positions

    def _next_delivery_time(self) -> int:
        return self._queue[0][0]

    def _clear_store(self) -> None:
        self._queue.clear()


class TimeBitmapDelayedDeliveryTracker(InMemoryDelayedDeliveryTracker):
    """4.1: trimmed deliverAt -> ledgerId (fastutil open hash map) -> entry ids (a bitmap)."""

    form = DelayedTrackerForm.TIME_BITMAP

    def __init__(self, scheduler: Scheduler, read_more_entries: Callable[[], object], **conf: object) -> None:
        super().__init__(scheduler, read_more_entries, **conf)  # type: ignore[arg-type]
        self.timestamp_precision_bit_cnt = timestamp_precision_bit_cnt(self.tick_time_millis)
        self._buckets: SortedDict = SortedDict()  # ts -> LongOpenHashMap[ledger -> SortedSet(entry)]
        self._count = 0

    def trim(self, deliver_at: int) -> int:
        """``trimLowerBit``: the bucket a deliverAt falls into (rounded down)."""
        return deliver_at & (-1 << self.timestamp_precision_bit_cnt)

    def number_of_delayed_messages(self) -> int:
        return self._count

    def buckets(self) -> list[tuple[int, list[tuple[int, list[int]]]]]:
        """``[(ts, [(ledger, entries ascending), ...]), ...]``, ledgers in the hash map's order."""
        return [
            (ts, [(ledger, list(entries)) for ledger, entries in ledgers.items()])
            for ts, ledgers in self._buckets.items()
        ]

    def memory_bytes(self) -> int:
        """Estimated JVM bytes (`delayed_memory`): a sorted-map node per time bucket, its fastutil ledger
        map, a ``RoaringBitmap`` per ledger."""
        total = 0
        groups: list[np.ndarray] = []
        for ledgers in self._buckets.values():
            total += _TIME_BUCKET_NODE_BYTES + delayed_memory.fastutil_map_bytes(ledgers.capacity)
            groups.extend(delayed_memory.sorted_array(entries) for entries in ledgers.values())
        return total + int(delayed_memory.roaring_bytes_many(groups).sum()) if groups else total

    def _store(self, ledger_id: int, entry_id: int, deliver_at: int) -> None:
        ts = self.trim(deliver_at)
        ledgers = self._buckets.get(ts)
        if ledgers is None:
            ledgers = self._buckets[ts] = LongOpenHashMap()
        entries = ledgers.setdefault(ledger_id, SortedSet())
        if entry_id not in entries:
            entries.add(entry_id)
            self._count += 1

    def _take(self, max_messages: int, cutoff: int) -> set[Position]:
        positions: set[Position] = set()
        buckets = self._buckets
        n = max_messages
        while n > 0 and buckets:
            ts, ledgers = buckets.peekitem(0)
            if ts > cutoff:
                break
            emptied = LongOpenHashSet()
            for ledger_id, entries in ledgers.items():
                cardinality = len(entries)
                if cardinality <= n:
                    positions.update((ledger_id, e) for e in entries)
                    n -= cardinality
                    self._count -= cardinality
                    emptied.add(ledger_id)
                else:
                    positions.update((ledger_id, e) for e in entries[:n])
                    del entries[:n]
                    self._count -= n
                    n = 0
                if n <= 0:
                    break
            for ledger_id in emptied:
                ledgers.remove(ledger_id)
            if len(ledgers) == 0:
                del buckets[ts]
        return positions

    def _next_delivery_time(self) -> int:
        first: int = self._buckets.peekitem(0)[0]
        return first

    def _clear_store(self) -> None:
        self._buckets.clear()
        self._count = 0


_FORMS: dict[DelayedTrackerForm, type[InMemoryDelayedDeliveryTracker]] = {
    DelayedTrackerForm.PRIORITY_QUEUE: PriorityQueueDelayedDeliveryTracker,
    DelayedTrackerForm.TIME_BITMAP: TimeBitmapDelayedDeliveryTracker,
}


def _check_millis(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int of milliseconds, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0 ms, got {value}")
