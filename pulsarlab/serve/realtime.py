"""The real-time driver: while the lab serves real clients, its virtual clock follows the wall clock.

Models no Pulsar class: a real broker's timers (Netty's HashedWheelTimer, the dispatcher executors) run on wall
time, and so must the lab's `Scheduler` when real clients talk to it. The driver keeps one offset, fixed when
serving starts, so that virtual time continues from ``lab.now()``: ``virtual = wall_ms - offset_ms``.
`catch_up` fires every timer due up to the wall clock (called before each batch of frames is handled, so events
carry the time they happened); `next_wake` tells the network loop when the next timer is due, the broker's
background housekeeping included. Wall-clock timestamps from clients (publish time, deliver-at time, seek time)
move onto the lab clock with `to_virtual`.

Simplifies: millisecond resolution; virtual time never goes back, so if something else moved the clock ahead
of the wall clock (``lab.advance`` while serving), the driver waits until the wall clock catches up.
"""

from __future__ import annotations

import time
from typing import Callable

from pulsarlab.clock import Scheduler


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class RealTimeDriver:
    """Advances one `Scheduler` to wall time; ``clock`` (ms since the epoch) is replaceable for tests."""

    def __init__(self, scheduler: Scheduler, clock: Callable[[], int] = wall_ms) -> None:
        self.scheduler = scheduler
        self.clock = clock
        self.offset_ms = clock() - scheduler.now()

    def target(self) -> int:
        """The virtual time that corresponds to the wall clock now."""
        return self.clock() - self.offset_ms

    def to_virtual(self, epoch_ms: int) -> int:
        return epoch_ms - self.offset_ms

    def to_wall(self, virtual_ms: int) -> int:
        return virtual_ms + self.offset_ms

    def catch_up(self) -> int:
        """Fire the timers due up to the wall clock and move virtual time there; returns how many fired."""
        target = self.clock() - self.offset_ms
        sched = self.scheduler
        if target <= sched.now():
            return 0
        return sched.run_until(target)

    def next_wake(self) -> float | None:
        """Seconds until the next timer is due by the wall clock (0 when overdue), or None when none is set."""
        nxt = self.scheduler.next_wake()
        if nxt is None:
            return None
        return max(0.0, (nxt + self.offset_ms - self.clock()) / 1000.0)


__all__ = ["RealTimeDriver", "wall_ms"]
