"""Fork "what if from here": rebuild a recorded scenario run at frame N by replaying its inputs, apply a change,
run on, and compare the two branches frame by frame.

Models no Pulsar class. The model is deterministic, so a grid row of a scenario spec (`pulsarlab.scenarios.spec`)
run by `pulsarlab.scenarios.run.Driver` gives the same events and frames every time: `record_row` records such a
run with its row in the recorder's ``inputs`` (and so in a saved file's header), and `fork` replays the row with a
recorder made the same way, applies a `Change` at the first tick of the driver at or after frame N (once the
replay has logged frame N's event and the clock has reached its time), runs on, and reports the first frame where
the branch differs from the timeline (snapshot JSON or explanation). A replay that differs before the change means
the timeline came from another model version: `fork` refuses it. The branch's inputs carry the row and every
change made (``fork_changes``), so a saved branch can be forked again.

The changes: a consumer leaves or joins, the application nacks the next messages, a broker.conf setting changes,
or the Pulsar version (profile) changes. The last two are made as an operator makes them: broker.conf (or the
installed Pulsar) is changed and the broker restarts gracefully (`pulsarlab.broker.restart`: in-memory dispatch
state lost, cursors recovered, clients reconnect), so the branch's first new events are the restart's.

Simplifies: a change lands on a tick of the driver (every ``tick_ms``), not inside a model operation, so it is
made at the first tick boundary at or after frame N; timelines of scripts or served apps have no replayable
inputs and cannot be forked. Settings the model reads only when a topic, cursor or client is made
(`FIXED_SETTINGS`) cannot be changed mid-run, and a version change keeps their values. The lab models one Pulsar
line for broker and client: after a version change the clients already made keep what they fixed when they were
made (e.g. a consumer's trackers) and follow the new profile where they consult it per call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Sequence

from pulsarlab.broker.delayed.factory import load_delayed_delivery_tracker_factory
from pulsarlab.profiles import BROKER_DEFAULTS, PROFILES, BrokerConfig, get_profile
from pulsarlab.scenarios.run import Driver, RunResult
from pulsarlab.scenarios.spec import GridRow
from pulsarlab.snapshot.recorder import Recorder

CHANGES = ("consumer_leaves", "consumer_joins", "nack_next", "setting_changes", "version_changes")
ROW_INPUT = "scenario_row"
FORK_INPUT = "fork_changes"
# broker.conf settings the model reads only when a topic, cursor or client is made (a restart does not re-read them)
FIXED_SETTINGS = (
    "acknowledgmentAtBatchIndexLevelEnabled",
    "managedLedgerUnackedRangesOpenCacheSetEnabled",
    "maxMessageSize",
)


def _known_settings() -> dict[str, Any]:
    known = dict(BROKER_DEFAULTS)
    for profile in PROFILES.values():
        for name, value in profile.broker_defaults.items():
            known.setdefault(name, value)
    return known


def _check_setting(name: Any, value: Any) -> None:
    if not isinstance(name, str):
        raise ValueError(f"setting_changes needs setting= a broker.conf name (a str), got {name!r}")
    known = _known_settings()
    if name not in known:
        raise ValueError(f"unknown broker setting {name!r}; known settings: {', '.join(sorted(known))}")
    if name in FIXED_SETTINGS:
        raise ValueError(
            f"{name} is read only when a topic, cursor or client is made, so a fork cannot change it in a running "
            f"lab; set it in the scenario's broker_config instead"
        )
    default = known[name]
    kind = type(default)
    ok = (
        isinstance(value, bool)
        if kind is bool
        else isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind is float
        else isinstance(value, kind) and not isinstance(value, bool)
    )
    if default is not None and not ok:
        article = "an" if kind.__name__[0] in "aeiou" else "a"
        raise ValueError(f"{name} takes {article} {kind.__name__} (default {default!r}), got {value!r}")


@dataclass(frozen=True)
class Change:
    """What the branch does differently: ``consumer_leaves`` (``consumer``: its name, default the oldest),
    ``consumer_joins`` (a new consumer subscribes), ``nack_next`` (the application negatively acknowledges the
    next ``count`` messages it takes, whatever it would have done), ``setting_changes`` (broker.conf ``setting``
    becomes ``value``, then the broker restarts), ``version_changes`` (the broker restarts as Pulsar ``version``,
    a profile name such as "4.1")."""

    kind: str
    consumer: str | None = None
    count: int = 1
    setting: str | None = None
    value: Any = None
    version: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in CHANGES:
            raise ValueError(f"unknown change {self.kind!r}; changes: {', '.join(CHANGES)}")
        if self.consumer is not None and self.kind != "consumer_leaves":
            raise ValueError(f"consumer= names the consumer that leaves; {self.kind} takes none")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"count must be an int >= 1, got {self.count!r}")
        if self.count != 1 and self.kind != "nack_next":
            raise ValueError(f"count= is how many messages nack_next nacks; {self.kind} takes none")
        if self.kind == "setting_changes":
            _check_setting(self.setting, self.value)
        elif self.setting is not None or self.value is not None:
            raise ValueError(f"setting= and value= belong to setting_changes; {self.kind} takes neither")
        if self.kind == "version_changes":
            if self.version is None:
                raise ValueError(f"version_changes needs version=, one of: {', '.join(PROFILES)}")
            get_profile(self.version)  # unknown names fail with the list of known ones
        elif self.version is not None:
            raise ValueError(f"version= belongs to version_changes; {self.kind} takes none")

    def as_dict(self) -> dict[str, Any]:
        """The change as plain values (only the fields its kind uses); `from_dict` reads it back."""
        d: dict[str, Any] = {"kind": self.kind}
        if self.consumer is not None:
            d["consumer"] = self.consumer
        if self.kind == "nack_next":
            d["count"] = self.count
        if self.kind == "setting_changes":
            d["setting"], d["value"] = self.setting, self.value
        if self.version is not None:
            d["version"] = self.version
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Change":
        if not isinstance(d, dict) or "kind" not in d:
            raise ValueError(f"a change is an object with a 'kind', got {d!r}")
        unknown = set(d) - {"kind", "consumer", "count", "setting", "value", "version"}
        if unknown:
            raise ValueError(f"a change has no field(s) {sorted(unknown)}")
        return cls(**d)

    def apply(self, driver: Driver) -> str:
        """Make the change on the running driver; returns what was done, for the report."""
        if self.kind == "consumer_joins":
            driver.join()
            return f"consumer c{driver.names} joins"
        if self.kind == "nack_next":
            driver.nack_next += self.count
            return f"the application nacks the next {self.count} message(s) it takes"
        if self.kind == "setting_changes":
            return _change_setting(driver, self.setting, self.value)  # type: ignore[arg-type]
        if self.kind == "version_changes":
            return _change_version(driver, self.version)  # type: ignore[arg-type]
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


def _restart_with(lab: Any, profile: Any, config: dict[str, Any]) -> None:
    """The broker restarts gracefully on ``profile`` with broker.conf ``config`` (the clients reconnect)."""
    svc = lab.service
    factory = load_delayed_delivery_tracker_factory(  # checks the delayed-delivery settings before anything changes
        BrokerConfig(config), profile, svc.scheduler, svc.bucket_snapshot_storage, svc.events
    )
    lab.config.clear()  # in place: the broker, its topics and ledgers hold this dict
    lab.config.update(config)
    lab.profile = svc.profile = profile
    svc.delayed_tracker_factory = factory
    lab.restart_broker()


def _change_setting(driver: Driver, name: str, value: Any) -> str:
    lab = driver.lab
    before = lab.config[name]
    if before == value and type(before) is type(value):
        raise ValueError(f"{name} is already {value!r} at the fork frame: the change would change nothing")
    _restart_with(lab, lab.profile, {**lab.config, name: value})
    return f"broker.conf {name} = {value!r} (was {before!r}), the broker restarts"


def _change_version(driver: Driver, version: str) -> str:
    lab = driver.lab
    old, new = lab.profile, get_profile(version)
    if new.name == old.name:
        raise ValueError(f"the lab already runs Pulsar {old.name} at the fork frame: the change would change nothing")
    old_defaults = old.broker_config()
    overrides = dict(driver.row.effective_broker_config())
    overrides.update({k: v for k, v in lab.config.items() if old_defaults.get(k) != v})
    overrides.update({k: lab.config[k] for k in FIXED_SETTINGS})
    config = new.broker_config(overrides)
    kept = [k for k in FIXED_SETTINGS if new.broker_config().get(k) != config[k]]
    _restart_with(lab, new, config)
    note = f" ({', '.join(f'{k} stays {config[k]!r}' for k in kept)}: read when a topic is made)" if kept else ""
    return f"the broker restarts as Pulsar {new.name} (was {old.name}){note}"


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
    """Whether two frames show the same: explanation and snapshot (as its JSON would say)."""
    return a.explanation == b.explanation and a.snapshot.to_json() == b.snapshot.to_json()


class _Prefix:
    """Compares the append-only lists two timelines' frames share (dispatch history, redelivery steps) item by
    item only where they grew, so a whole-timeline comparison stays linear in the items."""

    def __init__(self) -> None:
        self.checked = 0

    def same(self, a: Any, b: Any) -> bool:
        if a is None or b is None:
            return a is None and b is None
        n = len(a)
        if n != len(b):
            return False
        start = self.checked if self.checked <= n else 0
        if any(a[i] != b[i] for i in range(start, n)):
            return False
        self.checked = n
        return True


def _bare(snap: Any) -> Any:
    """The snapshot without its shared lists (compared apart by `_Prefix`)."""
    red = snap.redelivery
    return replace(snap, history=None, redelivery=None if red is None else replace(red, steps=None))


def first_divergence(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    """The first frame index where two timelines differ (a frame only one has counts), None if identical.

    Equal to the first ``i`` where `same_frame` fails, without turning every frame into JSON: snapshots are
    compared as values, and their shared lists only where they grew since the previous frame."""
    history, steps = _Prefix(), _Prefix()
    for i in range(min(len(a), len(b))):
        fa, fb = a[i], b[i]
        sa, sb = fa.snapshot, fb.snapshot
        if fa.explanation != fb.explanation or _bare(sa) != _bare(sb) or not history.same(sa.history, sb.history):
            return i
        ra, rb = sa.redelivery, sb.redelivery
        if ra is not None and rb is not None and not steps.same(ra.steps, rb.steps):
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


@dataclass(frozen=True)
class _Planned:
    """A change and the point of the replay it is made at: the first tick once the log holds event ``after``
    (index) and the clock has reached ``time``; ``frame`` is the branch frame it came before (-1: not made yet)."""

    change: Change
    after: int
    time: int
    frame: int = -1

    def as_dict(self) -> dict[str, Any]:
        return {"after_event": self.after, "time": self.time, "frame": self.frame, "change": self.change.as_dict()}


def _planned_of(inputs: dict[str, Any]) -> list[_Planned]:
    """The changes a branch was made with (none for a recorded row)."""
    raw = inputs.get(FORK_INPUT, [])
    if not isinstance(raw, list):
        raise ValueError(f"the timeline's {FORK_INPUT} is not a list")
    planned = []
    for item in raw:
        try:
            change = Change.from_dict(item["change"])
            planned.append(_Planned(change, int(item["after_event"]), int(item["time"]), int(item["frame"])))
        except (TypeError, KeyError, ValueError) as e:
            raise ValueError(f"the timeline's {FORK_INPUT} holds a change this pulsarlab cannot make: {e}") from None
    return planned


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
    earlier = _planned_of(inputs)
    options = inputs.get("recorder") or {}
    every = options.get("every", 1)
    at = timeline[frame]
    # a branch's own changes made before frame N are part of its history up to N; later ones are not
    plan = [p for p in earlier if p.frame <= frame] + [_Planned(change, at.event_index, at.time)]
    recorders: list[Recorder] = []
    made: list[tuple[str, int, int]] = []

    def attach(lab: Any) -> None:
        recorders.append(
            Recorder(lab, every if isinstance(every, int) else set(every), history=options.get("history", True))
        )

    def before_tick(driver: Driver) -> None:
        lab = driver.lab
        while len(made) < len(plan):
            step = plan[len(made)]
            if len(lab.events) <= step.after or lab.now() < step.time:
                return
            change_frame = len(recorders[0])
            made.append((step.change.apply(driver), change_frame, lab.now()))

    driver = Driver(row, on_lab=attach)
    driver.run(before_tick)
    branch = recorders[0]
    branch.close()
    branch.inputs[ROW_INPUT] = row.as_dict()
    branch.inputs[FORK_INPUT] = [
        _Planned(p.change, p.after, p.time, m[1]).as_dict() for p, m in zip(plan, made, strict=False)
    ]
    if len(made) < len(plan):
        raise ValueError(
            f"the run ended before it passed frame {frame} on a tick (t = {at.time} ms): fork from an earlier frame"
        )
    done, change_frame, change_time = made[-1]
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
    "FIXED_SETTINGS",
    "FORK_INPUT",
    "ForkResult",
    "ROW_INPUT",
    "first_divergence",
    "fork",
    "record_row",
    "row_of",
    "same_frame",
]
