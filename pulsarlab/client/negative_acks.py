"""Client negative acks: hold nacked ids for a delay, then ask the broker to redeliver them.

Models `org.apache.pulsar.client.impl.NegativeAcksTracker` in both forms (docs/guide/redelivery.md#negative-acks, golden
README-dispatch §5), chosen by ``profile.negative_ack_tracker``, and `MultiplierRedeliveryBackoff`:

* DEADLINE_MAP (3.x): (ledger, entry) -> (partition, deadline in ns); a re-nack overwrites. A timer
  every delay/3 redelivers what is strictly past its deadline and re-arms while anything is held.
* TIME_BUCKETS (4.0.2+, PIP-393): deadlines trimmed down to 2^negativeAckPrecisionBitCnt ms buckets,
  bucket -> ledger -> entries; a re-nack into another bucket is a second entry, redelivered ids
  carry partition -2, and the timer goes to the first bucket.

The client reads ``System.nanoTime()``/``currentTimeMillis()`` and a Netty timer; here they are a
`ClientClock` over the model's scheduler (1 ms per scheduler unit by default, wall time = scheduler
time; the conformance checker runs one in nanoseconds from a recorded epoch). Simplifies: no chunked
ids, no ``onNegativeAcksSend`` interceptors; on a millisecond scheduler a nanosecond delay is rounded
up to whole milliseconds, as a wheel timer would fire it late, never early.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

from sortedcontainers import SortedDict

from pulsarlab.clock import Scheduler, Timer
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.ids import MessageId
from pulsarlab.profiles import NegativeAckTrackerForm, Profile, get_profile

MIN_NACK_DELAY_MS = 100
DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MICROS = 60_000_000  # 1 min
DEFAULT_NEGATIVE_ACK_PRECISION_BIT_CNT = 8
DUMMY_PARTITION_INDEX = -2  # 4.x redelivers ids without their partition
_NS_PER_MS = 1_000_000

Redeliver = Callable[[list[MessageId]], object]
TimerListener = Callable[[int, list[MessageId]], object]


@dataclass(frozen=True)
class MultiplierRedeliveryBackoff:
    """``MultiplierRedeliveryBackoff``: min·multiplier^count ms, capped at max (builder defaults)."""

    min_delay_ms: int = 10_000
    max_delay_ms: int = 600_000
    multiplier: float = 2.0
    _max_multiplier_pow: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("min_delay_ms", "max_delay_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int of milliseconds, got {value!r}")
        if not isinstance(self.multiplier, (int, float)) or isinstance(self.multiplier, bool):
            raise TypeError(f"multiplier must be a number, got {self.multiplier!r}")
        if self.min_delay_ms < 0:
            raise IllegalArgumentException("min delay time must be >= 0")
        if self.max_delay_ms < self.min_delay_ms:
            raise IllegalArgumentException("maxDelayMs must be >= minDelayMs")
        if not self.multiplier > 1:
            raise IllegalArgumentException("multiplier must be > 1")
        # Above this count the result is max_delay_ms; it also keeps multiplier**count finite.
        pow_cap = 0
        if self.min_delay_ms > 0:
            pow_cap = int(math.log(self.max_delay_ms / self.min_delay_ms) / math.log(self.multiplier)) + 1
        object.__setattr__(self, "_max_multiplier_pow", pow_cap)

    def next(self, redelivery_count: int) -> int:
        """The delay in ms before redelivery number ``redelivery_count + 1``."""
        if redelivery_count <= 0 or self.min_delay_ms <= 0:
            return self.min_delay_ms
        if redelivery_count > self._max_multiplier_pow:
            return self.max_delay_ms
        return min(int(self.min_delay_ms * math.pow(self.multiplier, redelivery_count)), self.max_delay_ms)


@dataclass
class ClientClock:
    """The client's clocks and Netty timer over a model scheduler.

    ``nanos_per_unit`` is what one scheduler unit is worth (1 ms by default; 1 for a nanosecond
    scheduler); ``epoch_ms`` is ``currentTimeMillis()`` at scheduler time 0.
    """

    scheduler: Scheduler
    nanos_per_unit: int = _NS_PER_MS
    epoch_ms: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.nanos_per_unit, int) or self.nanos_per_unit <= 0:
            raise ValueError(f"nanos_per_unit must be a positive int, got {self.nanos_per_unit!r}")

    def nano_time(self) -> int:
        return self.scheduler.now() * self.nanos_per_unit

    def current_time_millis(self) -> int:
        return self.epoch_ms + self.scheduler.now() * self.nanos_per_unit // _NS_PER_MS

    def new_timeout(self, delay_ns: int, callback: Callable[[], object], name: str) -> Timer:
        return self.scheduler.call_later(-(-delay_ns // self.nanos_per_unit), callback, name)

    def deadline_ns(self, timer: Timer) -> int:
        return timer.deadline * self.nanos_per_unit


class NegativeAcksTracker:
    """A consumer's negative-ack tracker; ``NegativeAcksTracker(...)`` builds the profile's form.

    ``redeliver`` receives the sorted ids of one redelivery request. ``timer_listener``, if given,
    sees every timer run as ``(now_ns, ids)``, runs that redeliver nothing included.
    """

    form: NegativeAckTrackerForm

    def __new__(cls, *args: object, **kwargs: object) -> "NegativeAcksTracker":
        if cls is NegativeAcksTracker:
            profile = get_profile(kwargs.get("profile"))  # type: ignore[arg-type]
            cls = _FORMS[profile.negative_ack_tracker]
        return super().__new__(cls)

    def __init__(
        self,
        scheduler: Scheduler,
        redeliver: Redeliver,
        *,
        profile: str | Profile | None = None,
        negative_ack_redelivery_delay_micros: int = DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MICROS,
        negative_ack_precision_bit_cnt: int = DEFAULT_NEGATIVE_ACK_PRECISION_BIT_CNT,
        negative_ack_redelivery_backoff: MultiplierRedeliveryBackoff | None = None,
        clock: ClientClock | None = None,
        timer_listener: TimerListener | None = None,
    ) -> None:
        self.profile = get_profile(profile)
        _check_int("negativeAckRedeliveryDelayMicros", negative_ack_redelivery_delay_micros)
        if negative_ack_redelivery_delay_micros < 0:
            raise IllegalArgumentException("redeliveryDelay needs to be >= 0")
        _check_int("negativeAckPrecisionBitCnt", negative_ack_precision_bit_cnt)
        if negative_ack_precision_bit_cnt < 0:
            raise IllegalArgumentException("negativeAckPrecisionBitCount needs to be >= 0")
        self.negative_ack_redelivery_delay_micros = negative_ack_redelivery_delay_micros
        self.negative_ack_precision_bit_cnt = negative_ack_precision_bit_cnt
        self.backoff = negative_ack_redelivery_backoff
        self.clock = clock if clock is not None else ClientClock(scheduler)
        if self.clock.scheduler is not scheduler:
            raise ValueError("the clock must run on the tracker's scheduler")
        self._redeliver = redeliver
        self._timer_listener = timer_listener
        self._timeout: Timer | None = None

    # --- Pulsar's API -------------------------------------------------------------------------

    def add(self, message_id: MessageId | Iterable[int], redelivery_count: int = 0) -> None:
        """Negatively acknowledge a message (``add(MessageId)``, or ``add(Message)`` with its count)."""
        _check_int("redeliveryCount", redelivery_count)
        self._add(MessageId.of(message_id), redelivery_count)

    def close(self) -> None:
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        self._clear()

    def nacked_messages_count(self) -> int:
        """``getNackedMessagesCount()``."""
        raise NotImplementedError

    def due_ms(self, redelivery_count: int = 0) -> int:
        """When an id added now becomes due, in scheduler ms: 3.x its deadline (redelivered at the first timer
        run after it), 4.x its bucket (redelivered when the timer reaches the bucket)."""
        raise NotImplementedError

    @property
    def next_timer_ns(self) -> int | None:
        """When the armed timeout fires, in the clock's nanoseconds, or None."""
        return self.clock.deadline_ns(self._timeout) if self._timeout is not None else None

    # --- shared helpers -----------------------------------------------------------------------

    def _backoff_ms(self, redelivery_count: int) -> int | None:
        return self.backoff.next(redelivery_count) if self.backoff is not None else None

    def _arm(self, delay_ns: int) -> None:
        self._timeout = self.clock.new_timeout(delay_ns, self._trigger_redelivery, "NegativeAcksTracker")

    def _finish_run(self, ids: set[MessageId]) -> None:
        redelivered = sorted(ids)
        if self._timer_listener is not None:
            self._timer_listener(self.clock.nano_time(), redelivered)
        if redelivered:
            self._redeliver(redelivered)

    def _add(self, mid: MessageId, redelivery_count: int) -> None:
        raise NotImplementedError

    def _trigger_redelivery(self) -> None:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError


