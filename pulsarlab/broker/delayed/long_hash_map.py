"""A long-keyed open-addressing hash map that places and iterates keys exactly as fastutil does.

Models fastutil's `Long2ObjectOpenHashMap` (and, with values ignored, `LongOpenHashSet`), which the
4.1 `InMemoryDelayedDeliveryTracker` uses for ledger -> entries within a time bucket (golden README
§7: a partial take follows this map's iteration order). The rules are fastutil's: slot
`(int) HashCommon.mix(key) & mask` with linear probing; key 0 lives apart and is iterated first;
iteration walks the table from the last slot down; the table (16 expected entries, load factor
0.75 -> 32 slots) doubles when an insert finds it at max fill, and halves on removal once it has grown
and holds under a quarter of its max fill; removal shifts later keys back (no tombstones).
Simplifies: no iterator-side removal (the tracker removes after iterating), no custom load factor.
"""

from __future__ import annotations

import math
from typing import Generic, Iterator, TypeVar

V = TypeVar("V")

_MASK64 = (1 << 64) - 1
_LONG_PHI = 0x9E3779B97F4A7C15
DEFAULT_INITIAL_SIZE = 16
DEFAULT_LOAD_FACTOR = 0.75


def mix(key: int) -> int:
    """``HashCommon.mix(long)`` as an unsigned 64-bit value (golden-ratio multiply, two xorshifts)."""
    h = (key * _LONG_PHI) & _MASK64
    h ^= h >> 32
    return h ^ (h >> 16)


def array_size(expected: int, load_factor: float = DEFAULT_LOAD_FACTOR) -> int:
    """``HashCommon.arraySize``: the power-of-two table size for ``expected`` entries."""
    needed = math.ceil(expected / load_factor)
    return max(2, 1 << (needed - 1).bit_length()) if needed > 1 else 2


def max_fill(n: int, load_factor: float = DEFAULT_LOAD_FACTOR) -> int:
    """``HashCommon.maxFill``: how many entries a table of ``n`` slots takes before growing."""
    return min(math.ceil(n * load_factor), n - 1)


