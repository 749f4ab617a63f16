"""The ``individuallyDeletedMessages`` string of stats-internal, read back into open-closed position ranges.

Models the text that ``ManagedCursorImpl.getIndividuallyDeletedMessages()`` prints (docs/guide/cursor.md#mark-delete):
``"[" + ranges + "]"``, each range Guava-style ``(L:a..L:b]`` = entries ``L:a+1 .. L:b`` acknowledged.
The default `OpenLongPairRangeSet` joins ranges with ``","`` and never spans ledgers (``(4:-1..4:2]``
for a run from entry 0); the Guava fallback (``managedLedgerUnackedRangesOpenCacheSetEnabled=false``)
joins with ``", "`` and may hold a range across ledgers. Both are accepted, with ``..`` or ``‥``
(U+2025, which some terminals and web UIs substitute) between the bounds and any whitespace or line
breaks between tokens (wrapped terminal lines). The same grammar, without the brackets' open-closed
meaning, serves PIP-282's ``individuallySentPositions``.

Reading is strict otherwise: a range must be non-empty, ranges must ascend without overlapping (both
set types print them so), and a string cut off or shortened with an ellipsis fails saying so.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

from pulsarlab.managed_ledger.position import Position
from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet

_WS = r"[\s\u00a0\ufeff]*"
_RANGE = re.compile(
    rf"{_WS}\({_WS}(-?\d+){_WS}:{_WS}(-?\d+){_WS}(?:\.\.|\u2025){_WS}(-?\d+){_WS}:{_WS}(-?\d+){_WS}\]{_WS}"
)
_SPACE = re.compile(_WS)
# The printed form (no spaces but the Guava separator's): checked whole in C, then read with findall.
_TIGHT = r"\((-?\d+):(-?\d+)(?:\.\.|\u2025)(-?\d+):(-?\d+)\]"
_TIGHT_ONE = re.compile(_TIGHT)
_TIGHT_ALL = re.compile(r"\[(?:{r}(?:, ?{r})*)?\]".format(r=_TIGHT.replace("(-?", "(?:-?")))


class RangeFormatError(ValueError):
    """The range string is malformed; ``offset`` is the 0-based character where reading stopped."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class AckRange(NamedTuple):
    """One range ``(lower..upper]``: every entry after ``lower`` up to and including ``upper`` is acknowledged.

    Four ints rather than two `Position` s, so that a cursor with a million ranges reads quickly; ``lower``
    and ``upper`` give the positions.
    """

    lower_ledger: int
    lower_entry: int  # open: this entry is not part of the range
    upper_ledger: int
    upper_entry: int  # closed

    @classmethod
    def of(cls, lower: Position, upper: Position) -> "AckRange":
        return cls(lower.ledger_id, lower.entry_id, upper.ledger_id, upper.entry_id)

    @property
    def lower(self) -> Position:
        return Position(self.lower_ledger, self.lower_entry)

    @property
    def upper(self) -> Position:
        return Position(self.upper_ledger, self.upper_entry)

    @property
    def single_ledger(self) -> bool:
        return self.lower_ledger == self.upper_ledger

    @property
    def first(self) -> Position:
        """The first acknowledged entry of a single-ledger range (``lower``'s next entry)."""
        return self.lower.next()

    def entry_count(self) -> int | None:
        """Entries in the range; None when it spans ledgers (their sizes are not in the string)."""
        return self.upper_entry - self.lower_entry if self.single_ledger else None

    def __str__(self) -> str:
        return f"({self.lower_ledger}:{self.lower_entry}..{self.upper_ledger}:{self.upper_entry}]"


def parse_ranges(text: str) -> list[AckRange]:
    """``"[(3:5..3:9],(4:-1..4:2]]"`` -> two `AckRange`; raises `RangeFormatError` naming the offset."""
    if not isinstance(text, str):
        raise RangeFormatError(f"expected a string, got {type(text).__name__}", 0)
    if _TIGHT_ALL.fullmatch(text):
        bounds = [tuple(map(int, m)) for m in _TIGHT_ONE.findall(text)]
        if all(a < c or (a == c and b < d) for a, b, c, d in bounds) and all(
            (p[2], p[3]) <= (q[0], q[1]) for p, q in zip(bounds, bounds[1:])
        ):
            return [AckRange(*b) for b in bounds]
    return _parse_slowly(text)


def _parse_slowly(text: str) -> list[AckRange]:
    """Token by token, for any spacing, and to say where a malformed string goes wrong."""
    i = _SPACE.match(text).end()
    if not text.startswith("[", i):
        raise RangeFormatError(f"expected '[' at character {i + 1}, found {_found(text, i)}", i)
    i = _SPACE.match(text, i + 1).end()
    ranges: list[AckRange] = []
    if text.startswith("]", i):
        return _check_end(text, i + 1, ranges)
    while True:
        m = _RANGE.match(text, i)
        if m is None:
            raise RangeFormatError(
                f"expected a range like (3:5..3:9] at character {i + 1}, found {_found(text, i)}{_hint(text, i)}", i
            )
        lower = Position(int(m.group(1)), int(m.group(2)))
        upper = Position(int(m.group(3)), int(m.group(4)))
        if not lower < upper:
            raise RangeFormatError(
                f"range ({lower}..{upper}] at character {i + 1} is empty: its lower bound must come first", i
            )
        if ranges and lower < ranges[-1].upper:
            raise RangeFormatError(
                f"range ({lower}..{upper}] at character {i + 1} overlaps or comes before {ranges[-1]}: "
                "ranges ascend in Pulsar's output",
                i,
            )
        ranges.append(AckRange.of(lower, upper))
        i = m.end()
        if text.startswith(",", i):
            i += 1
            continue
        if text.startswith("]", i):
            return _check_end(text, i + 1, ranges)
        raise RangeFormatError(f"expected ',' or ']' at character {i + 1}, found {_found(text, i)}{_hint(text, i)}", i)


def _check_end(text: str, i: int, ranges: list[AckRange]) -> list[AckRange]:
    i = _SPACE.match(text, i).end()
    if i != len(text):
        raise RangeFormatError(
            f"expected the end of the string after ']' at character {i + 1}, found {_found(text, i)}", i
        )
    return ranges


def _found(text: str, i: int) -> str:
    return "the end of the string" if i >= len(text) else repr(text[i : i + 16])


def _hint(text: str, i: int) -> str:
    if i >= len(text) or "]" not in text[i:]:
        return " (the string ends early: was the copy cut off?)"
    if text.startswith(("...", "\u2026"), i) or "\u2026" in text[i : i + 24]:
        return " (an ellipsis: the string looks shortened; paste the whole output)"
    return ""


def format_ranges(ranges: Iterable[AckRange], separator: str = ",") -> str:
    """The stats-internal string again; ``separator=", "`` gives the Guava fallback's form."""
    return "[" + separator.join(map(str, ranges)) + "]"


def ranges_to_set(ranges: Iterable[AckRange]) -> OpenLongPairRangeSet:
    """An `OpenLongPairRangeSet` holding the ranges (a cross-ledger range is added as Java's set adds it)."""
    out = OpenLongPairRangeSet()
    for r in ranges:
        out.add_open_closed(*r)
    return out


def ranges_from_set(range_set: OpenLongPairRangeSet) -> list[AckRange]:
    """The set's ranges as `AckRange` (one ledger each, as the open range set iterates them)."""
    return [AckRange(*r) for r in range_set]
