"""4.x ConsumerHashAssignmentsSnapshot: of / diff_ranges / resolve / merge (reference §2.4, README-dispatch §6)."""

from __future__ import annotations

import pytest
from golden_files import golden_path
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.key_shared.assignments import (
    ConsumerHashAssignmentsSnapshot,
    UpdatedHashRanges,
    diff_ranges,
    impacted_consumers,
    merge_overlapping_ranges,
)
from pulsarlab.broker.key_shared.base import Consumer, ImpactedConsumers
from pulsarlab.conformance import run_file
from pulsarlab.errors import IllegalArgumentException

C1, C2, C3 = Consumer(1, "c1"), Consumer(2, "c2"), Consumer(3, "c3")


def test_merge_overlapping_ranges_pulsar_unit_test():
    # ConsumerHashAssignmentsSnapshotTest.testMergeOverlappingRanges
    assert merge_overlapping_ranges([(1, 5), (6, 10), (8, 12), (15, 20), (21, 25)]) == [(1, 12), (15, 25)]


def test_merge_sorts_and_drops_duplicates_first():
    assert merge_overlapping_ranges([(21, 25), (1, 5), (1, 5), (3, 4)]) == [(1, 5), (21, 25)]
    assert merge_overlapping_ranges([]) == []


def test_diff_overlapping_ranges_quirk():
    # testDiffRanges_OverlappingRanges: the head [1,2] that c1 lost is not reported
    before = ConsumerHashAssignmentsSnapshot.of([(1, 5, C1)])
    after = ConsumerHashAssignmentsSnapshot.of([(3, 7, C2)])
    assert list(before.diff_ranges(after).items()) == [((3, 5), (C1, C2)), ((3, 7), (None, C2))]
    impacted = before.resolve_impacted_consumers(after)
    assert impacted.removed == {C1: [(3, 5)]}
    assert impacted.added == {C2: [(3, 7)]}
    assert not impacted.is_empty


def test_diff_disjoint_before_first_pairs_with_unrelated_consumer():
    # golden README-dispatch §6 fixed-disjoint-before-first: c3 "loses" [5,8], which it never owned
    diff = diff_ranges([(1, 2, C1), (10, 12, C3)], [(5, 8, C2), (10, 12, C3)])
    assert list(diff.items()) == [((1, 2), (C1, C2)), ((5, 8), (C3, C2))]


def test_diff_equal_ranges_only_when_consumer_changes():
    assert diff_ranges([(1, 5, C1)], [(1, 5, C1)]) == {}
    assert diff_ranges([(1, 5, C1)], [(1, 5, C2)]) == {(1, 5): (C1, C2)}


def test_leftovers_and_is_empty():
    added_only = impacted_consumers([], [(1, 5, C1)])
    assert added_only.removed == {} and added_only.added == {C1: [(1, 5)]}
    assert added_only.is_empty  # isEmpty() looks at removed ranges only
    removed_only = impacted_consumers([(1, 5, C1)], [])
    assert removed_only.removed == {C1: [(1, 5)]} and not removed_only.is_empty


def test_of_rejects_unsorted_and_duplicate_but_accepts_overlapping_sorted():
    for bad in ([(6, 9, C1), (1, 5, C2)], [(1, 5, C1), (1, 5, C2)], [(1, 5, C1), (1, 4, C2)]):
        with pytest.raises(IllegalArgumentException) as err:
            ConsumerHashAssignmentsSnapshot.of(bad)
        assert err.value.message == "Ranges must be non-overlapping and sorted"
        assert err.value.java_class == "java.lang.IllegalArgumentException"
    ok = ConsumerHashAssignmentsSnapshot.of([(1, 5, C1), (5, 9, C2)])
    assert ok.ranges_by_consumer() == {C1: [(1, 5)], C2: [(5, 9)]}


def test_of_bad_input():
    with pytest.raises(IllegalArgumentException, match="Range end must >= range start."):
        ConsumerHashAssignmentsSnapshot.of([(5, 1, C1)])
    with pytest.raises(TypeError, match="hash range start must be an int"):
        ConsumerHashAssignmentsSnapshot.of([("1", 5, C1)])
    with pytest.raises(TypeError, match="must be an int, not bool"):
        ConsumerHashAssignmentsSnapshot.of([(True, 5, C1)])
    with pytest.raises(TypeError, match="start, end, consumer"):
        ConsumerHashAssignmentsSnapshot.of([(1, 5)])
    with pytest.raises(TypeError, match=r"\(start, end\) pair"):
        merge_overlapping_ranges([(1, 2, 3)])


def test_ranges_by_consumer_merges_adjacent():
    snap = ConsumerHashAssignmentsSnapshot.of([(0, 9, C1), (10, 19, C1), (20, 29, C2), (30, 39, C1)])
    assert snap.ranges_by_consumer() == {C1: [(0, 19), (30, 39)], C2: [(20, 29)]}


def test_updated_hash_ranges_contains_sticky_key():
    ranges = UpdatedHashRanges.of([(10, 12), (1, 5), (6, 6)])
    assert ranges == [(1, 6), (10, 12)]
    assert [h for h in range(15) if ranges.contains_sticky_key(h)] == [1, 2, 3, 4, 5, 6, 10, 11, 12]
    with pytest.raises(TypeError):
        ranges.contains_sticky_key(1.5)


# -- properties ------------------------------------------------------------------------------------

ranges_strategy = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)).map(lambda t: (t[0], t[0] + t[1])))


@settings(max_examples=150, deadline=None)
@given(ranges_strategy)
def test_merge_covers_the_same_hashes_with_separated_ranges(ranges):
    merged = merge_overlapping_ranges(ranges)
    covered = {h for s, e in ranges for h in range(s, e + 1)}
    assert {h for s, e in merged for h in range(s, e + 1)} == covered
    assert all(a[1] + 1 < b[0] for a, b in zip(merged, merged[1:]))  # sorted, neither overlapping nor adjacent


def _cover(draw, universe: int, consumers: list[Consumer]) -> list[tuple[int, int, Consumer]]:
    cuts = sorted(draw(st.sets(st.integers(1, universe), max_size=8)))
    bounds = [0, *cuts, universe + 1]
    return [(a, b - 1, draw(st.sampled_from(consumers))) for a, b in zip(bounds, bounds[1:])]


@st.composite
def cover_pairs(draw):
    universe = draw(st.integers(1, 60))
    consumers = [Consumer(i, f"c{i}") for i in range(1, draw(st.integers(1, 5)) + 1)]
    return universe, _cover(draw, universe, consumers), _cover(draw, universe, consumers)


def _owner(assignments, h):
    return next(c for s, e, c in assignments if s <= h <= e)


@settings(max_examples=150, deadline=None)
@given(cover_pairs())
def test_full_coverage_diff_reports_exactly_the_moved_hashes(case):
    # with both sides covering the whole hash range (as 4.x selectors do) the quirks never show
    universe, before, after = case
    result = impacted_consumers(before, after)
    assert isinstance(result, ImpactedConsumers)
    for h in range(universe + 1):
        old, new = _owner(before, h), _owner(after, h)
        for c, ranges in result.removed.items():
            assert ranges.contains_sticky_key(h) == (c == old and old != new)
        for c, ranges in result.added.items():
            assert ranges.contains_sticky_key(h) == (c == new and old != new)
    assert result.is_empty == all(_owner(before, h) == _owner(after, h) for h in range(universe + 1))


def test_golden_conformance():
    result = run_file(golden_path("consumer_hash_assignments_snapshot.jsonl"))
    assert result.total > 0 and result.matched == result.total, result.first_mismatch
