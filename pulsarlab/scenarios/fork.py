"""Fork "what if from here": rebuild a recorded scenario run at frame N by replaying its inputs, apply a change,
run on, and compare the two branches frame by frame.

Models no Pulsar class. The model is deterministic, so a grid row of a scenario spec (`pulsarlab.scenarios.spec`)
run by `pulsarlab.scenarios.run.Driver` gives the same events and frames every time: `record_row` records such a
run with its row in the recorder's ``inputs`` (and so in a saved file's header), and `fork` replays the row with a
recorder made the same way, applies a `Change` at the first tick of the driver at or after frame N (once the
replay has logged frame N's event and the clock has reached its time), runs on, and reports the first frame where
the branch differs from the timeline (snapshot JSON or explanation). A replay that differs before the change means
the timeline came from another model version: `fork` refuses it.

Simplifies: a change lands on a tick of the driver (every ``tick_ms``), not inside a model operation, so it is
made at the first tick boundary at or after frame N; timelines of scripts or served apps have no replayable
inputs and cannot be forked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from pulsarlab.scenarios.run import Driver, RunResult
from pulsarlab.scenarios.spec import GridRow
from pulsarlab.snapshot.recorder import Recorder

CHANGES = ("consumer_leaves", "consumer_joins", "nack_next")
ROW_INPUT = "scenario_row"


@dataclass(frozen=True)
class Change:
    """What the branch does differently: ``consumer_leaves`` (``consumer``: its name, default the oldest),
    ``consumer_joins`` (a new consumer subscribes), ``nack_next`` (the application negatively acknowledges the
    next ``count`` messages it takes, whatever it would have done)."""

    kind: str
    consumer: str | None = None
    count: int = 1

    def __post_init__(self) -> None:
        if self.kind not in CHANGES:
            raise ValueError(f"unknown change {self.kind!r}; changes: {', '.join(CHANGES)}")
        if self.consumer is not None and self.kind != "consumer_leaves":
            raise ValueError(f"consumer= names the consumer that leaves; {self.kind} takes none")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"count must be an int >= 1, got {self.count!r}")

    def apply(self, driver: Driver) -> str:
        """Make the change on the running driver; returns what was done, for the report."""
        if self.kind == "consumer_joins":
            driver.join()
            return f"consumer c{driver.names} joins"
        if self.kind == "nack_next":
            driver.nack_next += self.count
            return f"the application nacks the next {self.count} message(s) it takes"
        if not driver.consumers:
            raise ValueError("no consumer is connected at the fork frame, so none can leave")
        if self.consumer is None:
            consumer = driver.consumers[0]
        else:
            named = [c for c in driver.consumers if c.consumer_name() == self.consumer]
            if not named:
                names = [c.consumer_name() for c in driver.consumers]
                raise ValueError(f"no consumer {self.consumer!r} at the fork frame; connected: {names}")
            consumer = named[0]
        name = consumer.consumer_name()
        driver.leave(consumer)
        return f"consumer {name} leaves"


def record_row(row: GridRow, every: Any = 1, *, history: bool = True) -> tuple[RunResult, Recorder]:
    """Run a grid row with a recorder attached from the start; the recorder's ``inputs`` carry the row."""
    recorders: list[Recorder] = []
    driver = Driver(row, on_lab=lambda lab: recorders.append(Recorder(lab, every, history=history)))
    result = driver.run()
    rec = recorders[0]
    rec.close()
    rec.inputs[ROW_INPUT] = row.as_dict()
    return result, rec


def row_of(inputs: dict[str, Any]) -> GridRow:
    """The grid row a timeline's inputs hold (ValueError when it has none: not replayable)."""
    data = inputs.get(ROW_INPUT)
    if data is None:
        raise ValueError(
            "this timeline has no replayable inputs (it was recorded from a script or a served app, not a scenario "
            "row): record it with pulsarlab.scenarios.fork.record_row to fork it"
        )
    try:
        return GridRow(**{**data, "broker_config": json.loads(data["broker_config"])})
    except (TypeError, KeyError, ValueError) as e:
        raise ValueError(f"the timeline's scenario row is not one this pulsarlab knows: {e}") from None


