"""Conformance of the consistent-hashing selector with Pulsar's recordings (golden README §2, §4).

Replays each scenario step by step on `ConsistentHashingSelector` and compares the error, the attached
consumers, the selection of all 300 keys (scalar and bulk), the ring and the reported ranges.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pulsarlab.broker.key_shared.base import NO_CONSUMER, Consumer
from pulsarlab.broker.key_shared.consistent_hashing import ConsistentHashingSelector
from pulsarlab.conformance import expect
from pulsarlab.conformance.autosplit import apply_membership_step, consumer_of
from pulsarlab.errors import PulsarError
from pulsarlab.profiles import get_profile

# version label prefix -> the profile whose generation recorded it
VERSION_PROFILES = {
    "legacy-": "3.0.0",
    "v3-counters-": "3.0.3",
    "v3-identity-": "3.0",
    "v4-": "4.0",
}


def profile_for(version: str) -> str:
    for prefix, profile in VERSION_PROFILES.items():
        if version.startswith(prefix):
            return profile
    raise ValueError(f"unknown consistent-hashing version label {version!r}; expected one of {list(VERSION_PROFILES)}")


def build_selector(line: dict) -> ConsistentHashingSelector:
    profile = get_profile(profile_for(line["version"]))
    ctor = line["ctor"]
    kwargs: dict[str, Any] = {"points": ctor["numberOfPoints"]}
    if profile.is_4x:
        kwargs["range_max"] = ctor.get("rangeMaxValue")
        kwargs["return_impacted"] = ctor.get("addOrRemoveReturnsImpactedConsumersResult", False)
    return ConsistentHashingSelector(profile, **kwargs)


def ring_as_recorded(selector: ConsistentHashingSelector) -> list:
    """The selector's ring in the recording's per-version format, from its public snapshot."""
    snap = selector.snapshot()
    variant = snap["variant"]
    if variant == "legacy":
        return [[p, [sel, *others]] for p, sel, others in snap["ring"]]
    if variant == "v3_counters":
        counters = dict(snap["selection_counters"])
        return [[p, sel, [[cid, counters[cid]] for cid in (sel, *others)]] for p, sel, others in snap["ring"]]
    if variant == "v3_identity":
        return [[p, sel] for p, sel, _ in snap["ring"]]
    return [[p, sel, list(others)] for p, sel, others in snap["ring"]]


def _error_as_recorded(error: PulsarError | None, expected: dict | None) -> dict | None:
    if error is None:
        return None
    got = error.as_java()
    if expected is not None and got["class"] == "java.lang.NullPointerException":
        got["message"] = expected.get("message")  # JDK helpful-NPE text; the README says not to rely on it
    return got


def check(line: dict) -> None:
    where = f"scenario {line.get('scenario')!r}"
    selector = build_selector(line)
    keys = line["keys"]
    hashes = [selector.make_sticky_key_hash(k) for k in keys]
    expect(f"{where}: key_hashes", line["key_hashes"], hashes)
    expect(f"{where}: bulk key hashes", hashes, selector.sticky_hashes_bulk(keys).tolist())
    hash_array = np.asarray(hashes, dtype=np.int64)

    attached: dict[int, Consumer] = {}
    for step in line["steps"]:
        at = f"{where} step {step['i']} ({step['op']} {step['consumer']})"
        error = apply_membership_step(selector, step, attached, consumer_of, at)
        expect(f"{at}: error", step["error"], _error_as_recorded(error, step["error"]))
        expect(f"{at}: active", step["active"], [c.id for c in selector.consumers])

        scalar = [None if c is None else c.id for c in (selector.select(h) for h in hashes)]
        expect(f"{at}: selected", step["selected"], scalar)
        bulk = [None if c == NO_CONSUMER else c for c in selector.select_bulk(hash_array).tolist()]
        expect(f"{at}: select_bulk vs select", scalar, bulk)

        state = step["state"]
        expect(f"{at}: ring_size", state["ring_size"], len(selector.snapshot()["ring"]))
        if "ring" in state:
            expect(f"{at}: ring", state["ring"], ring_as_recorded(selector))
        if "consumer_key_hash_ranges" in state:
            ranges = {c.id: [list(r) for r in rs] for c, rs in selector.consumer_key_hash_ranges().items()}
            expect(f"{at}: consumer_key_hash_ranges", state["consumer_key_hash_ranges"], ranges)
        if "assignments" in state:
            expect(f"{at}: assignments", state["assignments"], [[s, e, c.id] for s, e, c in selector.assignments()])
