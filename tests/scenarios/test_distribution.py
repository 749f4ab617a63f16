"""Bulk key-distribution metrics (pulsarlab.scenarios.distribution) against a naive per-key loop."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.key_shared import Consumer, make_selector
from pulsarlab.hashing import murmur3_32_bulk
from pulsarlab.scenarios.distribution import (
    DistributionAccumulator,
    build_plan,
    build_selector,
    distribution_metrics,
    equal_ranges,
    key_counts,
    sequential_keys,
)

KINDS = ("auto_split", "consistent_hashing", "sticky")
VERSIONS = ("3.0", "4.0")


def mixed_keys(n: int, seed: int = 7) -> list:
    """Generated, random text (some non-ASCII) and random bytes keys."""
    rng = random.Random(seed)
    keys: list = sequential_keys(0, n // 3)
    alphabet = "abcXYZ019-_éß漢🙂"
    keys += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))) for _ in range(n // 3)]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) for _ in range(n - len(keys))]
    return keys


def naive_metrics(keys, kind: str, n: int, version: str, points: int = 100) -> dict:
    """The metrics from scratch: selectors built by hand, one ``select_key`` per key and membership."""

    def selector(n_consumers: int):
        sel = make_selector(kind, version, **({"points": points} if kind == "consistent_hashing" else {}))
        for i in range(1, n_consumers + 1):
            lo, hi = (i - 1) * 65536 // n_consumers, i * 65536 // n_consumers - 1
            sel.add_consumer(Consumer(i, f"c{i}", ranges=((lo, hi),) if kind == "sticky" else None))
        return sel

    base, joined, left = selector(n), selector(n + 1), selector(n)
    left.remove_consumer(Consumer(1, "c1"))

    def owner(sel, key):
        c = sel.select_key(key)
        return None if c is None else c.id

    per_consumer: Counter = Counter()
    moved_join = moved_leave = 0
    for key in keys:
        b = owner(base, key)
        per_consumer[b] += 1
        moved_join += owner(joined, key) != b
        moved_leave += owner(left, key) != b
    counts = [per_consumer[i] for i in range(1, n + 1)]
    return {
        "keys_per_consumer": {f"c{i}": counts[i - 1] for i in range(1, n + 1)},
        "unassigned": per_consumer[None],
        "imbalance": max(counts) / (sum(counts) / n),
        "moved_on_join": moved_join / len(keys),
        "moved_on_leave": moved_leave / len(keys),
    }


KEYS = mixed_keys(3000)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 3, 8])
def test_metrics_agree_with_naive_per_key_loop(kind, version, n):
    got = distribution_metrics(KEYS, kind, n, version)
    want = naive_metrics(KEYS, kind, n, version)
    assert got["keys_per_consumer"] == want["keys_per_consumer"]
    assert want["unassigned"] == 0
    assert got["imbalance"] == pytest.approx(want["imbalance"], rel=1e-12)
    assert got["moved_on_join"] == want["moved_on_join"]
    assert got["moved_on_leave"] == want["moved_on_leave"]
    head = (got["selector"], got["version"], got["consumers"], got["total_keys"])
    assert head == (kind, version, n, len(KEYS))


def test_consistent_hashing_points_are_passed_through():
    got = distribution_metrics(KEYS, "consistent_hashing", 4, "4.0", points=7)
    want = naive_metrics(KEYS, "consistent_hashing", 4, "4.0", points=7)
    assert got["keys_per_consumer"] == want["keys_per_consumer"]
    assert got["moved_on_join"] == want["moved_on_join"]
    default_points = distribution_metrics(KEYS, "consistent_hashing", 4, "4.0")
    assert got["keys_per_consumer"] != default_points["keys_per_consumer"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_counts_sum_to_the_number_of_keys(kind, version):
    keys = sequential_keys(0, 12345)
    m = distribution_metrics(keys, kind, 5, version)
    assert sum(m["keys_per_consumer"].values()) == m["total_keys"] == len(keys)
    assert list(m["keys_per_consumer"]) == ["c1", "c2", "c3", "c4", "c5"]
    assert 0.0 <= m["moved_on_join"] <= 1.0 and 0.0 <= m["moved_on_leave"] <= 1.0
    counts = list(m["keys_per_consumer"].values())
    assert m["imbalance"] == pytest.approx(max(counts) / np.mean(counts))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_only_c1s_keys_move_when_c1_leaves(kind, version):
    m = distribution_metrics(KEYS, kind, 4, version)
    assert m["moved_on_leave"] * m["total_keys"] == pytest.approx(m["keys_per_consumer"]["c1"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["auto_split", "consistent_hashing"])
def test_keys_moved_on_join_are_the_newcomers_keys(kind, version):
    before = distribution_metrics(KEYS, kind, 4, version)
    after = distribution_metrics(KEYS, kind, 5, version)
    assert before["moved_on_join"] * len(KEYS) == pytest.approx(after["keys_per_consumer"]["c5"])


def test_sticky_leave_leaves_c1s_keys_unassigned():
    plan = build_plan("sticky", 4)
    masked = murmur3_32_bulk(KEYS)
    counts = plan.count_hashes(masked)
    left_ids = plan.left.select_bulk(plan.sticky_hashes(masked))
    assert int(np.count_nonzero(left_ids == -1)) == counts.keys_per_consumer[0] > 0


def test_partial_counts_sum_to_the_whole():
    whole = key_counts(KEYS, "consistent_hashing", 3, "3.0")
    parts = [key_counts(KEYS[i : i + 700], "consistent_hashing", 3, "3.0") for i in range(0, len(KEYS), 700)]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    assert total.metrics() == whole.metrics()
    assert int(total.keys_per_consumer.sum()) == len(KEYS)


@pytest.mark.parametrize("version", VERSIONS)
def test_chunked_accumulator_equals_one_chunk(version):
    plans = [build_plan(k, n, version) for k in KINDS for n in (2, 5)]
    chunked, single = DistributionAccumulator(plans), DistributionAccumulator(plans)
    masked = murmur3_32_bulk(KEYS)
    for piece in np.array_split(masked, 4):
        chunked.add(piece)
    single.add(masked)
    assert [c.metrics() for c in chunked.counts()] == [c.metrics() for c in single.counts()]


@pytest.mark.parametrize("kind", KINDS)
def test_histogram_path_equals_per_key_path(kind):
    plan = build_plan(kind, 6, "4.0")
    assert plan.uses_histogram
    accumulator = DistributionAccumulator([plan])
    accumulator.add_keys(KEYS)
    assert accumulator.counts()[0].metrics() == plan.count_hashes(murmur3_32_bulk(KEYS)).metrics()


def test_adding_counts_of_different_configs_fails():
    a = key_counts(KEYS[:10], "sticky", 2)
    b = key_counts(KEYS[:10], "sticky", 3)
    with pytest.raises(ValueError, match="cannot add counts"):
        a + b


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 65536])
def test_equal_ranges_cover_the_sticky_hash_space(n):
    ranges = equal_ranges(n)
    assert len(ranges) == n
    assert ranges[0][0] == 0 and ranges[-1][1] == 65535
    assert all(prev[1] + 1 == nxt[0] for prev, nxt in zip(ranges, ranges[1:]))
    sizes = {e - s + 1 for s, e in ranges}
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("kind", KINDS)
def test_build_selector_attaches_c1_to_cn(kind):
    sel = build_selector(kind, 4, "4.0")
    assert [(c.id, c.name) for c in sel.consumers] == [(1, "c1"), (2, "c2"), (3, "c3"), (4, "c4")]
    if kind == "sticky":
        assert [c.ranges for c in sel.consumers] == [(r,) for r in equal_ranges(4)]


@given(
    keys=st.lists(st.one_of(st.text(max_size=12), st.binary(max_size=12)), min_size=1, max_size=40),
    kind=st.sampled_from(KINDS),
    version=st.sampled_from(VERSIONS),
    n=st.integers(1, 6),
)
@settings(max_examples=40, deadline=None)
def test_any_keys_agree_with_naive(keys, kind, version, n):
    got = distribution_metrics(keys, kind, n, version)
    want = naive_metrics(keys, kind, n, version)
    assert got["keys_per_consumer"] == want["keys_per_consumer"]
    assert (got["moved_on_join"], got["moved_on_leave"]) == (want["moved_on_join"], want["moved_on_leave"])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: distribution_metrics(KEYS, "exclusive", 2), ValueError, "unknown selector kind 'exclusive'"),
        (lambda: distribution_metrics(KEYS, "sticky", 0), ValueError, "n_consumers must be between 1"),
        (lambda: distribution_metrics(KEYS, "sticky", 65536), ValueError, "n_consumers must be between 1"),
        (lambda: distribution_metrics(KEYS, "sticky", True), TypeError, "n_consumers must be an int, not bo"),
        (lambda: distribution_metrics(KEYS, "sticky", "3"), TypeError, "n_consumers must be an int, not str"),
        (lambda: distribution_metrics(KEYS, "sticky", 2, "9.9"), ValueError, "unknown Pulsar version pro"),
        (lambda: distribution_metrics(KEYS, "consistent_hashing", 2, points=0), ValueError, "points must be"),
        (lambda: distribution_metrics("key-1", "sticky", 2), TypeError, "not a single key"),
        (lambda: distribution_metrics([], "sticky", 2), ValueError, "keys is empty"),
        (lambda: distribution_metrics([1, 2], "sticky", 2), TypeError, "a key must be str or bytes"),
        (lambda: build_selector("auto_split", 0), ValueError, "n_consumers must be between 1"),
        (lambda: equal_ranges(0), ValueError, "n_consumers must be between 1"),
    ],
)
def test_bad_input_fails_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()
