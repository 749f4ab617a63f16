"""Conformance of `pulsarlab.broker.key_shared.assignments` with Pulsar's `ConsumerHashAssignmentsSnapshot` recordings.

Replays golden README-dispatch §6: "merge" lines (`mergeOverlappingRanges`) and "pair" lines (`of`,
`diffRanges`, `resolveImpactedConsumers`, `UpdatedHashRanges.containsStickyKey`, `getRangesByConsumer`).
"""

from __future__ import annotations

from typing import Any

from pulsarlab.broker.key_shared.assignments import ConsumerHashAssignmentsSnapshot, merge_overlapping_ranges
from pulsarlab.broker.key_shared.base import Consumer
from pulsarlab.conformance import Mismatch, expect
from pulsarlab.errors import PulsarError
from pulsarlab.profiles import get_profile

VERSIONS = {"branch-4.0": "4.0"}


def profile_for(version_field: str):
    """The profile of the first label this model knows (the field is a comma-separated list)."""
    for label in version_field.split(","):
        if label in VERSIONS:
            return get_profile(VERSIONS[label])
    raise Mismatch("version", f"one of {sorted(VERSIONS)}", version_field)


def check(line: dict) -> None:
    profile_for(line["version"])
    if line["kind"] == "merge":
        _check_merge(line)
    elif line["kind"] == "pair":
        _check_pair(line)
    else:
        raise Mismatch("kind", "merge or pair", line["kind"])


def _check_merge(line: dict) -> None:
    expect("sorted_set", line["sorted_set"], sorted({tuple(r) for r in line["input"]}))
    expect("output", line["output"], merge_overlapping_ranges(line["input"]))


def _of(items: list, consumers: dict[int, Consumer]) -> tuple[ConsumerHashAssignmentsSnapshot | None, Any]:
    try:
        return ConsumerHashAssignmentsSnapshot.of((s, e, consumers[cid]) for s, e, cid in items), None
    except PulsarError as exc:
        return None, {"class": exc.java_class, "message": exc.message}


def _by_id(mapping: dict) -> dict[int, list]:
    return {c.id: [list(r) for r in ranges] for c, ranges in sorted(mapping.items(), key=lambda kv: kv[0].id)}


def _id(c: Consumer | None) -> int | None:
    return None if c is None else c.id


def _check_pair(line: dict) -> None:
    ids = {cid for side in ("before", "after") for _s, _e, cid in line[side]}
    consumers = {cid: Consumer(cid, f"consumer{cid}") for cid in ids}
    before, before_error = _of(line["before"], consumers)
    after, after_error = _of(line["after"], consumers)
    expect("before_error", line["before_error"], before_error)
    expect("after_error", line["after_error"], after_error)
    if before is None or after is None:
        return

    diff = before.diff_ranges(after)
    expect("diff", line["diff"], [[s, e, _id(bc), _id(ac)] for (s, e), (bc, ac) in diff.items()])
    expect("resolve_error", line["resolve_error"], None)
    impacted = before.resolve_impacted_consumers(after)
    expect("removed", line["removed"], _by_id(impacted.removed))
    expect("added", line["added"], _by_id(impacted.added))
    expect("is_empty", line["is_empty"], impacted.is_empty)
    probes = line["probe_hashes"]
    contains = {
        c.id: [ranges.contains_sticky_key(h) for h in probes]
        for c, ranges in sorted(impacted.removed.items(), key=lambda kv: kv[0].id)
    }
    expect("removed_contains_sticky_key", line["removed_contains_sticky_key"], contains)
    expect("ranges_by_consumer_before", line["ranges_by_consumer_before"], _by_id(before.ranges_by_consumer()))
    expect("ranges_by_consumer_after", line["ranges_by_consumer_after"], _by_id(after.ranges_by_consumer()))
