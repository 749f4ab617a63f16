"""HashRangeExclusiveStickyKeyConsumerSelector model, both variants (reference §2.3, golden README §5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from golden_files import golden_path
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.key_shared import NO_CONSUMER, Consumer, make_selector
from pulsarlab.broker.key_shared.sticky_ranges import HashRangeExclusiveSelector
from pulsarlab.conformance import run_file
from pulsarlab.errors import ConsumerAssignException, IllegalArgumentException
from pulsarlab.hashing import murmur3_32, reduce_hash
from pulsarlab.protocol.subscription import HashRange, validate_sticky_policy_ranges

LEGACY, PAIR_3X, PAIR_4X = "2.10", "3.0", "4.0"
ALL = [LEGACY, PAIR_3X, PAIR_4X]


def sticky(cid: int, *ranges: tuple[int, int], name: str | None = None) -> Consumer:
    return Consumer(cid, name or f"c{cid}", ranges=tuple(ranges))


@pytest.mark.parametrize("profile", ALL)
def test_consumer_select(profile):
    # HashRangeExclusiveStickyKeyConsumerSelectorTest.testConsumerSelect (rangeSize 10)
    selector = HashRangeExclusiveSelector(profile, 10)
    c1, c2 = sticky(1, (0, 2)), sticky(2, (3, 9))
    selector.add_consumer(c1)
    assert all(selector.select(i) == c1 for i in range(3))
    assert selector.select(4) is None
    selector.add_consumer(c2)
    assert all(selector.select(i) == c2 for i in range(3, 10))
    assert all(selector.select(i) == c1 for i in range(3))
    selector.remove_consumer(c1)
    assert selector.select(1) is None
    selector.remove_consumer(c2)
    assert selector.select(5) is None and selector.consumers == []


def test_legacy_range_map_holds_boundaries():
    # the same unit test counts the legacy map's entries: 2, then 4, then 2 after a removal
    selector = HashRangeExclusiveSelector(LEGACY, 10)
    c1, c2 = sticky(1, (0, 2)), sticky(2, (3, 9))
    selector.add_consumer(c1)
    assert len(selector.range_map()) == 2
    selector.add_consumer(c2)
    assert len(selector.range_map()) == 4
    selector.remove_consumer(c1)
    assert [(k, c.id) for k, c in selector.range_map()] == [(3, 2), (9, 2)]


@pytest.mark.parametrize("profile", [PAIR_3X, PAIR_4X])
def test_consumer_select_with_multiple_ranges(profile):
    selector = HashRangeExclusiveSelector(profile, 20)
    c1 = sticky(1, (2, 6), (10, 15))
    selector.add_consumer(c1)
    for h in (1, 9, 18):
        assert selector.select(h) is None
    assert all(selector.select(h) == c1 for h in [*range(2, 7), *range(10, 16)])


def test_legacy_attributes_gaps_between_own_ranges():
    selector = HashRangeExclusiveSelector(LEGACY, 20)
    c1 = sticky(1, (2, 6), (10, 15))
    selector.add_consumer(c1)
    assert [h for h in range(20) if selector.select(h) == c1] == list(range(2, 16))  # the gap 7..9 too
    c2 = sticky(2, (7, 9))  # inside c1's gap and touching none of its declared ranges: accepted
    selector.add_consumer(c2)
    assert [h for h in range(20) if selector.select(h) == c2] == [7, 8, 9]
    assert [h for h in range(20) if selector.select(h) == c1] == [2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15]


def test_legacy_gap_check_uses_declared_ranges():
    selector = HashRangeExclusiveSelector(LEGACY, 20)
    selector.add_consumer(sticky(1, (2, 10), (4, 6)))  # boundaries 2, 4, 6, 10
    with pytest.raises(ConsumerAssignException) as err:
        selector.add_consumer(sticky(2, (7, 8)))  # no boundary inside, but it intersects c1's [2, 10]
    assert err.value.message == "Range conflict with consumer Consumer{consumerId=1, consumerName=c1}"


@pytest.mark.parametrize("profile", ALL)
@pytest.mark.parametrize("candidate", [(4, 6), (1, 3), (2, 2), (5, 5), (1, 5), (2, 6), (2, 5), (1, 6), (8, 6)])
def test_single_range_conflict(profile, candidate):
    # testSingleRangeConflict: every candidate is rejected against [2,5]; the map is unchanged
    selector = HashRangeExclusiveSelector(profile, 10)
    selector.add_consumer(sticky(1, (2, 5)))
    before = selector.range_map()
    with pytest.raises(ConsumerAssignException):
        selector.add_consumer(sticky(2, candidate))
    assert selector.range_map() == before and [c.id for c in selector.consumers] == [1]


@pytest.mark.parametrize("profile", ALL)
@pytest.mark.parametrize("candidate", [((2, 2), (3, 3), (4, 5)), ((0, 0), (1, 2))])
def test_multiple_range_conflict(profile, candidate):
    selector = HashRangeExclusiveSelector(profile, 10)
    selector.add_consumer(sticky(1, (2, 5)))
    with pytest.raises(ConsumerAssignException, match="Range conflict with consumer"):
        selector.add_consumer(sticky(2, *candidate))


@pytest.mark.parametrize("profile", ALL)
def test_boundary_ranges_conflict(profile):
    selector = HashRangeExclusiveSelector(profile, 65536)
    selector.add_consumer(sticky(1, (2, 5)))
    with pytest.raises(ConsumerAssignException) as err:
        selector.add_consumer(sticky(2, (5, 10)))
    assert err.value.message == "Range conflict with consumer Consumer{consumerId=1, consumerName=c1}"


def test_pair_error_texts_and_order():
    selector = HashRangeExclusiveSelector(PAIR_3X, 10)
    cases = [
        (Consumer(1, "c1"), "Must specify key shared meta for consumer."),
        (sticky(2), "Ranges for KeyShared policy must not be empty."),
        (sticky(3, (4, 6), (1, 3), (2, 2), (5, 5)), "Consumer's own ranges conflict: [1,3] overlaps with [2,2]"),
        (sticky(4, (9, 9), (8, 6)), "Fixed hash range start > end for range: [8,6]"),
    ]
    for consumer, message in cases:
        with pytest.raises(ConsumerAssignException) as err:
            selector.add_consumer(consumer)
        assert err.value.message == message
        assert err.value.via == "future" and err.value.wrapped_in == "java.util.concurrent.CompletionException"
    assert selector.consumers == []


def test_legacy_error_texts_thrown_and_self_overlap_accepted():
    selector = HashRangeExclusiveSelector(LEGACY, 100)
    for consumer, message in [
        (Consumer(1, "c1"), "Must specify key shared meta for consumer."),
        (sticky(2), "Ranges for KeyShared policy must not be empty."),
        (sticky(3, (9, 9), (8, 6)), "Fixed hash range start > end"),
    ]:
        with pytest.raises(ConsumerAssignException) as err:
            selector.add_consumer(consumer)
        assert err.value.message == message and err.value.via == "throw" and err.value.wrapped_in is None
    c4 = sticky(4, (1, 3), (2, 2), (5, 5), (4, 6))  # the legacy selector never checks own ranges
    selector.add_consumer(c4)
    assert [k for k, _ in selector.range_map()] == [1, 2, 3, 4, 5, 6]
    # boundaries pair up (1,2), (3,4), (5,6)
    assert selector.consumer_key_hash_ranges() == {c4: [(1, 2), (3, 4), (5, 6)]}


def test_legacy_single_point_range_shifts_the_pairing():
    selector = HashRangeExclusiveSelector(LEGACY, 100)
    c1, c2 = sticky(1, (10, 10)), sticky(2, (20, 30))
    selector.add_consumer(c1)
    selector.add_consumer(c2)
    assert [k for k, _ in selector.range_map()] == [10, 20, 30]
    assert selector.consumer_key_hash_ranges() == {}  # pairs (10,20) mixed, 30 left alone
    assert selector.select(10) == c1 and selector.select(25) == c2 and selector.select(15) is None


@pytest.mark.parametrize("profile", ALL)
def test_unowned_and_beyond_range_size(profile):
    selector = HashRangeExclusiveSelector(profile, 10)
    c1 = sticky(1, (15, 20))  # the broker never checks ranges against rangeSize
    selector.add_consumer(c1)
    assert all(selector.select(h) is None for h in range(10))
    assert selector.consumer_key_hash_ranges() == {c1: [(15, 20)]}


def test_3x_reduces_hash_modulo_range_size_4x_does_not():
    old, new = HashRangeExclusiveSelector(PAIR_3X, 10), HashRangeExclusiveSelector(PAIR_4X, 10)
    c = sticky(1, (0, 2))
    old.add_consumer(c)
    new.add_consumer(c)
    assert old.select(21) == c and new.select(21) is None
    for key in ("key1", "key2", "k1", "NONE_KEY"):
        assert old.make_sticky_key_hash(key) == murmur3_32(key)
        assert new.make_sticky_key_hash(key) == reduce_hash(murmur3_32(key), 0, 9)


@pytest.mark.parametrize("size", [0, -1])
def test_constructor_validation(size):
    with pytest.raises(IllegalArgumentException) as err:
        HashRangeExclusiveSelector(PAIR_3X, size)
    assert err.value.message == "range size must greater than 0"


@pytest.mark.parametrize("size", [1.0, "10", None])
def test_constructor_rejects_non_int(size):
    with pytest.raises(TypeError, match="range_size must be an int"):
        HashRangeExclusiveSelector(PAIR_3X, size)


def test_bad_ranges_and_hashes():
    selector = HashRangeExclusiveSelector(PAIR_4X, 100)
    with pytest.raises(TypeError, match="hash range start must be an int"):
        selector.add_consumer(Consumer(1, "c1", ranges=(("0", 5),)))
    with pytest.raises(TypeError, match=r"\(start, end\) pair"):
        selector.add_consumer(Consumer(1, "c1", ranges=((1, 2, 3),)))
    with pytest.raises(TypeError, match="list of"):
        selector.add_consumer(Consumer(1, "c1", ranges="0-5"))
    with pytest.raises(TypeError, match="sticky key hash must be an int"):
        selector.select("5")
    with pytest.raises(ValueError, match="must be in"):
        selector.select(-5)
    with pytest.raises(TypeError, match="a key must be str or bytes"):
        selector.select_key(5)
    with pytest.raises(TypeError, match="integer array"):
        selector.select_bulk(np.array(["a"]))


def test_client_side_validation_texts():
    # KeySharedPolicy.KeySharedPolicySticky.validate(); Range.toString() is "[s, e]"
    assert validate_sticky_policy_ranges([(0, 9), HashRange(10, 65535)]) == [HashRange(0, 9), HashRange(10, 65535)]
    cases = [
        ([], "Ranges for KeyShared policy must not be empty."),
        ([(0, 65536)], "Ranges must be [0, 65535] but provided range is [0, 65536]"),
        ([(-1, 3)], "Ranges must be [0, 65535] but provided range is [-1, 3]"),
        ([(0, 9), (0, 5)], "Ranges for KeyShared policy with overlap between [0, 9] and [0, 5]"),
        ([(5, 1)], "Range end must >= range start."),
    ]
    for ranges, message in cases:
        with pytest.raises(IllegalArgumentException) as err:
            validate_sticky_policy_ranges(ranges)
        assert err.value.message == message and err.value.java_class == "java.lang.IllegalArgumentException"
    with pytest.raises(TypeError):
        validate_sticky_policy_ranges([("a", 1)])


def test_snapshot_and_make_selector():
    selector = make_selector("sticky", "3.0", range_size=100)
    assert isinstance(selector, HashRangeExclusiveSelector) and selector.kind == "sticky"
    selector.add_consumer(sticky(2, (50, 60), (0, 9)))
    snap = selector.snapshot()
    assert snap["ranges"] == ((0, 9, 2), (50, 60, 2)) and snap["consumers"] == ((2, "c2"),)
    json.dumps(snap)
    legacy = HashRangeExclusiveSelector(LEGACY, 100)
    legacy.add_consumer(sticky(2, (50, 60), (70, 72)))
    legacy.add_consumer(sticky(3, (80, 80)))
    snap = legacy.snapshot()
    assert snap["boundaries"] == ((50, 2), (60, 2), (70, 2), (72, 2), (80, 3))
    assert snap["declared_ranges"] == ((50, 60, 2), (70, 72, 2), (80, 80, 3))
    assert snap["ranges"] == ((50, 72, 2), (80, 80, 3))  # the gap 61..69 is served by consumer 2


# -- properties ------------------------------------------------------------------------------------

RANGE_SIZE = 64
range_st = st.tuples(st.integers(0, 70), st.integers(-3, 12)).map(lambda t: (t[0], t[0] + t[1]))
op_st = st.one_of(
    st.tuples(st.just("add"), st.one_of(st.none(), st.lists(range_st, max_size=3))),
    st.tuples(st.just("remove"), st.integers(0, 20)),
)


def _overlap(a, b):
    return max(a[0], b[0]) <= min(a[1], b[1])


def _naive_pair_accepts(ranges, attached):
    if not ranges or any(s > e for s, e in ranges):
        return False
    if any(_overlap(a, b) for i, a in enumerate(ranges) for b in ranges[i + 1 :]):
        return False
    return not any(_overlap(r, o) for r in ranges for c in attached for o in c.ranges)


def _naive_legacy_owner(slot, attached):
    bounds = [(k, c) for c in attached for r in c.ranges for k in r]
    below = [(k, c) for k, c in bounds if k <= slot]
    above = [(k, c) for k, c in bounds if k >= slot]
    if not below or not above:
        return None
    low, high = max(below, key=lambda t: t[0])[1], min(above, key=lambda t: t[0])[1]
    return low if low == high else None


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(ALL), st.lists(op_st, max_size=25))
def test_selection_matches_a_naive_ownership_model(profile, ops):
    selector = HashRangeExclusiveSelector(profile, RANGE_SIZE)
    attached: list[Consumer] = []
    for n, (op, arg) in enumerate(ops):
        if op == "add":
            consumer = Consumer(n, f"c{n}", ranges=None if arg is None else tuple(arg))
            try:
                selector.add_consumer(consumer)
                accepted = True
            except ConsumerAssignException:
                accepted = False
            if profile != LEGACY:
                assert accepted == (arg is not None and _naive_pair_accepts(arg, attached))
            if accepted:
                attached.append(consumer)
        elif attached:
            selector.remove_consumer(attached.pop(arg % len(attached)))
        assert selector.consumers == attached

        served = selector.snapshot()["ranges"]
        assert list(served) == sorted(served) and all(a[1] < b[0] for a, b in zip(served, served[1:]))
        for slot in range(RANGE_SIZE):
            owner = next((cid for s, e, cid in served if s <= slot <= e), None)
            chosen = selector.select(slot)
            assert owner == (None if chosen is None else chosen.id)

        hashes = np.arange(0, RANGE_SIZE * 2, dtype=np.int64)
        bulk = selector.select_bulk(hashes).tolist()
        for h, got in zip(hashes.tolist(), bulk):
            chosen = selector.select(h)
            assert got == (NO_CONSUMER if chosen is None else chosen.id)  # scalar and bulk agree
            slot = h % RANGE_SIZE if profile != PAIR_4X else h
            if profile == LEGACY:
                assert chosen == _naive_legacy_owner(slot, attached)
                # a declared range always selects its owner; gaps may too
                for c in attached:
                    if any(s <= slot <= e for s, e in c.ranges):
                        assert chosen == c
            else:
                owners = [c for c in attached if any(s <= slot <= e for s, e in c.ranges)]
                assert len(owners) <= 1
                assert chosen == (owners[0] if owners else None)


def test_golden_conformance():
    for name in ("hash_range_exclusive_legacy.jsonl", "hash_range_exclusive_v3_pair.jsonl"):
        result = run_file(golden_path(name))
        assert result.total > 0 and result.matched == result.total, result.first_mismatch
