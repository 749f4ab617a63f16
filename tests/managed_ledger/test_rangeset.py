"""The cursor's individual-ack set (`pulsarlab.managed_ledger.rangeset`) against reference §7.2 and golden README §6."""

from __future__ import annotations

import copy
import random
from bisect import bisect_right
from unittest import mock

import pytest
from golden_files import golden_lines
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsarlab.managed_ledger.rangeset as rangeset_module
from pulsarlab.conformance import Mismatch
from pulsarlab.conformance.rangeset import check
from pulsarlab.errors import IllegalArgumentException, PulsarError
from pulsarlab.managed_ledger.rangeset import INT_MAX, IndexOutOfBoundsException, OpenLongPairRangeSet

# ---------------------------------------------------------------------------------------------
# Reference §7.2 facts (OpenLongPairRangeSetTest, RangeSetWrapperTest)


def test_to_string_as_open_long_pair_range_set_test():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(0, 97, 0, 99)
    assert str(rs) == "[(0:97..0:99]]"
    rs.add_open_closed(0, 98, 0, 105)
    assert str(rs) == "[(0:97..0:105]]"
    rs.add_open_closed(0, 5, 0, 75)
    assert str(rs) == "[(0:5..0:75],(0:97..0:105]]"
    assert rs.to_string(separator=", ") == "[(0:5..0:75], (0:97..0:105]]"  # the Guava fallback


def test_cache_flag_conflict():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(0, 1, 0, 2)
    assert rs.size() == 1
    rs.add_open_closed(0, 3, 0, 4)
    assert str(rs) == "[(0:1..0:2],(0:3..0:4]]"
    assert rs.size() == 2
    rs.add_open_closed(0, 2, 0, 3)
    assert rs.size() == 1 and str(rs) == "[(0:1..0:4]]"


def test_empty_set_prints_brackets_and_has_no_ranges():
    rs = OpenLongPairRangeSet()
    assert str(rs) == "[]" and rs.size() == 0 and rs.is_empty() and not rs
    assert rs.first_range() is None and rs.last_range() is None and rs.span() is None
    assert list(rs) == [] and rs.to_ranges(10) == {}


def test_acking_entry_zero_shows_minus_one_lower_bound():
    rs = OpenLongPairRangeSet()
    rs.ack(3, 0)
    assert str(rs) == "[(3:-1..3:0]]"
    assert list(rs) == [(3, -1, 3, 0)]


def test_ranges_of_each_ledger_are_reported_separately():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(3, 4, 3, 7)
    rs.add_open_closed(4, -1, 4, 2)
    assert str(rs) == "[(3:4..3:7],(4:-1..4:2]]"
    assert rs.size() == 2
    assert rs.first_range() == (3, 4, 3, 7)
    assert rs.last_range() == (4, -1, 4, 2)
    assert rs.span() == (3, 4, 4, 2)


# ---------------------------------------------------------------------------------------------
# Cross-ledger adds (golden README §6)


def test_cross_ledger_add_into_absent_lower_ledger_sets_only_upper_ledger():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(2, 10, 4, 10)  # the Javadoc's (2:10..4:10]
    assert str(rs) == "[(4:-1..4:10]]"
    assert not rs.contains(2, 11)


def test_cross_ledger_add_extends_lower_ledger_only_up_to_its_last_entry():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(2, 3, 2, 5)
    rs.add_open_closed(2, 15, 2, 20)
    rs.add_open_closed(2, 8, 4, 1)
    assert str(rs) == "[(2:3..2:5],(2:8..2:20],(4:-1..4:1]]"
    rs.add_open_closed(2, 20, 5, 0)  # lower bound at the last entry: ledger 2 untouched
    assert str(rs) == "[(2:3..2:5],(2:8..2:20],(4:-1..4:1],(5:-1..5:0]]"


def test_cross_ledger_add_never_touches_ledgers_in_between():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(3, 5, 3, 6)
    rs.add_open_closed(1, 0, 5, 2)
    assert str(rs) == "[(3:5..3:6],(5:-1..5:2]]"


