"""Conformance of the in-memory delayed-delivery tracker with Pulsar's recordings (golden README §7).

Replays `InMemoryDelayedDeliveryTracker` lines on `pulsarlab.broker.delayed.in_memory` and compares
every recorded field after every step, the ``buckets`` ledger order (fastutil's) included. The
recordings name the 4.1 classes by source id, so they replay on profile "4.1". Their manual clock
jumps to the end of an ``advance`` before the due timeouts run, so the tracker reads a separate
clock that does the same (the scheduler still fires the timeouts in deadline order).
"""

from __future__ import annotations

from typing import Any

from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker, TimeBitmapDelayedDeliveryTracker
from pulsarlab.clock import Scheduler
from pulsarlab.conformance import compare_fields, version_labels

_BRANCH_PROFILES = {"branch-3.0": "3.0", "branch-4.0": "4.0", "branch-4.1": "4.1"}
_INPUT_FIELDS = {"i", "op", "args"}


def profiles_of(line: dict) -> list[str]:
    """Profiles for the line's version labels; "InMemory-id…+Abstract-id…" names the 4.1 sources."""
    profiles = []
    for label in version_labels(line):
        if label.startswith("InMemory-"):
            profiles.append("4.1")
        elif label in _BRANCH_PROFILES:
            profiles.append(_BRANCH_PROFILES[label])
        else:
            raise ValueError(f"unknown version label {label!r} for InMemoryDelayedDeliveryTracker")
    return profiles


def check_in_memory(line: dict) -> None:
    for profile in profiles_of(line):
        _replay(line, profile)


def _replay(line: dict, profile: str) -> None:
    ctor = line["ctor"]
    scheduler = Scheduler(line["start_millis"])
    manual_clock = [line["start_millis"]]
    tracker = InMemoryDelayedDeliveryTracker(
        scheduler,
        lambda: None,
        clock=lambda: manual_clock[0],
        profile=profile,
        tick_time_millis=ctor["tickTimeMillis"],
        is_delayed_delivery_deliver_at_time_strict=ctor["isDelayedDeliveryDeliverAtTimeStrict"],
        fixed_delay_detection_lookahead=ctor["fixedDelayDetectionLookahead"],
    )
    where = f"profile {profile}"
    for step in line["steps"]:
        op, args = step["op"], step.get("args", [])
        here = f"{where} step {step.get('i')} {op}{args}"
        observed: dict[str, Any] = {}
        if op == "addMessage":
            observed["result"] = tracker.add_message(*args)
        elif op == "advance":
            manual_clock[0] += args[0]
            observed["result"] = {"timer_fired": scheduler.advance(*args)}
        elif op == "getScheduledMessages":
            observed["result"] = [list(p) for p in tracker.get_scheduled_messages(*args)]
        elif op == "hasMessageAvailable":
            observed["result"] = tracker.has_message_available()
        elif op == "shouldPauseAllDeliveries":
            observed["result"] = tracker.should_pause_all_deliveries()
        elif op == "clear":
            observed["result"] = tracker.clear()
        elif op == "resetTickTime":
            observed["result"] = tracker.reset_tick_time(*args)
        else:
            raise ValueError(f"{here}: unknown op {op!r}")
        timer = tracker.timer
        observed["now"] = scheduler.now()
        observed["number_of_delayed"] = tracker.number_of_delayed_messages()
        observed["timer"] = None if timer is None else {"deadline": timer.deadline, "delay": timer.delay}
        observed["timeouts_created"] = tracker.timeouts_created
        observed["read_more_entries_calls"] = tracker.read_more_entries_calls
        if isinstance(tracker, TimeBitmapDelayedDeliveryTracker):
            observed["buckets"] = [
                [ts, [[ledger, entries] for ledger, entries in ledgers]] for ts, ledgers in tracker.buckets()
            ]
        compare_fields(here, step, observed, _INPUT_FIELDS)
