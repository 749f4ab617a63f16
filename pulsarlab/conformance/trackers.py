"""Conformance of the client redelivery trackers with Pulsar's recordings (golden README-dispatch §4, §5).

Replays `UnAckedMessageTracker` and `NegativeAcksTracker` lines on `pulsarlab.client` under every
version label of the line and compares every recorded field after every step.
"""

from __future__ import annotations

from typing import Any

from pulsarlab.client.negative_acks import ClientClock, MultiplierRedeliveryBackoff, NegativeAcksTracker
from pulsarlab.client.unacked_tracker import UnAckedMessageTracker
from pulsarlab.clock import Scheduler
from pulsarlab.conformance import compare_fields, expect, version_labels
from pulsarlab.ids import MessageId

# version label (golden README-dispatch "Common conventions") -> model profile
BRANCH_PROFILES = {"branch-3.0": "3.0", "branch-4.0": "4.0", "branch-4.1": "4.1"}
_INPUT_FIELDS = {"i", "op", "id", "ms", "redelivery_count"}
_NS_PER_MS = 1_000_000


def profiles_of(line: dict) -> list[str]:
    """The model profiles a line's comma-separated ``version`` names."""
    labels = version_labels(line)
    unknown = [label for label in labels if label not in BRANCH_PROFILES]
    if unknown:
        raise ValueError(f"unknown version label(s) {unknown}; known: {', '.join(BRANCH_PROFILES)}")
    return [BRANCH_PROFILES[label] for label in labels]


def compare_step(where: str, step: dict, observed: dict[str, Any]) -> None:
    """Every recorded output field of a step must equal the model's."""
    compare_fields(where, step, observed, _INPUT_FIELDS)


def check_unacked(line: dict) -> None:
    for profile in profiles_of(line):
        _replay_unacked(line, profile)


def _replay_unacked(line: dict, profile: str) -> None:
    conf = line["conf"]
    scheduler = Scheduler(0)
    ticks: list[dict] = []
    tracker = UnAckedMessageTracker(
        scheduler,
        lambda ids: None,
        conf["ackTimeoutMillis"],
        conf["tickDurationMillis"],
        tick_listener=lambda now, ids: ticks.append({"at_ms": now, "redelivered": [m.as_list() for m in ids]}),
    )
    where = f"profile {profile}"
    expect(f"{where}: tick_duration_in_ms", line["tick_duration_in_ms"], tracker.tick_duration_in_ms)
    for step in line["steps"]:
        op = step["op"]
        here = f"{where} step {step.get('i')} {op}"
        observed: dict[str, Any] = {}
        if op == "add":
            observed["result"] = tracker.add(MessageId.of(step["id"]))
        elif op == "remove":
            observed["result"] = tracker.remove(MessageId.of(step["id"]))
        elif op == "removeMessagesTill":
            observed["result"] = tracker.remove_messages_till(MessageId.of(step["id"]))
        elif op == "clear":
            tracker.clear()
        elif op == "advance":
            ticks.clear()
            scheduler.advance(step["ms"])
            observed["ticks"] = list(ticks)
        else:
            raise ValueError(f"{here}: unknown op {op!r}")
        observed["now_ms"] = scheduler.now()
        observed["size"] = tracker.size()
        observed["partitions"] = [[m.as_list() for m in p] for p in tracker.partitions]
        observed["next_tick_ms"] = tracker.next_tick_ms
        compare_step(here, step, observed)


def check_negative_acks(line: dict) -> None:
    for profile in profiles_of(line):
        _replay_negative_acks(line, profile)


def backoff_from(conf: dict | None) -> MultiplierRedeliveryBackoff | None:
    """The recorded ``negativeAckRedeliveryBackoff`` object, or None."""
    if conf is None:
        return None
    if conf.get("class") != "MultiplierRedeliveryBackoff":
        raise ValueError(f"unsupported redelivery backoff {conf.get('class')!r}")
    return MultiplierRedeliveryBackoff(conf["minDelayMs"], conf["maxDelayMs"], float(conf["multiplier"]))


def _replay_negative_acks(line: dict, profile: str) -> None:
    conf = line["conf"]
    scheduler = Scheduler(0)  # elapsed nanoseconds
    clock = ClientClock(scheduler, nanos_per_unit=1, epoch_ms=line["start_epoch_ms"])
    runs: list[dict] = []

    def on_run(now_ns: int, ids: list[MessageId]) -> None:
        runs.append(
            {"at_ns": now_ns, "at_epoch_ms": clock.current_time_millis(), "redelivered": [m.as_list() for m in ids]}
        )

    tracker = NegativeAcksTracker(
        scheduler,
        lambda ids: None,
        profile=profile,
        negative_ack_redelivery_delay_micros=conf["negativeAckRedeliveryDelayMicros"],
        negative_ack_precision_bit_cnt=conf["negativeAckPrecisionBitCnt"],
        negative_ack_redelivery_backoff=backoff_from(conf.get("negativeAckRedeliveryBackoff")),
        clock=clock,
        timer_listener=on_run,
    )
    where = f"profile {profile}"
    for step in line["steps"]:
        op = step["op"]
        here = f"{where} step {step.get('i')} {op}"
        observed: dict[str, Any] = {}
        if op == "nack":
            tracker.add(MessageId.of(step["id"]), step.get("redelivery_count", 0))
        elif op == "advance":
            runs.clear()
            scheduler.advance(step["ms"] * _NS_PER_MS)
            observed["timer_runs"] = list(runs)
        else:
            raise ValueError(f"{here}: unknown op {op!r}")
        observed["now_ns"] = scheduler.now()
        observed["now_epoch_ms"] = clock.current_time_millis()
        observed["nacked_count"] = tracker.nacked_messages_count()
        observed["next_timer_ns"] = tracker.next_timer_ns
        compare_step(here, step, observed)