@pytest.mark.parametrize("upper", [(7, -1), (7, INT_MAX), (-1, 4), (INT_MAX, 4)])
def test_cross_ledger_add_ignores_an_earliest_or_latest_upper_bound(upper):
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(1, 0, 1, 3)
    rs.add_open_closed(1, 1, *upper)
    assert str(rs) == "[(1:0..1:3]]"  # the lower ledger is filled from 1:2 to its last entry 1:3 only


def test_empty_add_creates_the_ledger_until_the_next_remove_at_most():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(6, 4, 6, 4)  # BitSet.set(5, 5): nothing, but computeIfAbsent made the ledger
    assert rs.is_empty() and rs.size() == 0 and str(rs) == "[]"
    with pytest.raises(IndexOutOfBoundsException, match="^bitIndex < 0: -1$"):
        rs.contains(6, -1)
    assert rs.last_range() == (6, -1, 6, -1)
    assert rs.to_ranges(0) == {6: []}
    rs.remove_at_most(1, 0)
    assert rs.contains(6, -1) is False and rs.to_ranges(0) == {}


def test_reversed_same_ledger_add_fails_like_bitset_and_keeps_the_ledger():
    rs = OpenLongPairRangeSet()
    with pytest.raises(IndexOutOfBoundsException) as info:
        rs.add_open_closed(1, 5, 1, 3)
    assert info.value.message == "fromIndex: 6 > toIndex: 4"
    assert info.value.java_class == "java.lang.IndexOutOfBoundsException"
    assert isinstance(info.value, PulsarError)
    assert rs.to_ranges(100) == {1: []}


# ---------------------------------------------------------------------------------------------
# Queries


def test_contains_minus_one_on_an_existing_ledger_raises_index_out_of_bounds():
    rs = OpenLongPairRangeSet()
    rs.ack(5, 0)
    with pytest.raises(IndexOutOfBoundsException) as info:
        rs.contains(5, -1)
    assert info.value.as_java()["message"] == "bitIndex < 0: -1"
    with pytest.raises(IndexOutOfBoundsException):
        rs.range_containing(5, -7)
    assert rs.contains(6, -1) is False  # no such ledger: no BitSet to ask
    assert (5, 0) in rs and (5, 1) not in rs


def test_range_containing_is_closed_closed():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(4, 10, 4, 20)
    assert rs.range_containing(4, 15) == (4, 11, 4, 20)
    assert rs.range_containing(4, 11) == (4, 11, 4, 20)
    assert rs.range_containing(4, 10) is None and rs.range_containing(9, 15) is None


def test_cardinality_counts_inclusive_bounds_with_lower_value_clamped_at_zero():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(3, -1, 3, 9)  # 3:0..3:9
    rs.add_open_closed(4, 4, 4, 6)  # 4:5, 4:6
    rs.add_open_closed(7, 0, 7, 1)  # 7:1
    assert rs.cardinality(3, 0, 7, 99) == 13
    assert rs.cardinality(3, -5, 3, 9) == 10
    assert rs.cardinality(3, 2, 4, 5) == 9
    assert rs.cardinality(4, 6, 4, 6) == 1
    assert rs.cardinality(5, 0, 6, 100) == 0
    with pytest.raises(IllegalArgumentException, match="^inconsistent range$"):
        rs.cardinality(7, 0, 3, 0)


def test_to_ranges_counts_entries_not_ranges():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(1, -1, 1, 9)  # 10 entries, one range
    rs.ack(2, 69)  # word 1, bit 5
    rs.ack(3, 0)
    assert rs.to_ranges(0) == {1: [1023]}
    assert rs.to_ranges(10) == {1: [1023], 2: [0, 32]}
    assert rs.to_ranges(11) == {1: [1023], 2: [0, 32], 3: [1]}


