"""The cursor's individually-deleted-messages set: acknowledged entry ids kept as per-ledger runs.

Models `OpenLongPairRangeSet` (pulsar-common 9eeffe59, `LongPairRangeSet` cd87d8e5), the set behind
`ManagedCursorImpl.individualDeletedMessages` with the default ``managedLedgerUnackedRangesOpenCacheSetEnabled=true``
(docs/guide/cursor.md#individually-deleted-messages, golden README §6). Java keeps a `java.util.BitSet` per ledger and
an ack sets one bit. The model keeps per ledger the sorted maximal runs
of set entries (in blocks of at most ~256 runs) — what the questions asked (first range, size, toString)
are about, and compact where a bitset is not (entry ids go up to Integer.MAX_VALUE) — plus, like the
bits, a set of entries acked out of order: O(1) to add, merged into the runs (one by one when few,
else in one numpy pass) by the next read that needs runs. In-order acks extend the last run in O(1);
membership is O(1) or O(log n). Quirks kept on purpose: ranges never merge across ledgers, a cross-ledger add only
fills the upper ledger from entry 0 and extends the lower ledger up to its existing last entry, an empty
ledger can exist (created by an empty add) until the next `remove_at_most`, Java's int casts and
`BitSet` bounds errors (`IndexOutOfBoundsException`, exact message text).

Simplifies: Java caches ``size()`` and ``toString()`` and an add that throws half way can leave that
cache stale; the model always answers from the current state. The Guava fallback
(``LongPairRangeSet.DefaultRangeSet``, used when the cache-set setting is false) is modelled only in
its string separator (`to_string(separator=", ")`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from itertools import chain
from typing import Iterator

from pulsarlab.errors import IllegalArgumentException, PulsarError

INT_MAX = 2**31 - 1  # Integer.MAX_VALUE; LongPair.latest is (INT_MAX, INT_MAX)
EARLIEST = -1  # LongPair.earliest is (-1, -1)
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_ALL_BITS = 2**64 - 1

RawRange = tuple[int, int, int, int]  # (lower_key, lower_value, upper_key, upper_value)


class IndexOutOfBoundsException(PulsarError, IndexError):
    """`java.lang.IndexOutOfBoundsException` as `java.util.BitSet` throws it (message text included)."""

    java_class = "java.lang.IndexOutOfBoundsException"


def _jint(value: int) -> int:
    """Java's ``(int)`` cast of a long: keep the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def _jlong(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - 0x10000000000000000 if value & 0x8000000000000000 else value


def _check_long(name: str, value: object) -> None:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int (a Java long), not {type(value).__name__} ({value!r})")
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{name}={value} does not fit a Java long")


def _check_bit_range(from_index: int, to_index: int) -> None:
    """`BitSet.checkRange`: the bounds check (and messages) of set/clear over [from, to)."""
    if from_index < 0:
        raise IndexOutOfBoundsException(f"fromIndex < 0: {from_index}")
    if to_index < 0:
        raise IndexOutOfBoundsException(f"toIndex < 0: {to_index}")
    if from_index > to_index:
        raise IndexOutOfBoundsException(f"fromIndex: {from_index} > toIndex: {to_index}")


def _is_valid(key: int, value: int) -> bool:
    """Neither coordinate is LongPair.earliest's or LongPair.latest's (the cross-ledger add guard)."""
    return key != EARLIEST and value != EARLIEST and key != INT_MAX and value != INT_MAX


_BLOCK = 128  # runs per block after a split; a block splits when it holds more than twice this
# Merging pending entries one by one costs ~0.3 us each, in one vectorised pass ~25 us + ~0.07 us per run: one
# by one below this many plus a third of _BLOCK per block (blocks hold about 1 to 2 _BLOCK runs).
_MERGE_ONE_BY_ONE_BASE = 96
_IN_PLACE_AFTER_A_SMALL_MERGE = 512
_NO_PENDING: frozenset[int] = frozenset()


