"""HashRangeAutoSplitStickyKeyConsumerSelector model (reference §2.1, golden README §3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from golden_files import golden_path
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.key_shared import NO_CONSUMER, Consumer, ImpactedConsumers, make_selector
from pulsarlab.broker.key_shared.autosplit import HashRangeAutoSplitSelector
from pulsarlab.conformance import run_file
from pulsarlab.errors import ConsumerAssignException, IllegalArgumentException
from pulsarlab.hashing import murmur3_32


def _ranges_by_name(selector) -> dict[str, list[tuple[int, int]]]:
    return {c.name: ranges for c, ranges in selector.consumer_key_hash_ranges().items()}


def _with_consumers(profile: str, names: list[str], range_size: int = 65536) -> tuple[HashRangeAutoSplitSelector, dict]:
    selector = HashRangeAutoSplitSelector(profile, range_size)
    consumers = {}
    for i, name in enumerate(names, 1):
        consumers[name] = Consumer(i, name)
        selector.add_consumer(consumers[name])
    return selector, consumers


@pytest.mark.parametrize("profile", ["3.0", "4.0"])
def test_get_consumer_key_hash_ranges_size_64(profile):
    # HashRangeAutoSplitStickyKeyConsumerSelectorTest.testGetConsumerKeyHashRanges (rangeSize 2<<5)
    selector, _ = _with_consumers(profile, ["consumer1", "consumer2", "consumer3", "consumer4"], 64)
    assert _ranges_by_name(selector) == {
        "consumer3": [(0, 16)],
        "consumer2": [(17, 32)],
        "consumer4": [(33, 48)],
        "consumer1": [(49, 64)],
    }


@pytest.mark.parametrize("profile", ["3.0", "4.0"])
def test_default_size_table_and_removals(profile):
    selector, c = _with_consumers(profile, ["c1", "c2", "c3", "c4"])
    assert _ranges_by_name(selector) == {
        "c3": [(0, 16384)],
        "c2": [(16385, 32768)],
        "c4": [(32769, 49152)],
        "c1": [(49153, 65536)],
    }
    selector.remove_consumer(c["c2"])  # its range merges into the consumer above
    assert _ranges_by_name(selector)["c4"] == [(16385, 49152)]
    selector.remove_consumer(c["c1"])  # the top owner left: the one below grows up to rangeSize
    assert _ranges_by_name(selector) == {"c3": [(0, 16384)], "c4": [(16385, 65536)]}
    assert [x.name for x in selector.consumers] == ["c3", "c4"]


def test_same_name_consumers_get_distinct_ranges():
    selector = HashRangeAutoSplitSelector("3.0", 64)
    consumers = [Consumer(i, "My-consumer") for i in range(3)]
    for consumer in consumers:
        selector.add_consumer(consumer)
    ranges = [selector.consumer_key_hash_ranges()[c] for c in consumers]
    assert all(len(r) == 1 for r in ranges) and len({tuple(r) for r in ranges}) == 3


@pytest.mark.parametrize(
    "profile, via, wrapped_in",
    [("3.0", "throw", None), ("4.0", "future", "java.util.concurrent.CompletionException")],
)
def test_capacity_error(profile, via, wrapped_in):
    selector = HashRangeAutoSplitSelector(profile, 2)
    selector.add_consumer(Consumer(1, "a"))
    selector.add_consumer(Consumer(2, "b"))
    with pytest.raises(ConsumerAssignException) as err:
        selector.add_consumer(Consumer(3, "c"))
    assert err.value.message == "No more range can assigned to new consumer, assigned consumers 2"
    assert err.value.via == via and err.value.wrapped_in == wrapped_in
    assert [c.id for c in selector.consumers] == [1, 2]


def test_range_size_bounds_consumer_count():
    selector = HashRangeAutoSplitSelector("3.0", 1024)
    for i in range(1024):
        selector.add_consumer(Consumer(i, f"c{i}"))
    with pytest.raises(ConsumerAssignException, match="assigned consumers 1024$"):
        selector.add_consumer(Consumer(5000, "one-too-many"))


@pytest.mark.parametrize(
    "size, message",
    [
        (-4, "range size must greater than 2"),
        (0, "range size must greater than 2"),
        (1, "range size must greater than 2"),
        (3, "range size must be nth power with 2"),
        (12, "range size must be nth power with 2"),
        (65535, "range size must be nth power with 2"),
    ],
)
def test_constructor_validation(size, message):
    with pytest.raises(IllegalArgumentException) as err:
        HashRangeAutoSplitSelector("4.0", size)
    assert err.value.message == message


@pytest.mark.parametrize("size", [2, 4, 1024, 65536, 1 << 30])
def test_constructor_accepts_powers_of_two(size):
    assert HashRangeAutoSplitSelector("3.0", size).key_hash_range() == (0, size - 1)


@pytest.mark.parametrize("size", [64.0, "64", True, None])
def test_constructor_rejects_non_int_sizes(size):
    with pytest.raises(TypeError, match="range_size must be an int"):
        HashRangeAutoSplitSelector("3.0", size)


def test_constructor_rejects_sizes_beyond_java_int():
    with pytest.raises(ValueError, match="Java int"):
        HashRangeAutoSplitSelector("3.0", 1 << 31)


def test_bad_hashes_and_keys():
    selector, _ = _with_consumers("3.0", ["c1"])
    for bad in (1.5, "7", None, True):
        with pytest.raises(TypeError, match="sticky key hash must be an int"):
            selector.select(bad)
    for bad in (-1, 1 << 31):
        with pytest.raises(ValueError, match=r"must be in \[0, 2147483647\]"):
            selector.select(bad)
    with pytest.raises(TypeError, match="a key must be str or bytes"):
        selector.select_key(123)
    with pytest.raises(TypeError, match="integer array"):
        selector.select_bulk(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"must be in \[0, 2147483647\]"):
        selector.select_bulk(np.array([-3, 4]))


def test_4x_hash_above_key_range_is_rejected():
    selector, _ = _with_consumers("4.0", ["c1"], range_size=16)
    assert selector.select(16).name == "c1"  # the top upper bound is 16 itself, as in Pulsar's map
    with pytest.raises(ValueError, match=r"outside this selector's key hash range \[0, 15\]"):
        selector.select(17)
    with pytest.raises(ValueError, match="outside"):
        selector.select_bulk(np.array([3, 17]))


def test_3x_selects_by_hash_modulo_range_size_and_4x_by_reduced_hash():
    old, _ = _with_consumers("3.0", ["a", "b", "c"])
    for key in ("key1", "key2", "k1", "NONE_KEY", "Order-3459134"):
        masked = murmur3_32(key)
        assert old.make_sticky_key_hash(key) == masked
        assert old.select_key(key) == old.select(masked % 65536)
    new, _ = _with_consumers("4.0", ["a", "b", "c"])
    assert new.make_sticky_key_hash("Order-3459134") == 964695987 % 65536  # stack-notes: slot 6067
    assert new.select_key("Order-3459134") == new.select(6067)


def test_empty_selector_selects_nothing():
    selector = HashRangeAutoSplitSelector("4.0")
    assert selector.select(5) is None
    assert selector.select_bulk(np.array([1, 2])).tolist() == [NO_CONSUMER, NO_CONSUMER]
    assert selector.assignments() == [] and selector.consumer_key_hash_ranges() == {}


def test_impacted_consumers_returned_in_4x_only():
    c1, c2 = Consumer(1, "c1"), Consumer(2, "c2")
    new = HashRangeAutoSplitSelector("4.0")
    first = new.add_consumer(c1)
    assert isinstance(first, ImpactedConsumers) and first.removed == {} and first.added == {c1: [(0, 65536)]}
    second = new.add_consumer(c2)
    assert second.removed == {c1: [(0, 32768)]} and second.added == {c2: [(0, 32768)]}
    gone = new.remove_consumer(c2)
    assert gone.removed == {c2: [(0, 32768)]} and gone.added == {c1: [(0, 32768)]}
    assert new.remove_consumer(Consumer(9, "never-added")).removed == {}

    old = HashRangeAutoSplitSelector("3.0")
    assert old.add_consumer(c1) is None and old.remove_consumer(c1) is None
    forced = HashRangeAutoSplitSelector("3.0", return_impacted=True)
    assert forced.add_consumer(c1).added == {c1: [(0, 65536)]}


def test_remove_unknown_consumer_is_a_no_op():
    selector, _ = _with_consumers("3.0", ["c1", "c2"])
    before = selector.snapshot()
    selector.remove_consumer(Consumer(99, "c1"))
    assert selector.snapshot() == before


def test_snapshot_shape_and_make_selector():
    selector = make_selector("auto_split", "4.0", range_size=64)
    assert isinstance(selector, HashRangeAutoSplitSelector) and selector.kind == "auto_split"
    selector.add_consumer(Consumer(7, "x"))
    selector.add_consumer(Consumer(8, "y"))
    snap = selector.snapshot()
    assert snap == {"range_size": 64, "range_map": ((32, 8), (64, 7)), "consumers": ((7, "x"), (8, "y"))}
    json.dumps(snap)


# -- properties ------------------------------------------------------------------------------------


class NaiveAutoSplit:
    """Pulsar's algorithm word for word (linear scan for the biggest range), as an oracle."""

    def __init__(self, size):
        self.size, self.map = size, {}

    def add(self, cid):
        if not self.map:
            self.map[self.size] = cid
            return True
        keys = sorted(self.map)
        best, best_gap = None, 0
        for i, k in enumerate(keys):
            gap = k - (keys[i - 1] if i else 0)
            if gap > best_gap:
                best, best_gap = k, gap
        if best_gap <= 1:
            return False
        self.map[best - (best_gap >> 1)] = cid
        return True

    def remove(self, cid):
        key = next((k for k, v in self.map.items() if v == cid), None)
        if key is None:
            return
        if key == self.size and len(self.map) > 1:
            below = max(k for k in self.map if k < key)
            self.map[key] = self.map.pop(below)
        else:
            del self.map[key]