def _inputs(timeline: Any) -> dict[str, Any]:
    inputs = getattr(timeline, "inputs", None)
    if not isinstance(inputs, dict):
        raise TypeError(f"fork takes a Recorder or a loaded timeline, not {type(timeline).__name__}")
    if isinstance(timeline, Recorder):
        return {**inputs, "recorder": timeline.options()}
    return inputs


def same_frame(a: Any, b: Any) -> bool:
    return a.explanation == b.explanation and a.snapshot.to_json() == b.snapshot.to_json()


def first_divergence(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    """The first frame index where two timelines differ (a frame only one has counts), None if identical."""
    for i in range(min(len(a), len(b))):
        if not same_frame(a[i], b[i]):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@dataclass(frozen=True)
class ForkResult:
    """Both branches and where they part: ``change_frame`` is the branch's first frame after the change was made
    (every frame before it equals the base's), ``first_divergence`` the first frame that differs (None: none)."""

    base: Any
    branch: Recorder
    frame: int
    change: Change
    done: str
    change_frame: int
    change_time: int
    first_divergence: int | None

    def summary(self) -> str:
        where = (
            "the branches never differ"
            if self.first_divergence is None
            else f"first divergence at frame {self.first_divergence}"
        )
        return (
            f"fork at frame {self.frame}: {self.done} at t = {self.change_time} ms (branch frame "
            f"{self.change_frame}); {where}; base {len(self.base)} frames, branch {len(self.branch)}"
        )


def fork(timeline: Any, frame: int, change: Change) -> ForkResult:
    """Replay ``timeline``'s scenario row to frame ``frame``, make ``change``, run on and compare (module docstring)."""
    if isinstance(frame, bool) or not isinstance(frame, int):
        raise TypeError(f"the fork frame must be an int, not {type(frame).__name__}")
    n = len(timeline)
    if not 0 <= frame < n:
        raise IndexError(f"fork frame {frame} is outside the timeline (0..{n - 1})")
    if not isinstance(change, Change):
        raise TypeError(f"change must be a Change, not {type(change).__name__}")
    inputs = _inputs(timeline)
    row = row_of(inputs)
    options = inputs.get("recorder") or {}
    every = options.get("every", 1)
    at = timeline[frame]
    recorders: list[Recorder] = []
    made: list[tuple[str, int, int]] = []

    def attach(lab: Any) -> None:
        recorders.append(
            Recorder(lab, every if isinstance(every, int) else set(every), history=options.get("history", True))
        )

    def before_tick(driver: Driver) -> None:
        if made or len(driver.lab.events) <= at.event_index or driver.lab.now() < at.time:
            return
        rec = recorders[0]
        change_frame = len(rec)
        made.append((change.apply(driver), change_frame, driver.lab.now()))

    driver = Driver(row, on_lab=attach)
    driver.run(before_tick)
    branch = recorders[0]
    branch.close()
    branch.inputs[ROW_INPUT] = row.as_dict()
    if not made:
        raise ValueError(
            f"the run ended before it passed frame {frame} on a tick (t = {at.time} ms): fork from an earlier frame"
        )
    done, change_frame, change_time = made[0]
    diverged = first_divergence(timeline, branch)
    if diverged is not None and diverged < change_frame:
        recorded_by = getattr(timeline, "header", {}).get("pulsarlab", "?")
        raise ValueError(
            f"the replay differs from the timeline at frame {diverged}, before the change at frame {change_frame}: "
            f"the timeline was recorded by another model version (pulsarlab {recorded_by})"
        )
    return ForkResult(timeline, branch, frame, change, done, change_frame, change_time, diverged)


__all__ = [
    "CHANGES",
    "Change",
    "ForkResult",
    "ROW_INPUT",
    "first_divergence",
    "fork",
    "record_row",
    "row_of",
    "same_frame",
]