def test_to_ranges_words_are_signed_longs():
    rs = OpenLongPairRangeSet()
    rs.ack(1, 63)
    assert rs.to_ranges(INT_MAX) == {1: [-(2**63)]}


# ---------------------------------------------------------------------------------------------
# removeAtMost and clear


def test_remove_at_most_drops_lower_ledgers_and_the_prefix_of_its_ledger():
    rs = OpenLongPairRangeSet()
    for ledger in (1, 2, 3):
        rs.add_open_closed(ledger, 0, ledger, 10)
    rs.remove_at_most(2, 4)
    assert str(rs) == "[(2:4..2:10],(3:0..3:10]]"
    rs.remove_at_most(2, 10)
    assert str(rs) == "[(3:0..3:10]]"
    rs.remove_at_most(3, -1)
    assert str(rs) == "[(3:0..3:10]]"
    rs.clear()
    assert rs.is_empty() and str(rs) == "[]"


def test_remove_at_most_of_the_latest_entry_overflows_like_java():
    rs = OpenLongPairRangeSet()
    rs.ack(1, 5)
    with pytest.raises(IndexOutOfBoundsException, match="^toIndex < 0: -2147483648$"):
        rs.remove_at_most(1, INT_MAX)


def test_first_range_of_an_empty_lowest_ledger_fails_like_java():
    rs = OpenLongPairRangeSet()
    rs.add_open_closed(1, 3, 1, 3)
    rs.ack(2, 0)
    with pytest.raises(IndexOutOfBoundsException, match="^fromIndex < 0: -1$"):
        rs.first_range()
    assert rs.span() == (1, -2, 2, 0)


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "args", [("3", 0, 3, 1), (3, 0.0, 3, 1), (3, 0, 3, None), (3, 0, True, 1), (2**63, 0, 2**63, 1)]
)
def test_non_long_arguments_are_rejected_with_a_clear_message(args):
    rs = OpenLongPairRangeSet()
    with pytest.raises((TypeError, ValueError), match="must be an int|does not fit a Java long"):
        rs.add_open_closed(*args)


def test_ack_rejects_a_non_integer_entry():
    rs = OpenLongPairRangeSet()
    rs.ack(1, 0)
    with pytest.raises(TypeError, match="entry must be an int"):
        rs.ack(1, 1.0)
    assert str(rs) == "[(1:-1..1:0]]"


# ---------------------------------------------------------------------------------------------
# Properties: the range set equals a naive set of (ledger, entry) under the golden README rules


class NaiveRangeSet:
    """Golden README §6 in its plainest form: a set of (ledger, entry)."""

    def __init__(self) -> None:
        self.entries: set[tuple[int, int]] = set()
        self.present: set[int] = set()  # ledgers with a BitSet, possibly empty

    def ledgers(self) -> set[int]:
        return {ledger for ledger, _ in self.entries}

    def entries_of(self, ledger: int) -> list[int]:
        return sorted(e for l, e in self.entries if l == ledger)

    def last(self, ledger: int) -> int:
        return max((e for l, e in self.entries if l == ledger), default=-1)

    def add_open_closed(self, lk: int, lv: int, uk: int, uv: int) -> None:
        if lk == uk:
            self.present.add(lk)
            self.entries.update((lk, e) for e in range(lv + 1, uv + 1))
            return
        if lk in self.ledgers() and self.last(lk) > lv:
            self.entries.update((lk, e) for e in range(lv + 1, self.last(lk) + 1))
        if uv != -1:
            self.present.add(uk)
            self.entries.update((uk, e) for e in range(0, uv + 1))

    def remove_at_most(self, k: int, v: int) -> None:
        self.entries = {(l, e) for l, e in self.entries if l > k or (l == k and e > v)}
        self.present = self.ledgers()  # every empty ledger goes, whatever its id

    def ranges(self) -> list[tuple[int, int, int, int]]:
        out: list[list[int]] = []
        for ledger, entry in sorted(self.entries):
            if out and out[-1][0] == ledger and out[-1][3] == entry - 1:
                out[-1][3] = entry
            else:
                out.append([ledger, entry - 1, ledger, entry])
        return [tuple(r) for r in out]

    def cardinality(self, lk: int, lv: int, uk: int, uv: int) -> int:
        return sum(1 for p in self.entries if (lk, max(lv, 0)) <= p <= (uk, uv))


