"""The virtual clock and the one scheduler every timer of the model runs on.

Models no Pulsar class: it stands in for wall time, Netty's HashedWheelTimer and the broker's
executors. Time is integer milliseconds; timers fire exactly at their deadline, earliest first, ties
in the order they were scheduled (so a scenario is deterministic). Simplification: no timer jitter.

The broker's periodic housekeeping (`BrokerService`'s inactivity monitor) runs on background timers
(`call_every`): they fire when the clock passes them, like any timer, but do not keep the model busy, so
`run_until_idle` and a blocking call's wait end when only housekeeping is left, as a real client would not wait
a minute for the broker's next sweep.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(order=True)
class Timer:
    """A scheduled callback; ``cancel()`` it to stop it firing."""

    deadline: int
    seq: int
    callback: Callable[[], Any] = field(compare=False)
    name: str = field(default="", compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def delay_from(self) -> int:  # pragma: no cover - convenience for views
        return self.deadline


class Periodic:
    """A background timer that re-arms itself every ``period`` ms until cancelled."""

    def __init__(self, scheduler: "Scheduler", period: int, callback: Callable[[], Any], name: str) -> None:
        self.scheduler = scheduler
        self.period = period
        self.callback = callback
        self.name = name
        self.timer: Timer | None = None

    def arm(self) -> None:
        sched = self.scheduler
        self.timer = Timer(sched.now_ms + self.period, next(sched._seq), self._tick, self.name)
        heapq.heappush(sched._background, self.timer)

    def _tick(self) -> None:
        self.arm()
        self.callback()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Scheduler:
    """A heap of timers over a virtual millisecond clock (SimPy-style core, no coroutines)."""

    def __init__(self, start_ms: int = 0) -> None:
        if not isinstance(start_ms, int) or start_ms < 0:
            raise ValueError(f"start time must be a non-negative integer of milliseconds, got {start_ms!r}")
        # the current virtual time, what now() returns: read it directly on per-message paths (an attribute read
        # costs a fraction of the call); only the scheduler moves it
        self.now_ms = start_ms
        self._heap: list[Timer] = []
        self._background: list[Timer] = []  # periodic housekeeping: fires as time passes, never keeps it busy
        self._seq = itertools.count()

    def now(self) -> int:
        """Current virtual time in milliseconds."""
        return self.now_ms

    def call_at(self, deadline: int, callback: Callable[[], Any], name: str = "") -> Timer:
        """Run ``callback`` when the clock reaches ``deadline`` (at once on the next run if past)."""
        timer = Timer(max(int(deadline), self.now_ms), next(self._seq), callback, name)
        heapq.heappush(self._heap, timer)
        return timer

    def call_later(self, delay: int, callback: Callable[[], Any], name: str = "") -> Timer:
        """Run ``callback`` after ``delay`` ms (0 means: at the current time, after what is queued)."""
        if delay < 0:
            raise ValueError(f"delay must be >= 0 ms, got {delay}")
        return self.call_at(self.now_ms + int(delay), callback, name)

    def call_every(self, period: int, callback: Callable[[], Any], name: str = "") -> "Periodic":
        """Run ``callback`` every ``period`` ms, the first time at now + ``period`` (`scheduleAtFixedRate`), as
        background housekeeping; ``cancel()`` the answer to stop it."""
        if not isinstance(period, int) or period <= 0:
            raise ValueError(f"period must be a positive integer of milliseconds, got {period!r}")
        periodic = Periodic(self, period, callback, name)
        periodic.arm()
        return periodic

    def next_deadline(self) -> int | None:
        """The deadline of the earliest live timer, or None when idle (background housekeeping aside)."""
        self._drop_cancelled()
        return self._heap[0].deadline if self._heap else None

    def next_wake(self) -> int | None:
        """The deadline of the earliest timer, background housekeeping included (what a real-time driver
        sleeps until)."""
        self._drop_cancelled()
        deadlines = [h[0].deadline for h in (self._heap, self._background) if h]
        return min(deadlines) if deadlines else None

    def pending(self) -> int:
        """How many live timers are waiting."""
        return sum(1 for t in self._heap if not t.cancelled)

    def advance(self, ms: int) -> int:
        """Move the clock forward ``ms`` milliseconds, firing every timer due on the way, in order.

        Returns the number of timers fired.
        """
        if ms < 0:
            raise ValueError(f"cannot move the clock backwards ({ms} ms)")
        return self.run_until(self.now_ms + int(ms))

    def run_until(self, t: int) -> int:
        """Fire every timer with deadline <= t (including ones they schedule), then set the clock to t."""
        if t < self.now_ms:
            raise ValueError(f"cannot move the clock backwards from {self.now_ms} to {t}")
        fired = 0
        heap, background = self._heap, self._background
        while True:
            self._drop_cancelled()
            if background and background[0].deadline <= t and (not heap or background[0] < heap[0]):
                timer = heapq.heappop(background)
            elif heap and heap[0].deadline <= t:
                timer = heapq.heappop(heap)
            else:
                break
            self.now_ms = timer.deadline
            timer.callback()
            fired += 1
        self.now_ms = t
        return fired

    def run_until_idle(self, limit_ms: int | None = None, max_timers: int = 10_000_000) -> int:
        """Fire timers until none is left (or the clock would pass ``limit_ms``).

        Periodic timers re-arm forever, so ``max_timers`` guards against a scenario that never idles.
        """
        fired = 0
        while True:
            deadline = self.next_deadline()
            if deadline is None or (limit_ms is not None and deadline > limit_ms):
                break
            fired += self.run_until(deadline)
            if fired > max_timers:
                raise RuntimeError(
                    f"run_until_idle fired more than {max_timers} timers; a periodic timer keeps the "
                    "model busy - use advance(ms) instead"
                )
        return fired

    def _drop_cancelled(self) -> None:
        for heap in (self._heap, self._background):
            while heap and heap[0].cancelled:
                heapq.heappop(heap)
