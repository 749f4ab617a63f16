"""Conformance of `pulsarlab.broker.key_shared.autosplit` with Pulsar's `HashRangeAutoSplitStickyKeyConsumerSelector`.

Replays golden README §2-§3: constructor validation, then every add / remove / remove_absent step,
comparing the error, the attached consumers, the selection of all keys (scalar and bulk), the range
map, `getConsumerKeyHashRanges()` and (v4) the assignment snapshot. Also holds the helpers the sticky
checker shares.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pulsarlab.broker.key_shared.autosplit import HashRangeAutoSplitSelector
from pulsarlab.broker.key_shared.base import NO_CONSUMER, Consumer, StickyKeyConsumerSelector
from pulsarlab.conformance import Mismatch, expect
from pulsarlab.errors import PulsarError
from pulsarlab.profiles import Profile, get_profile

VERSION_PREFIXES = {"legacy-": "3.0", "v4-": "4.0"}


def profile_for(version: str, prefixes: dict[str, str]) -> Profile:
    for prefix, name in prefixes.items():
        if version.startswith(prefix):
            return get_profile(name)
    raise Mismatch("version", f"a label starting with one of {sorted(prefixes)}", version)


def error_object(exc: PulsarError | None) -> dict | None:
    return None if exc is None else exc.as_java()


def attempt(call: Callable[[], Any]) -> tuple[Any, PulsarError | None]:
    """Run a model call the way the recorder ran Pulsar's: a result, or the error it failed with."""
    try:
        return call(), None
    except PulsarError as exc:
        return None, exc


def apply_membership_step(
    selector: StickyKeyConsumerSelector,
    step: dict,
    attached: dict[int, Consumer],
    make_consumer: Callable[[dict], Consumer],
    where: str,
) -> PulsarError | None:
    """Replay one recorded ``add`` / ``remove`` / ``remove_absent`` step; the error it failed with, or None.

    ``attached`` maps the ids of attached instances to them (a ``remove`` passes that same instance, a
    ``remove_absent`` a fresh one, as the recorder did).
    """
    spec = step["consumer"]
    op = step["op"]
    if op == "add":
        consumer = make_consumer(spec)
        _, err = attempt(lambda: selector.add_consumer(consumer))
        if err is None:
            attached[consumer.id] = consumer
        return err
    if op == "remove":
        return attempt(lambda: selector.remove_consumer(attached.pop(spec["id"])))[1]
    if op == "remove_absent":
        return attempt(lambda: selector.remove_consumer(make_consumer(spec)))[1]
    raise Mismatch(f"{where}: op", "add, remove or remove_absent", op)


def consumer_of(spec: dict) -> Consumer:
    """The consumer instance a recorded step describes (id, name, priority)."""
    return Consumer(spec["id"], spec["name"], spec.get("priority", 0))


def check_constructor_cases(line: dict, make: Callable[[int], Any]) -> None:
    for n, case in enumerate(line["cases"]):
        _, err = attempt(lambda: make(case["rangeSize"]))
        expect(f"constructor case {n} rangeSize={case['rangeSize']}: error", case["error"], error_object(err))


def check_key_hashes(selector: StickyKeyConsumerSelector, line: dict) -> np.ndarray:
    """The model's hashes of the line's keys must equal the recorded ones; returns them."""
    keys = line["keys"]
    scalar = [selector.make_sticky_key_hash(k) for k in keys]
    expect("key_hashes (scalar)", line["key_hashes"], scalar)
    bulk = selector.sticky_hashes_bulk(keys)
    expect("key_hashes (bulk)", line["key_hashes"], bulk.tolist())
    return np.asarray(scalar, dtype=np.int64)


def ids_of(selected: list[Consumer | None]) -> list[int | None]:
    return [None if c is None else c.id for c in selected]


def check_selection(where: str, selector: StickyKeyConsumerSelector, hashes: np.ndarray, expected: list) -> None:
    """select() for every hash, and select_bulk() agreeing with it."""
    scalar = ids_of([selector.select(int(h)) for h in hashes])
    expect(where, expected, scalar)
    bulk = [None if x == NO_CONSUMER else x for x in selector.select_bulk(hashes).tolist()]
    expect(f"{where} (select_bulk)", expected, bulk)


def ranges_by_id(mapping: dict[Consumer, list[tuple[int, int]]]) -> dict[int, list[list[int]]]:
    return {c.id: [list(r) for r in ranges] for c, ranges in mapping.items()}


def check_state_fields(where: str, recorded: dict, model: dict[str, Callable[[], Any]]) -> None:
    """Compare every recorded state field; a field the model does not know is a mismatch too."""
    for name, value in recorded.items():
        if name not in model:
            raise Mismatch(f"{where}: state field {name!r}", value, "(not modelled)")
        expect(f"{where}: {name}", value, model[name]())


def check(line: dict) -> None:
    profile = profile_for(line["version"], VERSION_PREFIXES)
    if line["scenario"] == "constructor-validation":
        check_constructor_cases(line, lambda n: HashRangeAutoSplitSelector(profile, n))
        return
    ctor = line["ctor"]
    selector = HashRangeAutoSplitSelector(
        profile,
        ctor["rangeSize"],
        return_impacted=ctor.get("addOrRemoveReturnsImpactedConsumersResult"),
    )
    hashes = check_key_hashes(selector, line)
    attached: dict[int, Consumer] = {}
    for step in line["steps"]:
        where = f"step {step['i']} ({step['op']} id {step['consumer']['id']})"
        err = apply_membership_step(selector, step, attached, consumer_of, where)
        expect(f"{where}: error", step["error"], error_object(err))
        expect(f"{where}: active", step["active"], [c.id for c in selector.consumers])
        check_selection(f"{where}: selected", selector, hashes, step["selected"])
        check_state_fields(
            where,
            step.get("state", {}),
            {
                "range_map": lambda: [[upper, c.id] for upper, c in selector.range_map()],
                "consumer_key_hash_ranges": lambda: ranges_by_id(selector.consumer_key_hash_ranges()),
                "assignments": lambda: [[s, e, c.id] for s, e, c in selector.assignments()],
            },
        )