LEDGERS = st.sampled_from([1, 2, 3, 5])
ENTRY = st.integers(min_value=0, max_value=40)


@st.composite
def operations(draw):
    kind = draw(st.sampled_from(["ack", "ack", "ack", "span", "cross", "remove", "empty", "clear"]))
    if kind == "ack":
        return ("add", draw(LEDGERS), None, None, draw(ENTRY))
    if kind == "empty":  # (L:a..L:a] sets nothing but creates the ledger's BitSet
        ledger, a = draw(LEDGERS), draw(st.integers(-1, 40))
        return ("add", ledger, a, ledger, a)
    if kind == "span":
        a, b = sorted((draw(st.integers(-1, 40)), draw(st.integers(-1, 40))))
        if a == b:
            b += 1
        ledger = draw(LEDGERS)
        return ("add", ledger, a, ledger, b)
    if kind == "cross":
        lk, uk = sorted(draw(st.lists(LEDGERS, min_size=2, max_size=2, unique=True)))
        return ("add", lk, draw(st.integers(-1, 40)), uk, draw(st.integers(-1, 40)))
    if kind == "remove":
        return ("remove", draw(LEDGERS), draw(st.integers(-1, 41)))
    return ("clear",)


def _apply(op, rs, naive) -> None:
    if op[0] == "add":
        _, lk, lv, uk, uv = op
        if lv is None:  # a single-entry ack
            rs.ack(lk, uv)
            naive.add_open_closed(lk, uv - 1, lk, uv)
        else:
            rs.add_open_closed(lk, lv, uk, uv)
            naive.add_open_closed(lk, lv, uk, uv)
    elif op[0] == "remove":
        rs.remove_at_most(op[1], op[2])
        naive.remove_at_most(op[1], op[2])
    else:
        rs.clear()
        naive.entries.clear()
        naive.present.clear()


def _assert_same(rs: OpenLongPairRangeSet, naive: NaiveRangeSet, rng: random.Random) -> None:
    expected = naive.ranges()
    assert list(rs) == expected
    assert all(lk == uk for lk, _, uk, _ in rs), "a range crosses ledgers"
    assert rs.size() == len(expected)
    assert rs.is_empty() == (not expected)
    assert str(rs) == "[" + ",".join(f"({l}:{a}..{l}:{b}]" for l, a, _, b in expected) + "]"
    present = sorted(naive.present)
    if not present:
        assert rs.first_range() is None and rs.last_range() is None and rs.span() is None
    else:
        low, high = naive.entries_of(present[0]), naive.entries_of(present[-1])
        if low:
            assert rs.first_range() == expected[0]
        else:
            with pytest.raises(IndexOutOfBoundsException):
                rs.first_range()
        assert rs.last_range() == (expected[-1] if high else (present[-1], -1, present[-1], -1))
        first_entry = low[0] if low else -1
        assert rs.span() == (present[0], first_entry - 1, present[-1], high[-1] if high else -1)
    for ledger in (1, 2, 3, 5):
        if ledger in naive.present:
            with pytest.raises(IndexOutOfBoundsException):
                rs.contains(ledger, -1)
        else:
            assert rs.contains(ledger, -1) is False
        for entry in range(0, 43):
            assert rs.contains(ledger, entry) == ((ledger, entry) in naive.entries)
    assert set(rs.to_ranges(INT_MAX)) == naive.present
    for _ in range(5):
        lk, uk = sorted(rng.choice([1, 2, 3, 5]) for _ in range(2))
        lv, uv = rng.randint(-3, 42), rng.randint(-1, 42)
        assert rs.cardinality(lk, lv, uk, uv) == naive.cardinality(lk, lv, uk, uv)
    for ledger, a, _, b in expected:
        entry = rng.randint(a + 1, b)
        assert rs.range_containing(ledger, entry) == (ledger, a + 1, ledger, b)