class _Runs:
    """One ledger's set entries as maximal runs ``start..end`` (inclusive), sorted and never adjacent.

    The runs live in blocks (like a B-tree's leaves) so that an insert moves at most ~256 list items:
    block ``k`` holds ``starts[k]`` and ``ends[k]``, and ``firsts[k] == starts[k][0]`` locates it.
    ``tail_ends`` is the last block's ends list (a fresh empty list while the ledger is empty) so the
    in-order ack can extend the last run without a look-up.

    ``pending`` holds single entries set out of order and not merged into the runs yet (setting one is
    O(1), as `BitSet.set` is): the set is the union of the runs and ``pending``. Every read but
    `contains` merges them first (`merge_pending`); updates commute with the union and need not. When a
    merge goes one by one (reads come every few acks, as when a cursor's `asyncDelete` calls carry few
    acks) the buffer saved nothing, and the next ``in_place`` acks skip it.
    """

    __slots__ = ("firsts", "starts", "ends", "tail_ends", "pending", "in_place")

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.starts: list[list[int]] = []
        self.ends: list[list[int]] = []
        self.tail_ends: list[int] = []
        self.pending: set[int] | frozenset[int] = _NO_PENDING  # a set from the first pending entry on
        self.in_place = 0  # single acks to set in place (`add_one`) before buffering in pending again

    def is_empty(self) -> bool:
        return not self.firsts and not self.pending

    def num_runs(self) -> int:
        if self.pending:
            self.merge_pending()
        return sum(map(len, self.starts))

    def first(self) -> int:
        """`nextSetBit(0)`: the lowest set entry, or -1."""
        if self.pending:
            self.merge_pending()
        return self.firsts[0] if self.firsts else -1

    def last(self) -> int:
        """`previousSetBit(size())`: the highest set entry, or -1."""
        if self.pending:
            self.merge_pending()
        return self.tail_ends[-1] if self.tail_ends else -1

    def last_run(self) -> tuple[int, int]:
        if self.pending:
            self.merge_pending()
        return self.starts[-1][-1], self.ends[-1][-1]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        if self.pending:
            self.merge_pending()
        for starts, ends in zip(self.starts, self.ends):
            yield from zip(starts, ends)

    def merge_pending(self) -> None:
        """Merge the pending entries into the runs: one by one when they are few beside the runs, else in one
        vectorised pass over all runs (O(runs + pending))."""
        pending = self.pending
        if not pending:
            return
        if len(pending) < _MERGE_ONE_BY_ONE_BASE + len(self.firsts) * (_BLOCK // 3):
            self.in_place = _IN_PLACE_AFTER_A_SMALL_MERGE  # buffering them saved nothing: skip it for a while
            self.pending = _NO_PENDING
            add_one = self.add_one
            for e in pending:
                add_one(e)
            return
        self.pending = _NO_PENDING
        self._merge_vectorised(pending)

    def _merge_vectorised(self, entries: set[int] | frozenset[int]) -> None:
        """Rebuild the runs from the current runs and ``entries`` in one numpy pass, in blocks of `_BLOCK` runs."""
        import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

        n = sum(map(len, self.starts))
        new = np.fromiter(entries, np.int64, len(entries))
        new.sort()
        old_starts = np.fromiter(chain.from_iterable(self.starts), np.int64, n)
        at = np.searchsorted(old_starts, new)
        starts = np.insert(old_starts, at, new)
        ends = np.insert(np.fromiter(chain.from_iterable(self.ends), np.int64, n), at, new)
        reach = np.maximum.accumulate(ends)  # the highest entry set by the runs so far
        opens = np.flatnonzero(starts[1:] > reach[:-1] + 1) + 1  # where a run starts clear of every earlier one
        run_starts = starts[np.concatenate(([0], opens))].tolist()
        run_ends = reach[np.concatenate((opens - 1, [len(reach) - 1]))].tolist()
        self.starts[:] = [run_starts[i : i + _BLOCK] for i in range(0, len(run_starts), _BLOCK)]
        self.ends[:] = [run_ends[i : i + _BLOCK] for i in range(0, len(run_ends), _BLOCK)]
        self.firsts[:] = [block[0] for block in self.starts]
        self.tail_ends = self.ends[-1]

    def set_range(self, a: int, b: int) -> None:
        """Set entries a..b (inclusive, 0 <= a <= b), merging with every run it overlaps or touches."""
        firsts, blocks_s, blocks_e = self.firsts, self.starts, self.ends
        if not firsts:
            firsts.append(a)
            blocks_s.append([a])
            blocks_e.append([b])
            self.tail_ends = blocks_e[0]
            return
        tail = self.tail_ends
        if a > tail[-1] + 1:
            blocks_s[-1].append(a)
            tail.append(b)
            if len(tail) > 2 * _BLOCK:
                self._split(len(blocks_s) - 1)
            return
        # runs of earlier blocks end before firsts[k] - 1 <= a - 2, so none of them touches [a, b]
        k = max(bisect_right(firsts, a - 1) - 1, 0)
        starts, ends = blocks_s[k], blocks_e[k]
        lo = bisect_left(ends, a - 1)
        if lo == len(ends):  # the first run ending at or after a-1 opens the next block
            k += 1
            starts, ends = blocks_s[k], blocks_e[k]
            lo = 0
        if starts[lo] > b + 1:
            starts.insert(lo, a)
            ends.insert(lo, b)
            if lo == 0:
                firsts[k] = a
            if len(starts) > 2 * _BLOCK:
                self._split(k)
            return
        new_start = a if a < starts[lo] else starts[lo]
        hi = bisect_right(starts, b + 1, lo)
        new_end = b if b > ends[hi - 1] else ends[hi - 1]
        if hi == len(starts):  # the merge may swallow runs of the following blocks
            j = k + 1
            while j < len(blocks_s) and blocks_s[j][0] <= b + 1:
                sj, ej = blocks_s[j], blocks_e[j]
                h = bisect_right(sj, b + 1)
                if ej[h - 1] > new_end:
                    new_end = ej[h - 1]
                if h == len(sj):
                    del firsts[j], blocks_s[j], blocks_e[j]
                    continue
                del sj[:h], ej[:h]
                firsts[j] = sj[0]
                break
        starts[lo] = new_start
        ends[lo] = new_end
        if hi - lo > 1:
            del starts[lo + 1 : hi], ends[lo + 1 : hi]
        if lo == 0:
            firsts[k] = new_start
        self.tail_ends = blocks_e[-1]

    def add_out_of_order(self, e: int) -> None:
        """Set one entry (e >= 0) that does not extend the last run: into ``pending``, or in place while
        ``in_place`` says buffering does not pay."""
        if self.in_place:
            self.in_place -= 1
            self.add_one(e)
        elif self.pending:
            self.pending.add(e)  # type: ignore[union-attr]
        else:
            self.pending = {e}

    def add_one(self, e: int) -> None:
        """Set one entry (e >= 0): `set_range(e, e)` with fewer steps, for merging a few pending entries."""
        firsts = self.firsts
        k = bisect_right(firsts, e) - 1
        if k < 0:
            if not firsts:
                self.set_range(e, e)
                return
            starts = self.starts[0]
            if starts[0] == e + 1:
                starts[0] = firsts[0] = e
            else:
                starts.insert(0, e)
                self.ends[0].insert(0, e)
                firsts[0] = e
                if len(starts) > 2 * _BLOCK:
                    self._split(0)
            return
        starts, ends = self.starts[k], self.ends[k]
        i = bisect_right(starts, e) - 1  # starts[i] <= e, as starts[0] == firsts[k] <= e
        end = ends[i]
        if end >= e:
            return
        if i + 1 < len(starts):
            touches_next = starts[i + 1] == e + 1
            in_block = True
        else:
            touches_next = k + 1 < len(firsts) and firsts[k + 1] == e + 1
            in_block = False
        if end == e - 1:
            if not touches_next:
                ends[i] = e
            elif in_block:
                ends[i] = ends[i + 1]
                del starts[i + 1], ends[i + 1]
            else:  # join the first run of the next block
                next_starts, next_ends = self.starts[k + 1], self.ends[k + 1]
                ends[i] = next_ends[0]
                if len(next_starts) == 1:
                    del firsts[k + 1], self.starts[k + 1], self.ends[k + 1]
                    self.tail_ends = self.ends[-1]
                else:
                    del next_starts[0], next_ends[0]
                    firsts[k + 1] = next_starts[0]
        elif touches_next:
            if in_block:
                starts[i + 1] = e
            else:
                self.starts[k + 1][0] = firsts[k + 1] = e
        else:
            starts.insert(i + 1, e)
            ends.insert(i + 1, e)
            if len(starts) > 2 * _BLOCK:
                self._split(k)

    def _split(self, k: int) -> None:
        starts, ends = self.starts[k], self.ends[k]
        half = len(starts) // 2
        self.starts.insert(k + 1, starts[half:])
        self.ends.insert(k + 1, ends[half:])
        del starts[half:], ends[half:]
        self.firsts.insert(k + 1, self.starts[k + 1][0])
        self.tail_ends = self.ends[-1]

    def clear_below(self, to_index: int) -> None:
        """Clear entries 0..to_index-1."""
        if self.pending:
            self.merge_pending()
        firsts, blocks_s, blocks_e = self.firsts, self.starts, self.ends
        gone = 0
        while gone < len(blocks_e) and blocks_e[gone][-1] < to_index:
            gone += 1
        if gone:
            del firsts[:gone], blocks_s[:gone], blocks_e[:gone]
        if firsts:
            starts, ends = blocks_s[0], blocks_e[0]
            cut = bisect_left(ends, to_index)
            if cut:
                del starts[:cut], ends[:cut]
            if starts[0] < to_index:
                starts[0] = to_index
            firsts[0] = starts[0]
            self.tail_ends = blocks_e[-1]
        else:
            self.tail_ends = []

    def keep_only_last(self) -> None:
        """`clear(0, previousSetBit(size()))`: clears every entry but the last one."""
        last = self.last()
        _check_bit_range(0, last)
        if last > 0:
            self.firsts, self.starts, self.ends = [last], [[last]], [[last]]
            self.tail_ends = self.ends[0]

    def run_at(self, entry: int) -> tuple[int, int] | None:
        """The run holding ``entry`` (>= 0), or None."""
        if self.pending:
            self.merge_pending()
        k = bisect_right(self.firsts, entry) - 1
        if k < 0:
            return None
        starts = self.starts[k]
        i = bisect_right(starts, entry) - 1
        end = self.ends[k][i]
        return (starts[i], end) if end >= entry else None

    def contains(self, entry: int) -> bool:
        if entry in self.pending:
            return True
        k = bisect_right(self.firsts, entry) - 1
        if k < 0:
            return False
        return self.ends[k][bisect_right(self.starts[k], entry) - 1] >= entry

    def count(self) -> int:
        if self.pending:
            self.merge_pending()
        return sum(sum(e) - sum(s) + len(s) for s, e in zip(self.starts, self.ends))

    def count_between(self, a: int, b: int) -> int:
        """How many set entries e with a <= e <= b."""
        if self.pending:
            self.merge_pending()
        if a > b or not self.firsts:
            return 0
        total = 0
        firsts = self.firsts
        for k in range(max(bisect_right(firsts, a) - 1, 0), bisect_right(firsts, b)):
            starts, ends = self.starts[k], self.ends[k]
            i = bisect_left(ends, a)
            j = bisect_right(starts, b, i)
            if i >= j:
                continue
            total += sum(ends[i:j]) - sum(starts[i:j]) + (j - i)
            if starts[i] < a:
                total -= a - starts[i]
            if ends[j - 1] > b:
                total -= ends[j - 1] - b
        return total

    def to_long_array(self) -> list[int]:
        """`BitSet.toLongArray()`: little-endian 64-bit words up to the last non-zero one, signed."""
        import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

        if self.pending:
            self.merge_pending()
        if not self.firsts:
            return []
        words = np.zeros(self.last() // 64 + 1, dtype=np.uint64)
        for a, b in self:
            first, last = a >> 6, b >> 6
            low = (_ALL_BITS << (a & 63)) & _ALL_BITS  # bits a%64.. of the first word
            high = _ALL_BITS >> (63 - (b & 63))  # bits ..b%64 of the last word
            if first == last:
                words[first] |= np.uint64(low & high)
            else:
                words[first] |= np.uint64(low)
                words[first + 1 : last] = np.uint64(_ALL_BITS)
                words[last] |= np.uint64(high)
        return words.view(np.int64).tolist()


class OpenLongPairRangeSet:
    """The individual-ack set of one cursor: open-closed ranges ``(L:a..L:b]`` per ledger ``L``.

    Every argument is a Java long; entry ids are Java ints inside (as in a `BitSet`). Methods keep the
    Java names in Python style; ``ack(ledger, entry)`` is the cursor's single-entry add
    ``add_open_closed(ledger, entry - 1, ledger, entry)`` with a shorter fast path.
    """

    __slots__ = ("_ledgers", "_keys", "_maybe_empty")

    def __init__(self) -> None:
        self._ledgers: dict[int, _Runs] = {}
        self._keys: list[int] = []  # ledger ids, ascending (the ConcurrentSkipListMap order)
        self._maybe_empty: set[int] = set()  # ledgers an add created without setting anything (checked when purged)

    # ------------------------------------------------------------------ updates

    def ack(self, ledger: int, entry: int) -> None:
        """Mark one entry deleted: what `ManagedCursorImpl` does for an individual ack of ``ledger:entry``."""
        runs = self._ledgers.get(ledger)
        if runs is not None and type(entry) is int and 0 <= entry < INT_MAX:
            ends = runs.tail_ends
            if ends and ends[-1] == entry - 1:
                ends[-1] = entry
            else:
                runs.add_out_of_order(entry)
            return
        _check_long("entry", entry)
        self.add_open_closed(ledger, entry - 1, ledger, entry)

    def add_open_closed(self, lower_key: int, lower_value_open: int, upper_key: int, upper_value: int) -> None:
        """`addOpenClosed`: add (lower_key:lower_value_open .. upper_key:upper_value] (golden README §6)."""
        if (
            lower_key == upper_key
            and type(upper_value) is int
            and type(lower_value_open) is int
            and -1 <= lower_value_open < upper_value < INT_MAX
        ):
            runs = self._ledgers.get(lower_key)
            if runs is not None:
                ends = runs.tail_ends
                if ends and ends[-1] == lower_value_open:
                    ends[-1] = upper_value
                elif upper_value == lower_value_open + 1:
                    runs.add_out_of_order(upper_value)
                else:
                    runs.set_range(lower_value_open + 1, upper_value)
                return
            if type(lower_key) is int and _LONG_MIN <= lower_key <= _LONG_MAX:
                self._new_ledger(lower_key).set_range(lower_value_open + 1, upper_value)
                return
        self._add_open_closed(lower_key, lower_value_open, upper_key, upper_value)

    def _add_open_closed(self, lower_key: int, lower_value_open: int, upper_key: int, upper_value: int) -> None:
        _check_long("lower_key", lower_key)
        _check_long("lower_value_open", lower_value_open)
        _check_long("upper_key", upper_key)
        _check_long("upper_value", upper_value)
        lower_value = _jlong(lower_value_open + 1)
        if lower_key != upper_key:
            if _is_valid(lower_key, lower_value):
                runs = self._ledgers.get(lower_key)
                # only an existing ledger whose last entry lies past the lower bound is extended, up to that entry
                if runs is not None and runs.last() > lower_value_open:
                    last = runs.last()
                    self._set(lower_key, runs, _jint(lower_value), _jint(_jint(max(last, lower_value)) + 1))
            if _is_valid(upper_key, upper_value):
                runs = self._ledger_for_update(upper_key)
                self._set(upper_key, runs, 0, _jint(_jint(upper_value) + 1))
        else:
            runs = self._ledger_for_update(lower_key)
            self._set(lower_key, runs, _jint(lower_value), _jint(_jint(upper_value) + 1))

    def _ledger_for_update(self, key: int) -> _Runs:
        """`computeIfAbsent(key, new BitSet)`."""
        runs = self._ledgers.get(key)
        if runs is None:
            runs = self._new_ledger(key)
            self._maybe_empty.add(key)
        return runs

    def _new_ledger(self, key: int) -> _Runs:
        runs = self._ledgers[key] = _Runs()
        keys = self._keys
        if not keys or key > keys[-1]:
            keys.append(key)
        else:
            insort(keys, key)
        return runs

    def _set(self, key: int, runs: _Runs, from_index: int, to_index: int) -> None:
        """`BitSet.set(from, to)` on one ledger."""
        _check_bit_range(from_index, to_index)
        if from_index < to_index:
            runs.set_range(from_index, to_index - 1)
            self._maybe_empty.discard(key)

    def remove_at_most(self, key: int, value: int) -> None:
        """`removeAtMost`: drop every ledger below ``key`` and entries 0..value of ``key``; drop empty ledgers."""
        if (
            type(key) is int
            and type(value) is int
            and EARLIEST <= key <= _LONG_MAX
            and EARLIEST <= value < INT_MAX
            and not self._maybe_empty
        ):
            keys = self._keys
            if keys and keys[0] < key:
                cut = bisect_left(keys, key)
                for k in keys[:cut]:
                    del self._ledgers[k]
                del keys[:cut]
            runs = self._ledgers.get(key)
            if runs is not None:
                if runs.pending:
                    runs.merge_pending()
                ends = runs.tail_ends
                if not ends or ends[-1] <= value:
                    self._drop(key)
                else:
                    runs.clear_below(value + 1)
            return
        _check_long("key", key)
        _check_long("value", value)
        keys, ledgers = self._keys, self._ledgers
        cut = bisect_left(keys, key)
        if cut:
            for k in keys[:cut]:
                del ledgers[k]
                self._maybe_empty.discard(k)
            del keys[:cut]
        runs = ledgers.get(key)
        if runs is not None:
            to_index = _jint(_jint(max(value, EARLIEST)) + 1)
            _check_bit_range(0, to_index)
            runs.clear_below(to_index)
            if runs.is_empty():
                self._drop(key)
        if key < EARLIEST and EARLIEST in ledgers:
            # Java treats ledger -1 as the range's lower endpoint (LongPair.earliest) and keeps its last entry
            ledgers[EARLIEST].keep_only_last()
        for k in sorted(self._maybe_empty):
            runs = ledgers.get(k)
            if runs is not None and runs.is_empty():
                self._drop(k)
        self._maybe_empty.clear()

    def _drop(self, key: int) -> None:
        del self._ledgers[key]
        del self._keys[bisect_left(self._keys, key)]
        self._maybe_empty.discard(key)

    def clear(self) -> None:
        """Forget every range."""
        self._ledgers.clear()
        self._keys.clear()
        self._maybe_empty.clear()

    # ------------------------------------------------------------------ queries

    def contains(self, key: int, value: int) -> bool:
        """Whether entry ``value`` of ledger ``key`` is in the set.

        Raises IndexOutOfBoundsException("bitIndex < 0: -1") for a negative entry of an existing ledger,
        as `BitSet.get` does in Java.
        """
        runs = self._ledgers.get(key)
        if runs is None:
            return False
        if type(value) is not int or not 0 <= value <= INT_MAX:
            _check_long("value", value)
            value = _jint(max(value, EARLIEST))
            if value < 0:
                raise IndexOutOfBoundsException(f"bitIndex < 0: {value}")
        k = bisect_right(runs.firsts, value) - 1  # runs.contains(value), inlined (asked once per acked entry)
        if k >= 0 and runs.ends[k][bisect_right(runs.starts[k], value) - 1] >= value:
            return True
        return value in runs.pending

    def __contains__(self, position: tuple[int, int]) -> bool:
        ledger, entry = position
        return self.contains(ledger, entry)

    def range_containing(self, key: int, value: int) -> RawRange | None:
        """`rangeContaining`: the CLOSED range ``[key:a, key:b]`` around the entry, or None."""
        if not self.contains(key, value):
            return None
        value = _jint(max(value, EARLIEST))
        a, b = self._ledgers[key].run_at(value)  # type: ignore[misc]
        return (key, a, key, b)

    def first_range(self) -> RawRange | None:
        """`firstRange`: the first run of the lowest ledger, open-closed."""
        if not self._keys:
            return None
        key = self._keys[0]
        runs = self._ledgers[key]
        if runs.pending:
            runs.merge_pending()
        if not runs.firsts:
            raise IndexOutOfBoundsException("fromIndex < 0: -1")  # nextClearBit(nextSetBit(0) = -1)
        return (key, runs.firsts[0] - 1, key, runs.ends[0][0])  # asked after every asyncDelete

    def last_range(self) -> RawRange | None:
        """`lastRange`: the last run of the highest ledger, open-closed."""
        if not self._keys:
            return None
        key = self._keys[-1]
        runs = self._ledgers[key]
        if runs.is_empty():
            return (key, -1, key, -1)
        a, b = runs.last_run()
        return (key, a - 1, key, b)

    def span(self) -> RawRange | None:
        """`span`: from the lowest ledger's first entry (open) to the highest ledger's last entry."""
        if not self._keys:
            return None
        first_key, last_key = self._keys[0], self._keys[-1]
        return (first_key, self._ledgers[first_key].first() - 1, last_key, self._ledgers[last_key].last())

    def size(self) -> int:
        """`size`: the number of ranges (``totalNonContiguousDeletedMessagesRange`` in stats)."""
        return sum(runs.num_runs() for runs in self._ledgers.values())

    def is_empty(self) -> bool:
        for runs in self._ledgers.values():
            if runs.firsts or runs.pending:
                return False
        return True

    def has_any_from(self, key: int, value: int) -> bool:
        """Whether an entry at or after ``key:value`` is in the set (a model helper: a cursor reading from there
        has nothing to filter when it is not)."""
        keys = self._keys
        ledgers = self._ledgers
        for i in range(bisect_left(keys, key), len(keys)):
            k = keys[i]
            runs = ledgers[k]
            if runs.pending:
                runs.merge_pending()
            tail = runs.tail_ends
            if tail and (k > key or tail[-1] >= value):
                return True
        return False

    def __bool__(self) -> bool:
        return not self.is_empty()

    def cardinality(self, lower_key: int, lower_value: int, upper_key: int, upper_value: int) -> int:
        """How many entries ``(lower_key:lower_value) <= e <= (upper_key:upper_value)``; the lower value is clamped at 0."""
        for name, v in (
            ("lower_key", lower_key),
            ("lower_value", lower_value),
            ("upper_key", upper_key),
            ("upper_value", upper_value),
        ):
            _check_long(name, v)
        if lower_key > upper_key:
            raise IllegalArgumentException("inconsistent range")  # ConcurrentSkipListMap.subMap
        keys = self._keys
        total = 0
        for i in range(bisect_left(keys, lower_key), bisect_right(keys, upper_key)):
            key = keys[i]
            runs = self._ledgers[key]
            if key != lower_key and key != upper_key:
                total += runs.count()
                continue
            low = 0
            if key == lower_key:
                low = _jint(max(0, lower_value))
                _check_bit_range(0, low)
            if key == upper_key:
                length = runs.last() + 1 if runs.last() >= low else 0  # temp.length() after the lower trim
                high = _jint(min(upper_value + 1, length))
                _check_bit_range(high, length)
                total += runs.count_between(low, high - 1)
            else:
                total += runs.count_between(low, INT_MAX)
        return _jint(total)

    def __iter__(self) -> Iterator[RawRange]:
        """The ranges in order as ``(ledger, a - 1, ledger, b)``: open-closed, one ledger each."""
        for key in self._keys:
            runs = self._ledgers[key]
            for a, b in runs:
                yield (key, a - 1, key, b)

    def to_ranges(self, max_ranges: int) -> dict[int, list[int]]:
        """`toRanges`: ledger -> `BitSet.toLongArray()` words, while the entries counted before a ledger <= max_ranges.

        Java counts set entries (bits), not ranges, despite the name.
        """
        _check_long("max_ranges", max_ranges)
        out: dict[int, list[int]] = {}
        counted = 0
        for key in self._keys:
            runs = self._ledgers[key]
            before, counted = counted, _jint(counted + runs.count())
            if before > max_ranges:
                continue
            out[key] = runs.to_long_array()
        return out

    def to_string(self, separator: str = ",") -> str:
        """Java's ``toString``: ``[(3:4..3:7],(4:-1..4:2]]``. The Guava fallback set uses ``", "``."""
        return "[" + separator.join(f"({k}:{a}..{k}:{b}]" for k, a, _, b in self) + "]"

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"OpenLongPairRangeSet({self.to_string()})"
