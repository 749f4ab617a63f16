"""Client ack timeout: a ring of time partitions whose head is redelivered on every tick.

Models `org.apache.pulsar.client.impl.UnAckedMessageTracker` (docs/guide/redelivery.md#ack-timeout, golden
README-dispatch §4)
and the `ConsumerBuilderImpl.ackTimeout` / `ackTimeoutTickTime` checks. The ring holds
ceil(ackTimeout / tick) + 1 sets; `add` fills the newest, each tick takes the oldest, redelivers its
ids in one request and re-appends it empty, so a message times out after more than
ceil(ackTimeout/tick)·tick ms and at most one tick later. Simplifies: no chunked-id expansion, no
`ackTimeoutRedeliveryBackoff` path (`UnAckedMessageRedeliveryTracker`), no OTel counter; the timer
fires exactly at its deadline. ``idle_stop=True`` (what a lab consumer uses) lets the timer rest while the ring
is empty and re-arms it on the next `add` at the same phase (creation time + k·tick): ticks over an empty ring
change nothing, and a lab with nothing to do can run until idle.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable, Iterable

from sortedcontainers import SortedList

from pulsarlab.clock import Scheduler, Timer
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.ids import MessageId

MIN_ACK_TIMEOUT_MILLIS = 1000  # ConsumerBuilderImpl.MIN_ACK_TIMEOUT_MILLIS
MIN_TICK_TIME_MILLIS = 100  # ConsumerBuilderImpl.MIN_TICK_TIME_MILLIS
DEFAULT_TICK_DURATION_MILLIS = 1000  # ConsumerConfigurationData.tickDurationMillis

Redeliver = Callable[[list[MessageId]], object]
TickListener = Callable[[int, list[MessageId]], object]


def check_ack_timeout(ack_timeout_millis: int) -> int:
    """``ConsumerBuilder.ackTimeout``: 0 (disabled) or at least 1000 ms."""
    _require_int("ackTimeoutMillis", ack_timeout_millis)
    if not (ack_timeout_millis == 0 or ack_timeout_millis >= MIN_ACK_TIMEOUT_MILLIS):
        raise IllegalArgumentException(f"Ack timeout should be greater than {MIN_ACK_TIMEOUT_MILLIS} ms")
    return ack_timeout_millis


def check_tick_time(tick_duration_millis: int) -> int:
    """``ConsumerBuilder.ackTimeoutTickTime``: at least 100 ms."""
    _require_int("tickDurationMillis", tick_duration_millis)
    if tick_duration_millis < MIN_TICK_TIME_MILLIS:
        raise IllegalArgumentException(f"Ack timeout tick time should be greater than {MIN_TICK_TIME_MILLIS} ms")
    return tick_duration_millis


def _require_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int of milliseconds, got {type(value).__name__} {value!r}")


class UnAckedMessageTracker:
    """The ack-timeout ring of one consumer, ticking on the model's scheduler.

    ``redeliver`` receives the sorted ids of the head partition when it is not empty (Pulsar's
    ``consumer.redeliverUnacknowledgedMessages``). ``tick_listener``, if given, sees every tick as
    ``(now_ms, ids)``, empty ticks included. Ids are tracked at entry level (batch index discarded),
    as ``ConsumerImpl`` does before calling the tracker.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        redeliver: Redeliver,
        ack_timeout_millis: int,
        tick_duration_millis: int = DEFAULT_TICK_DURATION_MILLIS,
        *,
        tick_listener: TickListener | None = None,
        idle_stop: bool = False,
    ) -> None:
        if check_ack_timeout(ack_timeout_millis) == 0:
            raise IllegalArgumentException(
                "ackTimeoutMillis 0 disables the ack timeout; use unacked_message_tracker_for(), which "
                "returns UNACKED_MESSAGE_TRACKER_DISABLED for it"
            )
        check_tick_time(tick_duration_millis)
        self.ack_timeout_millis = ack_timeout_millis
        self.tick_duration_in_ms = min(tick_duration_millis, ack_timeout_millis)
        self._scheduler = scheduler
        self._redeliver = redeliver
        self._tick_listener = tick_listener
        blank_partitions = math.ceil(ack_timeout_millis / self.tick_duration_in_ms)
        self._time_partitions: deque[set[MessageId]] = deque(set() for _ in range(blank_partitions + 1))
        self._partition_of: dict[MessageId, set[MessageId]] = {}
        self._ordered: SortedList = SortedList()  # the tracked ids, for removeMessagesTill
        self._idle_stop = bool(idle_stop)
        self._epoch = scheduler.now()
        self._closed = False
        self._timeout: Timer | None = scheduler.call_later(
            self.tick_duration_in_ms, self._tick, "UnAckedMessageTracker tick"
        )

    # --- Pulsar's API -------------------------------------------------------------------------

    def add(self, message_id: MessageId | Iterable[int]) -> bool:
        """Track an id in the newest partition; False if it is already tracked anywhere."""
        mid = MessageId.of(message_id).discard_batch()
        if mid in self._partition_of:
            return False
        newest = self._time_partitions[-1]
        self._partition_of[mid] = newest
        newest.add(mid)
        self._ordered.add(mid)
        if self._timeout is None and self._idle_stop and not self._closed:
            tick = self.tick_duration_in_ms
            now = self._scheduler.now()
            due = self._epoch + ((now - self._epoch) // tick + 1) * tick
            self._timeout = self._scheduler.call_at(due, self._tick, "UnAckedMessageTracker tick")
        return True

    def remove(self, message_id: MessageId | Iterable[int]) -> bool:
        """Stop tracking an id (it was acked); True if it was tracked."""
        mid = MessageId.of(message_id).discard_batch()
        partition = self._partition_of.pop(mid, None)
        if partition is None:
            return False
        partition.discard(mid)
        self._ordered.remove(mid)
        return True

    def remove_messages_till(
        self, message_id: MessageId | Iterable[int], accept: Callable[[MessageId], bool] | None = None
    ) -> int:
        """Stop tracking every id ``<= message_id`` (a cumulative ack); returns how many.

        ``accept`` limits it to some ids (a multi-topic parent: those of the acked topic's partition).
        """
        upto = MessageId.of(message_id)
        cut: int = self._ordered.bisect_right(upto)
        if accept is None:
            for mid in self._ordered[:cut]:
                self._partition_of.pop(mid).discard(mid)
            del self._ordered[:cut]
            return cut
        doomed = [mid for mid in self._ordered[:cut] if accept(mid)]
        for mid in doomed:
            self._partition_of.pop(mid).discard(mid)
            self._ordered.remove(mid)
        return len(doomed)

    def clear(self) -> None:
        """Forget every tracked id; the ticks go on."""
        self._partition_of.clear()
        self._ordered.clear()
        for partition in self._time_partitions:
            partition.clear()

    def close(self) -> None:
        """Stop ticking and forget everything (Pulsar's ``close`` / ``stop``)."""
        self._closed = True
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        self.clear()

    # --- state for views and checks -----------------------------------------------------------

    def size(self) -> int:
        return len(self._partition_of)

    def is_empty(self) -> bool:
        return not self._partition_of

    def __contains__(self, message_id: object) -> bool:
        try:
            mid = MessageId.of(message_id)
        except (TypeError, ValueError):
            return False
        return mid.discard_batch() in self._partition_of

    @property
    def partitions(self) -> list[list[MessageId]]:
        """The ring, head (next to time out) first, each partition sorted."""
        return [sorted(p) for p in self._time_partitions]

    @property
    def next_tick_ms(self) -> int | None:
        return self._timeout.deadline if self._timeout is not None else None

    # --- the timer ----------------------------------------------------------------------------

    def _tick(self) -> None:
        head = self._time_partitions.popleft()
        timed_out = sorted(head)
        for mid in timed_out:
            del self._partition_of[mid]
            self._ordered.remove(mid)
        head.clear()
        self._time_partitions.append(head)
        if self._idle_stop and not self._partition_of:
            self._timeout = None
        else:
            self._timeout = self._scheduler.call_later(
                self.tick_duration_in_ms, self._tick, "UnAckedMessageTracker tick"
            )
        if self._tick_listener is not None:
            self._tick_listener(self._scheduler.now(), timed_out)
        if timed_out:
            self._redeliver(timed_out)


class UnAckedMessageTrackerDisabled:
    """``UNACKED_MESSAGE_TRACKER_DISABLED``: what a consumer with ackTimeout 0 uses; tracks nothing."""

    ack_timeout_millis = 0
    tick_duration_in_ms = 0

    def add(self, message_id: object) -> bool:
        return True

    def remove(self, message_id: object) -> bool:
        return True

    def remove_messages_till(self, message_id: object) -> int:
        return 0

    def clear(self) -> None:
        pass

    def close(self) -> None:
        pass

    def size(self) -> int:
        return 0

    def is_empty(self) -> bool:
        return True

    partitions: list[list[MessageId]] = []
    next_tick_ms = None


UNACKED_MESSAGE_TRACKER_DISABLED = UnAckedMessageTrackerDisabled()


def unacked_message_tracker_for(
    scheduler: Scheduler,
    redeliver: Redeliver,
    ack_timeout_millis: int = 0,
    tick_duration_millis: int = DEFAULT_TICK_DURATION_MILLIS,
    *,
    tick_listener: TickListener | None = None,
    idle_stop: bool = False,
) -> UnAckedMessageTracker | UnAckedMessageTrackerDisabled:
    """What ``ConsumerImpl`` builds: the disabled tracker for ackTimeout 0, else the ring."""
    check_tick_time(tick_duration_millis)
    if check_ack_timeout(ack_timeout_millis) == 0:
        return UNACKED_MESSAGE_TRACKER_DISABLED
    return UnAckedMessageTracker(
        scheduler,
        redeliver,
        ack_timeout_millis,
        tick_duration_millis,
        tick_listener=tick_listener,
        idle_stop=idle_stop,
    )