@settings(max_examples=150, deadline=None)
@given(st.lists(operations(), max_size=40), st.randoms(use_true_random=False))
def test_matches_a_naive_set_of_ledger_entry_pairs(ops, rng):
    rs, naive = OpenLongPairRangeSet(), NaiveRangeSet()
    for op in ops:
        _apply(op, rs, naive)
        _assert_same(rs, naive, rng)


@settings(max_examples=150, deadline=None)
@given(st.lists(operations(), max_size=60), st.randoms(use_true_random=False))
def test_matches_the_naive_set_when_runs_span_many_blocks(ops, rng):
    """With two runs per block every insert splits blocks and merges cross block boundaries."""
    with mock.patch.object(rangeset_module, "_BLOCK", 1):
        rs, naive = OpenLongPairRangeSet(), NaiveRangeSet()
        for op in ops:
            _apply(op, rs, naive)
            _assert_same(rs, naive, rng)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([3, 4]), st.integers(0, 300)), max_size=300))
def test_ack_is_the_cursors_single_entry_add(acks):
    via_ack, via_add = OpenLongPairRangeSet(), OpenLongPairRangeSet()
    for ledger, entry in acks:
        via_ack.ack(ledger, entry)
        via_add.add_open_closed(ledger, entry - 1, ledger, entry)
    assert list(via_ack) == list(via_add)
    assert via_ack.to_ranges(INT_MAX) == via_add.to_ranges(INT_MAX)


# Out-of-order acks wait in a per-ledger pending set until a read needs them: merged late or at once, and one
# by one or in one vectorised pass, every answer must be the same.

MERGE_MODES = {
    "one by one": {"_MERGE_ONE_BY_ONE_BASE": 10**9},
    "vectorised": {"_MERGE_ONE_BY_ONE_BASE": 0, "_BLOCK": 1},  # _BLOCK // 3 == 0: every merge is vectorised
    "default": {"_MERGE_ONE_BY_ONE_BASE": rangeset_module._MERGE_ONE_BY_ONE_BASE},
}

QUERIES = {
    "iter": lambda rs: list(rs),
    "str": str,
    "size": lambda rs: rs.size(),
    "is_empty": lambda rs: rs.is_empty(),
    "first_range": lambda rs: rs.first_range(),
    "last_range": lambda rs: rs.last_range(),
    "span": lambda rs: rs.span(),
    "contains": lambda rs: [rs.contains(l, e) for l in (1, 2, 3, 5) for e in range(0, 43)],
    "range_containing": lambda rs: [rs.range_containing(l, e) for l in (1, 2, 3, 5) for e in range(0, 43)],
    "has_any_from": lambda rs: [rs.has_any_from(l, e) for l in (1, 2, 3, 5) for e in range(0, 43)],
    "cardinality": lambda rs: rs.cardinality(1, -2, 5, 41),
    "to_ranges": lambda rs: rs.to_ranges(INT_MAX),
    "remove_at_most": lambda rs: (rs.remove_at_most(2, 17), list(rs), rs._keys),
    "remove_below_earliest": lambda rs: (rs.remove_at_most(-5, 3), list(rs)),
    "cross_ledger_add": lambda rs: (rs.add_open_closed(2, 5, 3, 9), list(rs)),
}


def _answer(query, rs):
    try:
        return query(rs)
    except PulsarError as error:
        return (type(error), str(error))


def _replay(ops, merge_at_once: bool) -> OpenLongPairRangeSet:
    rs, naive = OpenLongPairRangeSet(), NaiveRangeSet()
    for op in ops:
        _apply(op, rs, naive)
        if merge_at_once:
            for runs in rs._ledgers.values():
                runs.merge_pending()
    return rs