ops_strategy = st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["3.0", "4.0"]), st.sampled_from([2, 8, 64, 256]), ops_strategy)
def test_matches_pulsar_algorithm_and_tiles_the_range(profile, size, ops):
    selector, naive = HashRangeAutoSplitSelector(profile, size), NaiveAutoSplit(size)
    attached: list[Consumer] = []
    next_id = 0
    for is_add, pick in ops:
        if is_add or not attached:
            next_id += 1
            consumer = Consumer(next_id, f"c{next_id}")
            try:
                selector.add_consumer(consumer)
                attached.append(consumer)
                assert naive.add(consumer.id)
            except ConsumerAssignException:
                assert not naive.add(consumer.id)
        else:
            consumer = attached.pop(pick % len(attached))
            selector.remove_consumer(consumer)
            naive.remove(consumer.id)
        assert [(k, c.id) for k, c in selector.range_map()] == sorted(naive.map.items())

        # the ranges tile [0, range_size] with no gap and no overlap
        tiles = selector.assignments()
        if attached:
            assert tiles[0][0] == 0 and tiles[-1][1] == size
            assert all(a[1] + 1 == b[0] for a, b in zip(tiles, tiles[1:]))
            assert {c for _s, _e, c in tiles} == set(attached) == set(selector.consumers)

        # every slot selects exactly the live consumer whose range holds it; bulk agrees with scalar
        slots = np.arange(0 if profile == "3.0" else 1, size, dtype=np.int64)
        hashes = slots + size * 12345 if profile == "3.0" else slots
        bulk = selector.select_bulk(hashes)
        for h, slot, got in zip(hashes.tolist(), slots.tolist(), bulk.tolist()):
            chosen = selector.select(h)
            if not attached:
                assert chosen is None and got == NO_CONSUMER
                continue
            owner = next(c for s, e, c in tiles if s <= slot <= e)
            assert chosen == owner and got == owner.id


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=8), min_size=1, max_size=30), st.integers(1, 6))
def test_key_paths_agree(keys, n):
    for profile in ("3.0", "4.0"):
        selector, _ = _with_consumers(profile, [f"c{i}" for i in range(n)])
        bulk = selector.select_keys_bulk(keys).tolist()
        assert bulk == [selector.select_key(k).id for k in keys]


def test_golden_conformance():
    for name in ("autosplit_legacy.jsonl", "autosplit_v4.jsonl"):
        result = run_file(golden_path(name))
        assert result.total > 0 and result.matched == result.total, result.first_mismatch
