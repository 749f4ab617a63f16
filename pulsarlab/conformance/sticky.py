"""Conformance of `pulsarlab.broker.key_shared.sticky_ranges` with Pulsar's `HashRangeExclusiveStickyKeyConsumerSelector`.

Replays golden README §2 and §5 (legacy boundary-key map and the 3.x pair map): constructor
validation, then every step, comparing the error, the attached consumers, the selection of all keys
and all probe hashes (scalar and bulk), the range map and `getConsumerKeyHashRanges()`.
"""

from __future__ import annotations

import numpy as np

from pulsarlab.broker.key_shared.base import Consumer
from pulsarlab.broker.key_shared.sticky_ranges import HashRangeExclusiveSelector
from pulsarlab.conformance import expect
from pulsarlab.conformance.autosplit import (
    apply_membership_step,
    check_constructor_cases,
    check_key_hashes,
    check_selection,
    check_state_fields,
    error_object,
    profile_for,
    ranges_by_id,
)
from pulsarlab.profiles import StickyRangesVariant

VERSION_PREFIXES = {"legacy-": "2.10", "v3-pair-": "3.0"}


def _consumer(spec: dict) -> Consumer:
    ranges = spec.get("ranges")
    return Consumer(spec["id"], spec["name"], ranges=None if ranges is None else tuple(tuple(r) for r in ranges))


def _range_map(selector: HashRangeExclusiveSelector) -> list:
    if selector.variant is StickyRangesVariant.LEGACY:
        return [[key, c.id] for key, c in selector.range_map()]
    return [[start, list(rng), c.id] for start, rng, c in selector.range_map()]


def check(line: dict) -> None:
    profile = profile_for(line["version"], VERSION_PREFIXES)
    if line["scenario"] == "constructor-validation":
        check_constructor_cases(line, lambda n: HashRangeExclusiveSelector(profile, n))
        return
    selector = HashRangeExclusiveSelector(profile, line["ctor"]["rangeSize"])
    hashes = check_key_hashes(selector, line)
    probes = np.asarray(line.get("probe_hashes", []), dtype=np.int64)
    attached: dict[int, Consumer] = {}
    for step in line["steps"]:
        spec = step["consumer"]
        where = f"step {step['i']} ({step['op']} id {spec['id']})"
        err = apply_membership_step(selector, step, attached, _consumer, where)
        expect(f"{where}: error", step["error"], error_object(err))
        expect(f"{where}: active", step["active"], [c.id for c in selector.consumers])
        check_selection(f"{where}: selected", selector, hashes, step["selected"])
        if "probe_selected" in step:
            check_selection(f"{where}: probe_selected", selector, probes, step["probe_selected"])
        check_state_fields(
            where,
            step.get("state", {}),
            {
                "range_map": lambda: _range_map(selector),
                "consumer_key_hash_ranges": lambda: ranges_by_id(selector.consumer_key_hash_ranges()),
            },
        )
