"""Typed reading of one JSON object of pulsar-admin output, with Jackson's leniency and errors naming the path.

Models how Jackson binds the stats classes of `TopicStatsImpl` / `PersistentTopicInternalStats` (`TopicStatsImpl`,
`SubscriptionStatsImpl`,
`ConsumerStatsImpl`, `PersistentTopicInternalStats`, ...): a missing or ``null`` field takes the Java
default (0, false, null), an integral float fills an int field (Jackson's ``ACCEPT_FLOAT_AS_INT``), a
double field takes ``"NaN"`` / ``"Infinity"`` strings as Jackson writes them when quoting non-numeric
numbers. A present field of the wrong type fails with `StatsFormatError` naming the JSON path, e.g.
``cursors["my-sub"].markDeletePosition: expected "ledger:entry", got 42``. Fields the reader does not
ask for stay in ``extra()``, so newer brokers' fields are kept, not lost.

Simplifies: Jackson also coerces strings such as ``"42"`` into numbers; pulsar-admin never writes them,
so they are reported instead.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterator, TypeVar

from pulsarlab.importers.lenient_json import JsonSource, PathStep, StatsFormatError
from pulsarlab.managed_ledger.position import Position

T = TypeVar("T")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_NON_NUMERIC = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def describe(value: Any) -> str:
    """A short JSON-ish rendering of a found value for error messages."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 48 else text[:45] + "..."


class Fields:
    """One JSON object being read field by field; remembers which keys were read."""

    def __init__(self, value: Any, source: JsonSource, steps: tuple[PathStep, ...] = ()) -> None:
        if not isinstance(value, dict):
            raise source.error(f"expected an object, got {describe(value)}", steps)
        self._obj = value
        self.source = source
        self.steps = steps
        self._read: set[str] = set()

    # --------------------------------------------------------------------- plumbing

    def present(self) -> frozenset[str]:
        """The keys the JSON carried with a non-null value (tells Pulsar lines apart)."""
        return frozenset(k for k, v in self._obj.items() if v is not None)

    def has(self, name: str) -> bool:
        return self._obj.get(name) is not None

    def raw(self, name: str) -> Any:
        self._read.add(name)
        return self._obj.get(name)

    def at(self, name: str) -> tuple[PathStep, ...]:
        return self.steps + (("field", name),)

    def fail(self, name: str, expected: str, got: Any) -> StatsFormatError:
        return self.source.error(f"expected {expected}, got {describe(got)}", self.at(name))

    def extra(self) -> dict[str, Any]:
        """The fields nobody read: kept as they came."""
        return {k: v for k, v in self._obj.items() if k not in self._read}

    # --------------------------------------------------------------------- scalars

    def int(self, name: str, default: int = 0) -> int:
        v = self.raw(name)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(name, "an integer", v)
        if isinstance(v, float):
            if not v.is_integer():
                raise self.fail(name, "an integer", v)
            v = int(v)
        if not _LONG_MIN <= v <= _LONG_MAX:
            raise self.fail(name, "an integer that fits a Java long", v)
        return v

    def float(self, name: str, default: float = 0.0) -> float:
        v = self.raw(name)
        if v is None:
            return default
        if isinstance(v, str) and v in _NON_NUMERIC:
            return _NON_NUMERIC[v]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(name, "a number", v)
        return float(v)

    def bool(self, name: str, default: bool = False) -> bool:
        v = self.raw(name)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.fail(name, "true or false", v)
        return v

    def str(self, name: str, default: str | None = None) -> str | None:
        v = self.raw(name)
        if v is None:
            return default
        if not isinstance(v, str):
            raise self.fail(name, "a string", v)
        return v

    def position(self, name: str) -> Position | None:
        v = self.raw(name)
        if v is None:
            return None
        pos = parse_position(v)
        if pos is None:
            raise self.fail(name, '"ledger:entry"', v)
        return pos

    def choice(self, name: str, parse: Callable[[str], T], allowed: list[str]) -> T | None:
        """A string that must be one of ``allowed`` (an enum's JSON names), parsed with ``parse``."""
        v = self.raw(name)
        if v is None:
            return None
        if not isinstance(v, str) or v not in allowed:
            raise self.fail(name, "one of " + ", ".join(json.dumps(a) for a in allowed), v)
        return parse(v)

    # --------------------------------------------------------------------- containers

    def obj(self, name: str) -> "Fields | None":
        v = self.raw(name)
        return None if v is None else Fields(v, self.source, self.at(name))

    def entries(self, name: str) -> Iterator[tuple[str, Any, tuple[PathStep, ...]]]:
        """(key, value, path) of an object-valued field (a map such as ``cursors``); nothing when absent."""
        v = self.raw(name)
        if v is None:
            return
        if not isinstance(v, dict):
            raise self.fail(name, "an object", v)
        for key, item in v.items():
            yield key, item, self.at(name) + (("key", key),)

    def items(self, name: str) -> Iterator[tuple[Any, tuple[PathStep, ...]]]:
        """(value, path) of a list-valued field; nothing when absent."""
        v = self.raw(name)
        if v is None:
            return
        if not isinstance(v, list):
            raise self.fail(name, "a list", v)
        for i, item in enumerate(v):
            yield item, self.at(name) + (("index", i),)

    def str_map(self, name: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, item, steps in self.entries(name):
            if not isinstance(item, str):
                raise self.source.error(f"expected a string, got {describe(item)}", steps)
            out[key] = item
        return out

    def int_map(self, name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for key, item, steps in self.entries(name):
            if isinstance(item, bool) or not isinstance(item, int):
                raise self.source.error(f"expected an integer, got {describe(item)}", steps)
            out[key] = item
        return out


def parse_position(value: Any) -> Position | None:
    """``"3:4"`` -> Position(3, 4); None when ``value`` is not such a string (whitespace is ignored)."""
    if not isinstance(value, str):
        return None
    parts = "".join(value.split()).split(":")
    if len(parts) != 2:
        return None
    try:
        ledger, entry = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    if not (_LONG_MIN <= ledger <= _LONG_MAX and _LONG_MIN <= entry <= _LONG_MAX):
        return None
    return Position(ledger, entry)