@pytest.mark.parametrize("mode", MERGE_MODES)
@settings(max_examples=60, deadline=None)
@given(st.lists(operations(), max_size=40))
def test_every_read_sees_acks_still_pending(mode, ops):
    """Each query, asked first after the operations, answers as if every ack had been merged at once."""
    with mock.patch.multiple(rangeset_module, **MERGE_MODES[mode]):
        for name, query in QUERIES.items():
            lazy, eager = _replay(ops, merge_at_once=False), _replay(ops, merge_at_once=True)
            assert _answer(query, lazy) == _answer(query, eager), name
            assert list(lazy) == list(eager), name


@pytest.mark.parametrize("mode", MERGE_MODES)
@settings(max_examples=100, deadline=None)
@given(st.lists(operations(), max_size=60), st.randoms(use_true_random=False))
def test_matches_the_naive_set_in_each_merge_mode(mode, ops, rng):
    with mock.patch.multiple(rangeset_module, **MERGE_MODES[mode]):
        rs, naive = OpenLongPairRangeSet(), NaiveRangeSet()
        for op in ops:
            _apply(op, rs, naive)
            _assert_same(rs, naive, rng)


def test_contains_answers_a_pending_ack_without_merging():
    rs = OpenLongPairRangeSet()
    rs.ack(4, 10)
    rs.ack(4, 3)  # out of order: pending
    runs = rs._ledgers[4]
    assert runs.pending == {3}
    assert rs.contains(4, 3) and not rs.contains(4, 4)
    assert runs.pending == {3}
    assert rs.first_range() == (4, 2, 4, 3)
    assert not runs.pending


def test_acks_merged_one_by_one_are_set_in_place_for_a_while():
    """A merge that goes one by one (a read every few acks) saved nothing: the next acks skip the buffer, then
    buffer again."""
    rs = OpenLongPairRangeSet()
    rs.ack(4, 10**6)
    runs = rs._ledgers[4]
    for entry in (3, 9, 7):
        rs.ack(4, entry)
    assert runs.pending == {3, 7, 9} and runs.in_place == 0
    assert rs.first_range() == (4, 2, 4, 3)  # a merge of three entries, one by one
    assert not runs.pending
    assert runs.in_place == rangeset_module._IN_PLACE_AFTER_A_SMALL_MERGE
    in_place = range(11, 11 + 2 * runs.in_place, 2)
    for entry in in_place:
        rs.ack(4, entry)
    assert runs.in_place == 0 and not runs.pending
    rs.ack(4, 1)
    rs.add_open_closed(4, 0, 4, 1)  # the same entry, via the cursor's other call
    assert runs.pending == {1}
    assert rs.size() == 5 + len(in_place)  # 1, 3, 7, 9, each in place, 10**6


@pytest.mark.parametrize("mode", ["one by one", "vectorised"])
def test_a_merge_joins_pending_entries_with_runs_across_blocks(mode):
    """Pending entries that bridge gaps between runs of different blocks leave maximal runs."""
    base = MERGE_MODES[mode]["_MERGE_ONE_BY_ONE_BASE"]
    with mock.patch.multiple(rangeset_module, _BLOCK=2, _MERGE_ONE_BY_ONE_BASE=base):
        rs, naive = OpenLongPairRangeSet(), NaiveRangeSet()
        for a in range(0, 60, 3):  # runs a..a+1 with gaps at a+2
            rs.add_open_closed(9, a - 1, 9, a + 1)
            naive.add_open_closed(9, a - 1, 9, a + 1)
        assert len(rs._ledgers[9].firsts) > 3
        for gap in (5, 8, 11, 29, 59, 60, 100):
            rs.ack(9, gap)
            naive.add_open_closed(9, gap - 1, 9, gap)
        assert rs._ledgers[9].pending
        assert list(rs) == naive.ranges()
        assert (9, 2, 9, 13) in naive.ranges() and (9, 26, 9, 31) in naive.ranges() and (9, 56, 9, 60) in naive.ranges()
        assert rs._ledgers[9].firsts == [block[0] for block in rs._ledgers[9].starts]