class LongOpenHashMap(Generic[V]):
    """``Long2ObjectOpenHashMap<V>`` with fastutil's slot layout and iteration order."""

    __slots__ = ("_n", "_mask", "_max_fill", "_min_n", "_keys", "_values", "_size", "_has_zero", "_zero_value")

    def __init__(self, expected: int = DEFAULT_INITIAL_SIZE) -> None:
        if expected < 0:
            raise ValueError("The expected number of elements must be nonnegative")
        self._n = self._min_n = array_size(expected)
        self._mask = self._n - 1
        self._max_fill = max_fill(self._n)
        self._keys: list[int | None] = [None] * self._n
        self._values: list[V | None] = [None] * self._n
        self._size = 0  # including key 0
        self._has_zero = False
        self._zero_value: V | None = None

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self._find(key) >= 0

    def get(self, key: int, default: V | None = None) -> V | None:
        pos = self._find(key)
        if pos < 0:
            return default
        return self._zero_value if pos == self._n else self._values[pos]

    def __getitem__(self, key: int) -> V:
        pos = self._find(key)
        if pos < 0:
            raise KeyError(key)
        return self._zero_value if pos == self._n else self._values[pos]  # type: ignore[return-value]

    def put(self, key: int, value: V) -> V | None:
        """Insert or replace; returns the previous value (None if the key was new)."""
        pos = self._find(key)
        if pos >= 0:
            if pos == self._n:
                old, self._zero_value = self._zero_value, value
            else:
                old, self._values[pos] = self._values[pos], value
            return old
        self._insert(-pos - 1, key, value)
        return None

    __setitem__ = put

    def setdefault(self, key: int, default: V) -> V:
        """``computeIfAbsent``: the value for ``key``, inserting ``default`` if absent."""
        pos = self._find(key)
        if pos >= 0:
            return self._zero_value if pos == self._n else self._values[pos]  # type: ignore[return-value]
        self._insert(-pos - 1, key, default)
        return default

    def remove(self, key: int) -> V | None:
        """Remove ``key``; returns its value, or None if it was absent."""
        pos = self._find(key)
        if pos < 0:
            return None
        if pos == self._n:
            old, self._zero_value, self._has_zero = self._zero_value, None, False
            self._size -= 1
        else:
            old = self._values[pos]
            self._size -= 1
            self._shift_keys(pos)
        if self._n > self._min_n and self._size < self._max_fill // 4 and self._n > DEFAULT_INITIAL_SIZE:
            self._rehash(self._n // 2)
        return old

    def clear(self) -> None:
        """Empty the map; like fastutil, the table keeps its size."""
        if self._size:
            self._size = 0
            self._has_zero = False
            self._zero_value = None
            self._keys = [None] * self._n
            self._values = [None] * self._n

    def keys(self) -> Iterator[int]:
        """Keys in fastutil's iteration order."""
        for pos in self._positions():
            yield 0 if pos == self._n else self._keys[pos]  # type: ignore[misc]

    __iter__ = keys

    def items(self) -> Iterator[tuple[int, V]]:
        """``(key, value)`` in fastutil's iteration order (``long2ObjectEntrySet()``)."""
        for pos in self._positions():
            if pos == self._n:
                yield 0, self._zero_value  # type: ignore[misc]
            else:
                yield self._keys[pos], self._values[pos]  # type: ignore[misc]

    def values(self) -> Iterator[V]:
        for _, value in self.items():
            yield value

    @property
    def capacity(self) -> int:
        """The table size ``n`` (a power of two)."""
        return self._n

    def __repr__(self) -> str:
        return f"LongOpenHashMap({dict(self.items())!r})"

    # --- fastutil's internals -----------------------------------------------------------------

    def _slot(self, key: int) -> int:
        return mix(key) & self._mask

    def _find(self, key: int) -> int:
        """Position of ``key`` (``n`` for key 0), or ``-(insertion point) - 1`` if absent."""
        if key == 0:
            return self._n if self._has_zero else -(self._n + 1)
        keys = self._keys
        pos = self._slot(key)
        while True:
            current = keys[pos]
            if current is None:
                return -(pos + 1)
            if current == key:
                return pos
            pos = (pos + 1) & self._mask

    def _insert(self, pos: int, key: int, value: V) -> None:
        if pos == self._n:
            self._has_zero = True
            self._zero_value = value
        else:
            self._keys[pos] = key
            self._values[pos] = value
        size_before = self._size
        self._size += 1
        if size_before >= self._max_fill:
            self._rehash(array_size(self._size + 1))

    def _shift_keys(self, pos: int) -> None:
        keys, values, mask = self._keys, self._values, self._mask
        while True:
            last = pos
            pos = (pos + 1) & mask
            while True:
                current = keys[pos]
                if current is None:
                    keys[last] = None
                    values[last] = None
                    return
                slot = mix(current) & mask
                if (last >= slot or slot > pos) if last <= pos else (last >= slot and slot > pos):
                    break
                pos = (pos + 1) & mask
            keys[last] = current
            values[last] = values[pos]

    def _rehash(self, new_n: int) -> None:
        mask = new_n - 1
        new_keys: list[int | None] = [None] * new_n
        new_values: list[V | None] = [None] * new_n
        # fastutil moves the non-zero keys from the highest old slot down
        for i in range(self._n - 1, -1, -1):
            key = self._keys[i]
            if key is None:
                continue
            pos = mix(key) & mask
            while new_keys[pos] is not None:
                pos = (pos + 1) & mask
            new_keys[pos] = key
            new_values[pos] = self._values[i]
        self._n, self._mask, self._max_fill = new_n, mask, max_fill(new_n)
        self._keys, self._values = new_keys, new_values

    def _positions(self) -> Iterator[int]:
        if self._has_zero:
            yield self._n
        keys = self._keys
        for pos in range(self._n - 1, -1, -1):
            if keys[pos] is not None:
                yield pos


class LongOpenHashSet:
    """``LongOpenHashSet``: the same layout and iteration order, without values."""

    __slots__ = ("_map",)

    def __init__(self, expected: int = DEFAULT_INITIAL_SIZE) -> None:
        self._map: LongOpenHashMap[bool] = LongOpenHashMap(expected)

    def add(self, key: int) -> bool:
        return self._map.put(key, True) is None

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[int]:
        return self._map.keys()