class DeadlineMapNegativeAcksTracker(NegativeAcksTracker):
    """3.x: (ledger, entry) -> (partition, deadline ns); timer every delay/3 while anything is held."""

    form = NegativeAckTrackerForm.DEADLINE_MAP

    def __init__(self, scheduler: Scheduler, redeliver: Redeliver, **conf: object) -> None:
        super().__init__(scheduler, redeliver, **conf)  # type: ignore[arg-type]
        min_delay_ns = MIN_NACK_DELAY_MS * _NS_PER_MS
        self.nack_delay_ns = max(self.negative_ack_redelivery_delay_micros * 1000, min_delay_ns)
        if self.backoff is not None:
            self.timer_interval_ns = max(self.backoff.next(0) * _NS_PER_MS, min_delay_ns) // 3
        else:
            self.timer_interval_ns = self.nack_delay_ns // 3
        self._nacked: dict[tuple[int, int], tuple[int, int]] = {}
        # (deadline, ledger, entry); stale when the map holds another deadline for the key
        self._by_deadline: list[tuple[int, int, int]] = []

    def _add(self, mid: MessageId, redelivery_count: int) -> None:
        backoff_ms = self._backoff_ms(redelivery_count)
        delay_ns = backoff_ms * _NS_PER_MS if backoff_ms is not None else self.nack_delay_ns
        deadline = self.clock.nano_time() + delay_ns
        self._nacked[(mid.ledger, mid.entry)] = (mid.partition, deadline)
        heapq.heappush(self._by_deadline, (deadline, mid.ledger, mid.entry))
        if self._timeout is None:
            self._arm(self.timer_interval_ns)

    def _trigger_redelivery(self) -> None:
        if not self._nacked:
            self._timeout = None
            if self._timer_listener is not None:
                self._timer_listener(self.clock.nano_time(), [])
            return
        now = self.clock.nano_time()
        due: set[MessageId] = set()
        heap = self._by_deadline
        while heap and heap[0][0] < now:
            deadline, ledger, entry = heapq.heappop(heap)
            held = self._nacked.get((ledger, entry))
            if held is not None and held[1] == deadline:
                del self._nacked[(ledger, entry)]
                due.add(MessageId(ledger, entry, held[0]))
        self._arm(self.timer_interval_ns)
        self._finish_run(due)

    def nacked_messages_count(self) -> int:
        return len(self._nacked)

    def due_ms(self, redelivery_count: int = 0) -> int:
        backoff_ms = self._backoff_ms(redelivery_count)
        delay_ns = backoff_ms * _NS_PER_MS if backoff_ms is not None else self.nack_delay_ns
        return -(-(self.clock.nano_time() + delay_ns) // self.clock.nanos_per_unit)

    def deadlines_ns(self) -> dict[MessageId, int]:
        """Every held id with its deadline (``nanoTime`` ns), for views."""
        return {MessageId(l, e, p): d for (l, e), (p, d) in sorted(self._nacked.items())}

    def _clear(self) -> None:
        self._nacked.clear()
        self._by_deadline.clear()


class TimeBucketNegativeAcksTracker(NegativeAcksTracker):
    """4.0.2+: trimmed-ms bucket -> ledger -> entries; the timer goes to the first bucket."""

    form = NegativeAckTrackerForm.TIME_BUCKETS

    def __init__(self, scheduler: Scheduler, redeliver: Redeliver, **conf: object) -> None:
        super().__init__(scheduler, redeliver, **conf)  # type: ignore[arg-type]
        self.nack_delay_ms = max(self.negative_ack_redelivery_delay_micros // 1000, MIN_NACK_DELAY_MS)
        self._bucket_mask = -1 << (self.negative_ack_precision_bit_cnt & 63)  # Java's long shift
        self._buckets: SortedDict = SortedDict()  # ts -> {ledger: set(entry)}
        self._count = 0

    def trim(self, timestamp_ms: int) -> int:
        """``trimLowerBit``: the bucket a redelivery time falls into (rounded down)."""
        return timestamp_ms & self._bucket_mask

    def _add(self, mid: MessageId, redelivery_count: int) -> None:
        backoff_ms = self._backoff_ms(redelivery_count)
        delay_ms = backoff_ms if backoff_ms is not None else self.nack_delay_ms
        ts = self.trim(self.clock.current_time_millis() + delay_ms)
        ledgers = self._buckets.get(ts)
        if ledgers is None:
            ledgers = self._buckets[ts] = {}
        entries = ledgers.setdefault(mid.ledger, set())
        if mid.entry not in entries:
            entries.add(mid.entry)
            self._count += 1
        if self._timeout is None:
            self._arm(delay_ms * _NS_PER_MS)

    def _trigger_redelivery(self) -> None:
        if not self._buckets:
            self._timeout = None
            if self._timer_listener is not None:
                self._timer_listener(self.clock.nano_time(), [])
            return
        now_ms = self.clock.current_time_millis()
        due: set[MessageId] = set()
        buckets = self._buckets
        while buckets and buckets.peekitem(0)[0] <= now_ms:
            _, ledgers = buckets.popitem(0)
            for ledger, entries in ledgers.items():
                self._count -= len(entries)
                due.update(MessageId(ledger, entry, DUMMY_PARTITION_INDEX) for entry in entries)
        if buckets:
            self._arm(max(buckets.peekitem(0)[0] - now_ms, 0) * _NS_PER_MS)
        else:
            self._timeout = None
        self._finish_run(due)

    def nacked_messages_count(self) -> int:
        return self._count

    def due_ms(self, redelivery_count: int = 0) -> int:
        backoff_ms = self._backoff_ms(redelivery_count)
        delay_ms = backoff_ms if backoff_ms is not None else self.nack_delay_ms
        bucket = self.trim(self.clock.current_time_millis() + delay_ms)
        return (bucket - self.clock.epoch_ms) * _NS_PER_MS // self.clock.nanos_per_unit

    def buckets(self) -> list[tuple[int, list[tuple[int, list[int]]]]]:
        """``[(bucket_ms, [(ledger, sorted entries), ...]), ...]`` in time order, for views."""
        return [
            (ts, [(ledger, sorted(entries)) for ledger, entries in sorted(ledgers.items())])
            for ts, ledgers in self._buckets.items()
        ]

    def _clear(self) -> None:
        self._buckets.clear()
        self._count = 0


_FORMS: dict[NegativeAckTrackerForm, type[NegativeAcksTracker]] = {
    NegativeAckTrackerForm.DEADLINE_MAP: DeadlineMapNegativeAcksTracker,
    NegativeAckTrackerForm.TIME_BUCKETS: TimeBucketNegativeAcksTracker,
}


def _check_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