def test_to_ranges_words_round_trip_to_the_entries():
    rng = random.Random(7)
    rs = OpenLongPairRangeSet()
    expected: dict[int, set[int]] = {}
    for _ in range(500):
        ledger, entry = rng.choice([1, 2]), rng.randint(0, 700)
        rs.ack(ledger, entry)
        expected.setdefault(ledger, set()).add(entry)
    for ledger, words in rs.to_ranges(INT_MAX).items():
        bits = {64 * i + b for i, w in enumerate(words) for b in range(64) if (w >> b) & 1}
        assert bits == expected[ledger]
        assert words[-1] != 0


def test_random_acks_in_large_ledgers_stay_consistent():
    """Thousands of runs per ledger (many blocks): compare with sorted entries."""
    rng = random.Random(11)
    rs = OpenLongPairRangeSet()
    acked: list[tuple[int, int]] = []
    for _ in range(30_000):
        ledger, entry = rng.choice([7, 8]), rng.randint(0, 40_000)
        rs.ack(ledger, entry)
        acked.append((ledger, entry))
    naive = NaiveRangeSet()
    naive.entries = set(acked)
    assert list(rs) == naive.ranges()
    assert rs.cardinality(7, 0, 8, 40_000) == len(naive.entries)
    keys = sorted(naive.entries)
    for ledger, entry in ((7, 123), (8, 39_999), (7, 20_000)):
        assert rs.contains(ledger, entry) == (keys[bisect_right(keys, (ledger, entry)) - 1] == (ledger, entry))
    rs.remove_at_most(7, 20_000)
    naive.remove_at_most(7, 20_000)
    assert list(rs) == naive.ranges()


def test_batches_of_random_acks_between_reads_merge_both_ways():
    """Batches of 1..3,000 random acks into ledgers of thousands of runs, each batch followed by reads and a
    remove_at_most: merges go one by one and vectorised, and every answer matches the naive set."""
    rng = random.Random(5)
    rs, naive = OpenLongPairRangeSet(), NaiveRangeSet()
    runs_class = rangeset_module._Runs
    with (
        mock.patch.object(runs_class, "add_one", autospec=True, side_effect=runs_class.add_one) as one_by_one,
        mock.patch.object(
            runs_class, "_merge_vectorised", autospec=True, side_effect=runs_class._merge_vectorised
        ) as vectorised,
    ):
        floor = 0
        for batch in (1, 3_000, 5, 200, 1, 1, 40, 2_500, 90, 1_000, 2, 700, 150):
            for _ in range(batch):
                ledger, entry = rng.choice([7, 8]), rng.randint(0, 30_000)
                rs.ack(ledger, entry)
                naive.add_open_closed(ledger, entry - 1, ledger, entry)
            assert rs.first_range() == naive.ranges()[0]
            assert list(rs) == naive.ranges()
            assert rs.cardinality(7, 0, 8, 30_000) == len(naive.entries)
            floor += rng.randint(0, 1_500)
            rs.remove_at_most(7, floor)
            naive.remove_at_most(7, floor)
            assert list(rs) == naive.ranges()
    assert vectorised.call_count >= 3
    assert one_by_one.call_count >= 50
    assert max(len(blocks) for r in rs._ledgers.values() for blocks in r.starts) <= 2 * rangeset_module._BLOCK


# ---------------------------------------------------------------------------------------------
# The golden replay itself notices a wrong answer


def test_conformance_check_reports_a_changed_recording():
    line = golden_lines("open_long_pair_range_set.jsonl")[0]
    check(line)
    broken = copy.deepcopy(line)
    broken["steps"][1]["to_string"] = "[(0:98..0:99]]"
    with pytest.raises(Mismatch, match="to_string"):
        check(broken)
    broken = copy.deepcopy(line)
    broken["steps"][-1]["to_ranges"]["0"] = {"2": [1]}
    with pytest.raises(Mismatch, match="to_ranges"):
        check(broken)
